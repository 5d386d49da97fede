"""How the project drives Debian's Chromium (browser tests and the screenshots command).

Playwright's own browser download is not available here, so both use /usr/bin/chromium with the
flags it needs to run headless as root on a machine with no outside network.
"""

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
