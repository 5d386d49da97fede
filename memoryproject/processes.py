"""Whether a process exists, by its pid (shared by `serve`'s record of itself and the web workers' table)."""

import os


def process_exists(pid: int) -> bool:
    """True when a process with `pid` exists, whether or not this user may signal it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
