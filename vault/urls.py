from django.urls import path

from vault.views import entries, files, projects, review

urlpatterns = [
    path("projects/<str:project>/settings/", projects.project_settings, name="vault-project-settings"),
    path("projects/<str:project>/context/", projects.project_context_update, name="vault-project-context"),
    path("projects/<str:project>/tokens/", projects.token_create, name="vault-token-create"),
    path(
        "projects/<str:project>/tokens/<int:token_id>/revoke/",
        projects.token_revoke,
        name="vault-token-revoke",
    ),
    path("projects/<str:project>/policies/", projects.project_policies, name="vault-project-policies"),
    path("projects/<str:project>/agents/<str:agent>/", entries.agent_vault, name="vault-agent"),
    path(
        "projects/<str:project>/agents/<str:agent>/entries/new/",
        entries.entry_create,
        name="vault-entry-create",
    ),
    path("entries/<int:entry_id>/", entries.entry_detail, name="vault-entry-detail"),
    path("entries/<int:entry_id>/card/", entries.entry_card, name="vault-entry-card"),
    path("entries/<int:entry_id>/edit/", entries.entry_edit, name="vault-entry-edit"),
    path("entries/<int:entry_id>/delete/", entries.entry_delete, name="vault-entry-delete"),
    path("entries/<int:entry_id>/tasks/", entries.entry_task_toggle, name="vault-entry-task-toggle"),
    path(
        "entries/<int:entry_id>/versions/<int:version_id>/restore/",
        entries.entry_restore,
        name="vault-entry-restore",
    ),
    path("projects/<str:project>/review/", review.review_queue, name="vault-review"),
    path("projects/<str:project>/review/bulk/", review.review_bulk, name="vault-review-bulk"),
    path("projects/<str:project>/review/<int:entry_id>/", review.review_act, name="vault-review-act"),
    path("projects/<str:project>/agents/<str:agent>/files/", files.files, name="vault-file"),
    path(
        "projects/<str:project>/agents/<str:agent>/files/preview/",
        files.file_preview,
        name="vault-file-preview",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/files/settings/",
        files.file_settings,
        name="vault-file-settings",
    ),
]
