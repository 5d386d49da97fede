"""An agent's workspace files page: edit, preview, history, settings."""

from urllib.parse import quote

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST

from memoryproject.errors import DomainError
from vault import selectors, services
from vault.forms import (
    FileForm,
    FileSettingsForm,
)
from vault.render import markdown_html, version_diffs
from vault.views.access import UNPROCESSABLE, actor, curator_required

PREVIEW_MAX_CHARS = 200_000


def file_page_url(project_slug: str, agent_slug: str, path: str) -> str:
    """The file's page; its path encoded as the templates' |urlencode does: a path may hold &, # or +."""
    return reverse("vault-file", args=[project_slug, agent_slug]) + "?path=" + quote(path, safe="/")


def _file_context(agent, file, form=None):
    versions = list(selectors.file_history(file)[:20]) if file else []
    total = selectors.file_history(file).count() if len(versions) == 20 else len(versions)
    history = version_diffs(file, versions, total=total)
    return {
        "agent": agent,
        "project": agent.project,
        "files": selectors.files_list(agent=agent),
        "file": file,
        "form": form or (FileForm.for_file(file) if file else None),
        "preview": mark_safe(markdown_html(file.content)) if file else "",  # noqa: S308 - sanitised by nh3
        "history": history,
    }


@curator_required
@require_http_methods(["GET", "POST"])
def files(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    services.daily_notes_flush(agent=agent)
    path = request.GET.get("path") or request.POST.get("path") or ""
    file = selectors.file_get(agent=agent, path=path) if path else None
    if request.method == "POST":
        newer = None
        form = FileForm(request.POST)
        if form.is_valid():
            try:
                services.file_write(
                    agent=agent,
                    path=path,
                    content=form.cleaned_data["content"],
                    changed_by=actor(request),
                    seen_updated_at=form.cleaned_data["seen_updated_at"],
                )
            except DomainError as exc:
                if exc.errors and exc.errors[0].get("loc") == ["seen_updated_at"]:
                    file = selectors.file_get(agent=agent, path=path)
                    form = FileForm.for_file(file, request.POST)
                    newer = file
                form.add_error(None, exc.detail)
            else:
                messages.success(request, f"{path} saved; the previous text is in the history.")
                return redirect(file_page_url(agent.project.slug, agent.slug, path))
        context = {**_file_context(agent, file, form), "newer": newer}
        return render(request, "vault/files.html", context, status=UNPROCESSABLE)
    return render(request, "vault/files.html", _file_context(agent, file))


@curator_required
@require_POST
def file_preview(request, project, agent):
    selectors.agent_get_for_user(request.user, project, agent)
    content = request.POST.get("content", "")[:PREVIEW_MAX_CHARS]
    preview = mark_safe(markdown_html(content))  # noqa: S308 - sanitised by nh3
    return render(request, "vault/files.html#preview", {"preview": preview})


SETTINGS_STALE_LOCS = (["seen_enabled"], ["seen_sort_order"])


@curator_required
@require_POST
def file_settings(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    path = request.POST.get("path", "")
    selectors.file_get(agent=agent, path=path)
    back_to_file = request.POST.get("back") == "file"
    form = FileSettingsForm(request.POST)
    if form.is_valid():
        try:
            services.file_settings_set(
                agent=agent,
                path=path,
                enabled=form.cleaned_data["enabled"],
                sort_order=form.cleaned_data["sort_order"],
                seen_enabled=form.cleaned_data["seen_enabled"],
                seen_sort_order=form.cleaned_data["seen_sort_order"],
            )
        except DomainError as exc:
            if exc.errors and exc.errors[0].get("loc") in SETTINGS_STALE_LOCS:
                # As the other forms do: the page again, the file's settings as they are now and the
                # curator's change in its form, with a note; nothing was saved.
                file = selectors.file_get(agent=agent, path=path)
                stale = {"path": path, "note": exc.detail, **FileSettingsForm.over_newer(request.POST, file)}
                context = {**_file_context(agent, file if back_to_file else None), "stale_settings": stale}
                return render(request, "vault/files.html", context, status=UNPROCESSABLE)
            messages.error(request, exc.detail)
        else:
            messages.success(request, f"{path}: settings saved.")
    else:
        field = FileSettingsForm.base_fields["sort_order"]
        messages.error(
            request,
            f"{path}: not saved: the sort order must be a whole number from {field.min_value} to "
            f"{field.max_value}.",
        )
    if back_to_file:
        return redirect(file_page_url(agent.project.slug, agent.slug, path))
    return redirect("vault-file", agent.project.slug, agent.slug)
