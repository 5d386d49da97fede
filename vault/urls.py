from django.contrib.auth import views as auth_views
from django.urls import path

from vault import views, views_phase2

urlpatterns = [
    path("", views.dashboard, name="vault-dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="registration/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("search/", views_phase2.search, name="vault-search"),
    path("projects/<str:project>/settings/", views.project_settings, name="vault-project-settings"),
    path("projects/<str:project>/context/", views.project_context_update, name="vault-project-context"),
    path("projects/<str:project>/tokens/", views.token_create, name="vault-token-create"),
    path(
        "projects/<str:project>/tokens/<int:token_id>/revoke/", views.token_revoke, name="vault-token-revoke"
    ),
    path("projects/<str:project>/agents/<str:agent>/", views.agent_vault, name="vault-agent"),
    path(
        "projects/<str:project>/agents/<str:agent>/entries/new/",
        views.entry_create,
        name="vault-entry-create",
    ),
    path("entries/<int:entry_id>/", views.entry_detail, name="vault-entry-detail"),
    path("entries/<int:entry_id>/card/", views.entry_card, name="vault-entry-card"),
    path("entries/<int:entry_id>/edit/", views.entry_edit, name="vault-entry-edit"),
    path("entries/<int:entry_id>/delete/", views.entry_delete, name="vault-entry-delete"),
    path("entries/<int:entry_id>/tasks/", views.entry_task_toggle, name="vault-entry-task-toggle"),
    path(
        "entries/<int:entry_id>/versions/<int:version_id>/restore/",
        views.entry_restore,
        name="vault-entry-restore",
    ),
    path("projects/<str:project>/review/", views_phase2.review_queue, name="vault-review"),
    path("projects/<str:project>/review/bulk/", views_phase2.review_bulk, name="vault-review-bulk"),
    path("projects/<str:project>/review/<int:entry_id>/", views_phase2.review_act, name="vault-review-act"),
    path("projects/<str:project>/maintenance/", views_phase2.maintenance, name="vault-maintenance"),
    path(
        "projects/<str:project>/maintenance/compact/",
        views_phase2.compaction_start,
        name="vault-compaction-start",
    ),
    path(
        "projects/<str:project>/maintenance/runs/<int:run_id>/",
        views_phase2.maintenance_run,
        name="vault-maintenance-run",
    ),
    path("projects/<str:project>/policies/", views_phase2.project_policies, name="vault-project-policies"),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/",
        views_phase2.sessions_list,
        name="vault-sessions",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/",
        views_phase2.session_detail,
        name="vault-session",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/archive/",
        views_phase2.session_archive,
        name="vault-session-archive",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/restore/",
        views_phase2.session_restore,
        name="vault-session-restore",
    ),
    path("projects/<str:project>/agents/<str:agent>/files/", views_phase2.files, name="vault-file"),
    path(
        "projects/<str:project>/agents/<str:agent>/files/preview/",
        views_phase2.file_preview,
        name="vault-file-preview",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/files/settings/",
        views_phase2.file_settings,
        name="vault-file-settings",
    ),
]
