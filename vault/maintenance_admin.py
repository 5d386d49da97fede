"""Admin for maintenance records: runs with their changes, and the deletion audit log (read-only).

django-q2's own admin (already installed) shows the schedules and each task's last runs and results.
"""

import json

from django.contrib import admin
from django.utils.html import format_html

from vault.models import CompactionRun, DeletionAudit, EntryMerge


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(CompactionRun)
class CompactionRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "project", "kind", "trigger", "summary", "change_count", "duration_ms"]
    list_filter = ["kind", "trigger", "project"]
    date_hierarchy = "started_at"
    fields = ["project", "kind", "trigger", "dry_run", "started_at", "duration_ms", "counts_pretty",
              "notes_pretty", "changes_pretty"]  # fmt: skip
    readonly_fields = fields

    @admin.display(description="counts")
    def summary(self, obj):
        return ", ".join(f"{key}={value}" for key, value in obj.counts.items() if value) or "nothing to do"

    @admin.display(description="changes")
    def change_count(self, obj):
        return len(obj.changes)

    @admin.display(description="counts")
    def counts_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.counts, indent=2))

    @admin.display(description="notes")
    def notes_pretty(self, obj):
        return format_html("<pre>{}</pre>", "\n".join(obj.notes))

    @admin.display(description="changes and reasons")
    def changes_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.changes, indent=2, ensure_ascii=False))


@admin.register(EntryMerge)
class EntryMergeAdmin(ReadOnlyAdmin):
    list_display = ["summary", "entry", "run", "created_at"]
    raw_id_fields = ["summary", "entry", "run"]
    search_fields = ["summary__id", "entry__id"]


@admin.register(DeletionAudit)
class DeletionAuditAdmin(ReadOnlyAdmin):
    list_display = ["deleted_at", "project", "project_slug", "agent_slug", "kind", "object_id", "category", "reason",
                    "deleted_by"]  # fmt: skip
    list_filter = ["reason", "kind", "project"]
    search_fields = ["agent_slug", "object_id", "deleted_by", "content_sha256"]
    date_hierarchy = "deleted_at"

    def has_delete_permission(self, request, obj=None):
        return False
