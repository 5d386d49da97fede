"""A project's settings pages: its context, API tokens, review policies, retention and redaction."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from memoryproject.errors import DomainError
from vault import selectors, services
from vault.forms import (
    ProjectContextForm,
    ReviewPolicyForm,
    TokenCreateForm,
)
from vault.models import Category
from vault.views.access import UNPROCESSABLE, actor, curator_required, form_errors, is_htmx


def _settings_page(
    request, project, *, context_form=None, token_form=None, new_secret=None, newer=None, status=200
):
    return render(
        request,
        "vault/project_settings.html",
        {
            "project": project,
            "context_form": context_form or ProjectContextForm.for_project(project),
            "newer_context": newer,
            "context_versions": selectors.project_context_history(project),
            "token_form": token_form or TokenCreateForm(project=project),
            "tokens": selectors.token_list_for_project(project),
            "new_secret": new_secret,
        },
        status=status,
    )


@curator_required
def project_settings(request, project):
    project = selectors.project_get_for_user(request.user, project)
    return _settings_page(request, project)


@curator_required
@require_POST
def project_context_update(request, project):
    project = selectors.project_get_for_user(request.user, project)
    form = ProjectContextForm(request.POST)
    newer = None
    if form.is_valid():
        try:
            services.project_context_set(
                project=project,
                content=form.cleaned_data["content"],
                changed_by=actor(request),
                seen_changed_at=form.cleaned_data["seen_changed_at"],
            )
        except DomainError as exc:
            if exc.errors and exc.errors[0].get("loc") == ["seen_changed_at"]:
                project = newer = selectors.project_get_for_user(request.user, project.slug)
                form = ProjectContextForm.for_project(project, request.POST)
                form.add_error(None, exc.detail)
            else:
                form_errors(form, exc)
        else:
            messages.success(request, "Project context saved; the previous text is kept as a version.")
            return redirect("vault-project-settings", project.slug)
    return _settings_page(request, project, context_form=form, newer=newer, status=UNPROCESSABLE)


@curator_required
@require_POST
def token_create(request, project):
    project = selectors.project_get_for_user(request.user, project)
    form = TokenCreateForm(request.POST, project=project)
    if form.is_valid():
        try:
            token, secret = services.token_create(
                project=project,
                agent=form.cleaned_data["agent"],
                scope=form.cleaned_data["scope"],
                name=form.cleaned_data["name"],
            )
        except DomainError as exc:
            form_errors(form, exc)
        else:
            # The secret is shown on this response only: it is not stored, not redirected with, and not
            # kept by a browser's or a proxy's cache.
            response = _settings_page(
                request, project, new_secret={"token": token, "secret": secret}, status=201
            )
            add_never_cache_headers(response)
            return response
    return _settings_page(request, project, token_form=form, status=UNPROCESSABLE)


@curator_required
@require_http_methods(["GET", "POST"])
def token_revoke(request, project, token_id):
    """GET asks first (agents using the token are cut off at once), as deleting an entry does."""
    project = selectors.project_get_for_user(request.user, project)
    token = selectors.token_get_for_user(request.user, project, token_id)
    if request.method == "GET":
        context = {"project": project, "token": token}
        template = (
            "vault/project_settings.html#token-revoke-confirm"
            if is_htmx(request)
            else "vault/token_revoke.html"
        )
        return render(request, template, context)
    services.token_revoke(token=token)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("vault-project-settings", project.slug)


@curator_required
@require_http_methods(["GET", "POST"])
def project_policies(request, project):
    project = selectors.project_get_for_user(request.user, project)
    status = 200
    if request.method == "POST":
        form = ReviewPolicyForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Unknown category or setting.")
            status = UNPROCESSABLE
        elif form.cleaned_data["redaction"]:
            services.project_redaction_set(project=project, enabled=form.cleaned_data["redaction"] == "1")
            messages.success(request, "Redaction " + ("on." if project.redaction_enabled else "off."))
            return redirect("vault-project-policies", project.slug)
        else:
            data = form.cleaned_data
            try:
                services.review_policy_set(
                    project=project,
                    category=data["category"],
                    hold_agent_writes=data["hold_agent_writes"],
                    hold_extracted=data["hold_extracted"],
                )
            except DomainError as exc:
                messages.error(request, exc.detail)
                status = UNPROCESSABLE
            else:
                messages.success(request, "Review policy saved.")
                return redirect("vault-project-policies", project.slug)
    policies = selectors.review_policies_for_project(project)
    rows = [
        {"category": value, "label": label, "policy": policies.get(value)}
        for value, label in [("", "All categories (default)"), *Category.choices]
    ]
    return render(
        request,
        "vault/policies.html",
        {
            "project": project,
            "rows": rows,
            "retention_enabled": settings.MEMORY_RETENTION_ENABLED,
            "retention_days": settings.MEMORY_RETENTION_DAYS,
            "redaction_patterns": settings.MEMORY_REDACTION_PATTERNS,
            "redaction_extra": settings.MEMORY_REDACTION_EXTRA_REGEX,
        },
        status=status,
    )
