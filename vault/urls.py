from django.contrib.auth import views as auth_views
from django.urls import path

from vault import views

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
    path("search/", views.search, name="vault-search"),
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
]
