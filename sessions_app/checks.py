"""System checks, run by `check`, `serve` and every other command before it starts."""

from django.conf import settings
from django.core.checks import Error, register
from django.utils.module_loading import import_string


@register()
def summariser_check(app_configs, **kwargs) -> list[Error]:
    """MEMORY_COMPACT_SUMMARISER names a callable that can be imported. A check rather than a test in
    settings.py: the dotted path may import models, which cannot load while settings do."""
    path = settings.MEMORY_COMPACT_SUMMARISER
    try:
        summariser = import_string(path)
    except Exception as exc:  # ImportError, or whatever the module raises while it loads
        return [
            Error(f"MEMORY_COMPACT_SUMMARISER {path!r} cannot be imported: {exc}", id="sessions_app.E001")
        ]
    if not callable(summariser):
        return [Error(f"MEMORY_COMPACT_SUMMARISER {path!r} is not callable", id="sessions_app.E002")]
    return []
