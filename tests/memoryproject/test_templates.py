"""Template hygiene that Django does not check itself."""

import re
from pathlib import Path

from django.conf import settings

TEMPLATE_DIRS = [Path(d) for d in settings.TEMPLATES[0]["DIRS"]]


def test_no_template_comment_spans_lines():
    """Django's `{# ... #}` comment is one line only: a comment that runs over a line break is printed as
    text. One did, in base.html's head, and put it at the top of every curator page (and moved what
    followed it out of the head)."""
    opened = []
    for directory in TEMPLATE_DIRS:
        for path in sorted(directory.rglob("*.html")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\{#(?!.*#\})", line):
                    opened.append(f"{path.relative_to(directory)}:{number}")
    assert TEMPLATE_DIRS and not opened, opened
