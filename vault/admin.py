"""Admin for raw edits. Entry edits go through vault.services so they are versioned like API edits."""

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html

from memoryproject.errors import DomainError
from vault import services
from vault.models import (
    Agent,
    ApiToken,
    EntryVersion,
    Project,
    ProjectContextVersion,
    ProjectMembership,
    VaultEntry,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.text import tags_normalise, text_check, text_clip

# The app list beside every page took a third of a laptop screen from the entry list; the
# breadcrumbs and the index page lead to the same places.
admin.site.enable_nav_sidebar = False


def _actor(request) -> str:
    return f"user:{request.user.get_username()}"


class SlugCheckedForm(forms.ModelForm):
    """Runs the services' slug rules, so a curator cannot create an agent or project the API refuses."""

    slug_field_name = "agent"

    def clean_slug(self):
        try:
            return services.slug_check(self.cleaned_data["slug"], field=self.slug_field_name)
        except DomainError as exc:
            raise forms.ValidationError(exc.detail) from None


class ProjectForm(SlugCheckedForm):
    """Carries the context's `context_changed_at` as it was when the form was opened: a save that
    changes the context (or sends back a text changed since, as a form opened before the orchestrator's
    PUT does) is a form error showing the current text, and the form is then based on it, so that
    saving again replaces it knowingly."""

    slug_field_name = "project"
    seen_changed_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["seen_changed_at"] = self.instance.context_changed_at.isoformat()

    def clean(self):
        cleaned = super().clean()
        seen = cleaned.get("seen_changed_at")
        current = self.instance.context_changed_at if self.instance.pk is not None else None
        if "context" in self.changed_data and seen is not None and current != seen:
            self.data = self.data.copy()
            self.data["seen_changed_at"] = current.isoformat()
            raise forms.ValidationError(
                "The context was changed since this form was opened; saving would overwrite that "
                f"change. Its current text: {text_clip(self.instance.context, 1000, flatten=False)!r}. Save again "
                "to replace it with yours."
            )
        return cleaned


class AgentInline(admin.TabularInline):
    model = Agent
    form = SlugCheckedForm
    extra = 0
    fields = ["slug", "name", "created_at"]
    readonly_fields = ["created_at"]
    show_change_link = True


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ["slug", "name", "created_at", "context_updated_at"]
    search_fields = ["slug", "name", "context"]
    readonly_fields = ["created_at", "context_updated_at"]
    inlines = [AgentInline]

    def save_model(self, request, obj, form, change):
        if change and "context" in form.changed_data:
            context = obj.context
            obj.context = form.initial.get("context", "")
            super().save_model(request, obj, form, change)
            services.project_context_set(
                project=obj,
                content=context,
                changed_by=_actor(request),
                seen_changed_at=form.cleaned_data.get("seen_changed_at"),
            )
            obj.refresh_from_db()
        else:
            super().save_model(request, obj, form, change)


@admin.register(ProjectContextVersion)
class ProjectContextVersionAdmin(admin.ModelAdmin):
    list_display = ["project", "changed_by", "changed_at"]
    list_filter = ["project"]
    search_fields = ["content"]
    readonly_fields = ["project", "content", "changed_by", "changed_at"]

    def has_add_permission(self, request):
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = SlugCheckedForm
    list_display = ["slug", "name", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["slug", "name"]


class ApiTokenForm(forms.ModelForm):
    """Runs the services' token rules on a new token, so that one they refuse (an agent-bound admin
    token, an agent of another project) is a form error, not a save that made nothing; and on an edited
    token's name (no control characters), the one field a change can edit."""

    class Meta:
        model = ApiToken
        fields = ["project", "agent", "scope", "name"]

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is not None:  # a change: only the name can be edited, checked as a new one's
            fields = {
                "project": self.instance.project,
                "agent": self.instance.agent,
                "scope": self.instance.scope,
            }
        elif cleaned.get("project") is not None and cleaned.get("scope"):
            fields = {"project": cleaned["project"], "agent": cleaned.get("agent"), "scope": cleaned["scope"]}
        else:
            return cleaned
        try:
            services.token_check(**fields, name=cleaned.get("name") or "")
        except DomainError as exc:
            raise forms.ValidationError(exc.detail) from None
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["prefix", "name", "project", "agent", "scope", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["project", "scope"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["project", "agent", "scope", "name"]
        return ["project", "agent", "scope", "name", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["project", "agent", "scope", "prefix", "created_at", "last_used_at"]

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        token, secret = services.token_create(
            project=obj.project, agent=obj.agent, scope=obj.scope, name=obj.name
        )
        obj.pk = token.pk
        obj.refresh_from_db()
        # For response_add, on this request's object only. It was shown with a message, which Django's
        # message storage keeps in a signed (not encrypted) cookie or the session: the secret sat in
        # the browser's cookie jar and went back in the next request's Cookie header.
        obj.new_secret = secret

    def response_add(self, request, obj, post_url_continue=None):
        """The new token's secret, shown once on the response to the POST itself (not redirected with,
        never cached), with links on to the token, the list and a new token."""
        secret = getattr(obj, "new_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Token {obj.prefix}… created",
            "token": obj,
            "secret": secret,
        }
        response = TemplateResponse(request, "admin/vault/apitoken/created.html", context)
        add_never_cache_headers(response)
        return response

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        for token in queryset:
            services.token_revoke(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")


class EntryVersionInline(admin.TabularInline):
    model = EntryVersion
    fk_name = "entry"
    extra = 0
    can_delete = False
    fields = ["changed_at", "action", "changed_by", "category", "status", "importance", "tags", "content"]
    readonly_fields = fields
    ordering = ["-changed_at", "-id"]

    def has_add_permission(self, request, obj=None):
        return False


class VaultEntryForm(forms.ModelForm):
    """Runs the services' checks so a curator sees a form error instead of a server error.

    It carries the entry's `updated_at` as it was when the form was opened (`seen_updated_at`): a
    change form opened before an agent's edit and saved after it replaced that edit with the text it
    had shown. Such a save is a form error showing the current text, and the form is then based on it,
    so that saving again replaces it knowingly."""

    seen_updated_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = VaultEntry
        fields = ["agent", "category", "content", "tags", "status", "importance"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["seen_updated_at"] = self.instance.updated_at.isoformat()

    def clean(self):
        cleaned = super().clean()
        seen = cleaned.get("seen_updated_at")
        if seen is not None and self.instance.pk is not None and self.instance.updated_at != seen:
            self.data = self.data.copy()
            self.data["seen_updated_at"] = self.instance.updated_at.isoformat()
            raise forms.ValidationError(
                f"Entry {self.instance.pk} was changed since this form was opened; saving would overwrite "
                f"that change. Its current text: {text_clip(self.instance.content, 1000, flatten=False)!r}. Save "
                "again to replace it with yours."
            )
        try:
            if "content" in cleaned:
                text_check(cleaned["content"])
                cleaned["tags"] = tags_normalise(cleaned.get("tags") or [], cleaned["content"])
        except DomainError as exc:
            raise forms.ValidationError(exc.detail) from None
        return cleaned


class ImportanceFilter(admin.SimpleListFilter):
    title = "importance"
    parameter_name = "importance"
    BANDS = {"high": (0.7, None), "medium": (0.4, 0.7), "low": (None, 0.4)}

    def lookups(self, request, model_admin):
        return [("high", "high (0.7 and up)"), ("medium", "medium (0.4 to 0.7)"), ("low", "low (under 0.4)")]

    def queryset(self, request, queryset):
        if self.value() not in self.BANDS:
            return queryset
        low, high = self.BANDS[self.value()]
        if low is not None:
            queryset = queryset.filter(importance__gte=low)
        if high is not None:
            queryset = queryset.filter(importance__lt=high)
        return queryset


class TaggedFilter(admin.SimpleListFilter):
    title = "tags"
    parameter_name = "tagged"

    def lookups(self, request, model_admin):
        return [("yes", "tagged"), ("no", "untagged")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(tags=[])
        if self.value() == "no":
            return queryset.filter(tags=[])
        return queryset


@admin.register(VaultEntry)
class VaultEntryAdmin(admin.ModelAdmin):
    form = VaultEntryForm
    # The content is a clipped one-line preview (full text in its title), so that a page of entries
    # stays a page of rows and every column fits a laptop screen.
    list_display = ["id", "preview", "agent", "category", "status", "source", "importance_shown", "created"]
    list_display_links = ["id", "preview"]
    list_filter = [
        "category",
        "status",
        "source",
        ImportanceFilter,
        TaggedFilter,
        "created_at",
        "project",
        "agent",
    ]
    search_fields = ["=id", "content", "tags", "agent__slug", "created_by"]
    search_help_text = "Words of the content, a tag, an agent slug, who wrote it, or an entry id."
    date_hierarchy = "created_at"
    readonly_fields = [
        "source",
        "created_by",
        "created_at",
        "updated_at",
        "access_count",
        "last_accessed_at",
        "legacy_id",
    ]
    fields = [
        "agent",
        "category",
        "content",
        "tags",
        "status",
        "importance",
        "seen_updated_at",
        *readonly_fields,
    ]
    inlines = [EntryVersionInline]
    list_select_related = ["agent__project"]

    @admin.display(description="content")
    def preview(self, obj):
        return format_html(
            '<span class="entry-preview" title="{}">{}</span>',
            text_clip(obj.content, 500),
            text_clip(obj.content, 160),
        )

    @admin.display(description="created", ordering="created_at")
    def created(self, obj):
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M")

    @admin.display(description="importance", ordering="importance")
    def importance_shown(self, obj):
        return f"{obj.importance:.2f}"

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:
            return [*self.readonly_fields, "agent"]
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        """Route admin writes through the services so they are validated and versioned like API writes."""
        if change:
            services.entry_curator_update(
                entry_id=obj.pk,
                changes=services.EntryChanges(
                    category=obj.category,
                    content=obj.content,
                    tags=obj.tags,
                    importance=obj.importance,
                    status=obj.status,
                ),
                changed_by=_actor(request),
                seen_updated_at=form.cleaned_data.get("seen_updated_at"),
            )
        else:
            created = services.entry_create(
                agent=obj.agent,
                category=obj.category,
                content=obj.content,
                tags=obj.tags,
                importance=obj.importance,
                source="ui",
                status=obj.status,
                created_by=_actor(request),
            )
            obj.pk = created.pk
            obj.duplicate_of = created.duplicate_of
        obj.refresh_from_db()

    def log_addition(self, request, obj, message):
        if getattr(obj, "duplicate_of", None) is None:  # a duplicate added nothing
            return super().log_addition(request, obj, message)
        return None

    def response_add(self, request, obj, post_url_continue=None):
        """entry_create returns the existing entry for an exact duplicate: say so, and open that entry."""
        if getattr(obj, "duplicate_of", None) is None:
            return super().response_add(request, obj, post_url_continue)
        self.message_user(
            request,
            f"Nothing was added: this text is already entry #{obj.duplicate_of} of this agent and "
            "category (its access count was bumped).",
            messages.WARNING,
        )
        return HttpResponseRedirect(reverse("admin:vault_vaultentry_change", args=[obj.duplicate_of]))

    def delete_model(self, request, obj):
        services.entry_delete(entry_id=obj.pk, deleted_by=_actor(request))

    def delete_queryset(self, request, queryset):
        for entry_id in queryset.values_list("pk", flat=True):
            services.entry_delete(entry_id=entry_id, deleted_by=_actor(request))


@admin.register(EntryVersion)
class EntryVersionAdmin(admin.ModelAdmin):
    list_display = ["entry_id", "action", "agent", "category", "changed_by", "changed_at"]
    list_filter = ["action", "category", "agent"]
    search_fields = ["content", "changed_by"]
    readonly_fields = [f.name for f in EntryVersion._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class WorkspaceFileVersionInline(admin.TabularInline):
    model = WorkspaceFileVersion
    extra = 0
    can_delete = False
    fields = ("action", "changed_by", "changed_at", "content")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WorkspaceFile)
class WorkspaceFileAdmin(admin.ModelAdmin):
    """Read-only: files change through the API and the services, which version every write."""

    list_display = ("path", "agent", "enabled", "sort_order", "size", "updated_at", "deleted_at")
    list_filter = ("enabled", "agent__project", "agent")
    search_fields = ("path", "content", "agent__slug")
    readonly_fields = (
        "project",
        "agent",
        "path",
        "content",
        "enabled",
        "sort_order",
        "size",
        "created_at",
        "updated_at",
        "deleted_at",
    )
    exclude = ("search_vector",)
    inlines = [WorkspaceFileVersionInline]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


from vault import maintenance_admin  # noqa: E402, F401  (registers the maintenance admins)


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["user__username", "project__slug"]
    autocomplete_fields = ["project"]
