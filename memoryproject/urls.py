from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from memoryproject.api import api, health_status


def healthz(request):
    status, body = health_status()
    response = JsonResponse(body, status=status)
    if status == 503:
        response["Retry-After"] = "5"
    return response


@csrf_exempt
def api_not_found(request, rest=""):
    return JsonResponse(
        {"detail": f"No API endpoint at /{request.path.lstrip('/')} ({request.method})."}, status=404
    )


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("healthz", healthz, name="healthz"),
    path("", include("vault.urls")),
]
