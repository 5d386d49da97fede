"""Every answer under /api/ is JSON, including the ones Django or Ninja produce before a view runs."""

from django.http import JsonResponse

API_PREFIX = "/api/"

_DETAILS = {
    400: "Bad request.",
    403: "Forbidden.",
    404: "Not found.",
    405: "Method not allowed.",
    413: "Request body too large.",
}


class ApiJsonErrorsMiddleware:
    """Turn a non-JSON error response under /api/ (Ninja's empty 405, Django's HTML 400/403/404/413) into
    `{"detail": ...}` with the same status and headers such as Allow."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json") or response.streaming:
            return response
        detail = _DETAILS.get(response.status_code, "Request failed.")
        if response.status_code == 405:
            detail = f"Method {request.method} not allowed here; allowed: {response.get('Allow', 'none')}."
        replaced = JsonResponse({"detail": detail}, status=response.status_code)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replaced[header] = response[header]
        return replaced
