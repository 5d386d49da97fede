from django import template
from django.middleware.csrf import get_token
from django.urls import reverse

from vault.render import markdown_with_tasks
from vault.text import text_clip

register = template.Library()


@register.simple_tag(takes_context=True)
def entry_content(context, entry):
    """The entry's markdown, sanitised; task checkboxes can be ticked on task entries."""
    request = context.get("request")
    tickable = request is not None and entry.pk is not None
    return markdown_with_tasks(
        entry.content,
        toggle_url=reverse("vault-entry-task-toggle", args=[entry.pk]) if tickable else None,
        csrf_token=get_token(request) if tickable else None,
    )


@register.simple_tag(takes_context=True)
def query_with(context, **changes):
    """The current query string with some parameters replaced (None or '' removes them)."""
    query = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            query.pop(key, None)
        else:
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def detail_lines(value):
    """A maintenance run change's detail as the run page lists it, one item a line: a list's items (ids
    merged, archived...), a text's lines (facts, removals); None for a single value, shown as it is."""
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    if isinstance(value, str):
        return value.splitlines()
    return None


@register.filter
def clip(value, max_chars):
    """A preview of text in at most `max_chars` characters, ending in … when cut (vault.text.text_clip):
    Django's truncatechars cuts by code points, an emoji's or an accent's second half lost."""
    return text_clip(str(value), int(max_chars), flatten=False)
