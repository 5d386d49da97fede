#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    if sys.argv[1:2] == ["mcp"]:
        # The stdio MCP server's stdout carries protocol messages only: divert it before Django starts.
        from memoryproject.mcp.stdio import stdout_divert

        stdout_divert()
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    try:
        _ = settings.INSTALLED_APPS  # loads the settings, which read and check the environment
    except ImproperlyConfigured as exc:
        # A bad variable is one line naming it, not the settings import's traceback.
        sys.exit(f"Configuration error: {exc}")
    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting found bad only when a command used it: the same one line.
        sys.exit(f"Configuration error: {exc}")
    except DatabaseError as exc:
        from memoryproject.unmigrated import unmigrated_message, unreachable_message

        # A database that cannot be reached (DATABASE_URL naming a server that is down, a database
        # that does not exist) is one line naming DATABASE_URL, as `serve` says it, not psycopg's traceback.
        message = unreachable_message(exc)
        if message is None and sys.argv[1:2] != ["migrate"]:
            message = unmigrated_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"CommandError: {message}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
