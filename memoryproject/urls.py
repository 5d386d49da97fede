from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from memoryproject import views
from memoryproject.api import api, health_status


def healthz(request):
    status, body = health_status()
    response = JsonResponse(body, status=status)
    if status == 503:
        response["Retry-After"] = "5"
    return response


@csrf_exempt
def api_not_found(request, rest=""):
    """404 as JSON naming the path and where the endpoints are listed (the API's root too: a newcomer
    who opens /api/v1/ in a browser got django-ninja's bare {"detail": "Not found."})."""
    return JsonResponse(
        {
            "detail": f"No API endpoint at /{request.path.lstrip('/')} ({request.method}). "
            "The endpoints are listed at /api/v1/docs (OpenAPI: /api/v1/openapi.json)."
        },
        status=404,
    )


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api_not_found),
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("healthz", healthz, name="healthz"),
    path("", views.dashboard, name="dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="registration/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("projects/<str:project>/maintenance/", views.maintenance, name="maintenance"),
    path(
        "projects/<str:project>/maintenance/compact/",
        views.compaction_start,
        name="maintenance-compaction-start",
    ),
    path(
        "projects/<str:project>/maintenance/runs/<int:run_id>/", views.maintenance_run, name="maintenance-run"
    ),
    path("", include("vault.urls")),
    path("", include("sessions_app.urls")),
    path("", include("search.urls")),
]
