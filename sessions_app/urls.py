from django.urls import path

from sessions_app import views

urlpatterns = [
    path("projects/<str:project>/agents/<str:agent>/sessions/", views.sessions_list, name="session-list"),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/",
        views.session_detail,
        name="session-detail",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/archive/",
        views.session_archive,
        name="session-archive",
    ),
    path(
        "projects/<str:project>/agents/<str:agent>/sessions/<int:session_id>/restore/",
        views.session_restore,
        name="session-restore",
    ),
]
