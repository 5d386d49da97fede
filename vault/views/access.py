"""What every curator page shares: the login and curator check, htmx detection, the acting user's
label, and placing a service's error on a form."""

from functools import wraps
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.urls import reverse

from memoryproject.errors import DomainError, NotFound
from vault import selectors

UNPROCESSABLE = 422


def is_htmx(request) -> bool:
    """Whether htmx asks for a part of the page. Not when it restores a page its history cache lost
    (the back button): it puts the answer in place of the whole body, so that needs the whole page."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def _htmx_page(request) -> str:
    """The path and query of the page an htmx request came from (HX-Current-URL, on this host), else
    the request's own."""
    current = urlsplit(request.headers.get("HX-Current-URL", ""))
    if current.path.startswith("/") and current.netloc in ("", request.get_host()):
        return current.path + (f"?{current.query}" if current.query else "")
    return request.get_full_path()


def _page_after_login(request) -> str:
    """Where the login sends an anonymous curator back to: the page asked for; for a form's POST (a
    button pressed on a page left open after the login ended), the page the form was on (Referer, on
    this host), since a GET of the form's own address is a 405; else the dashboard."""
    if request.method in ("GET", "HEAD"):
        return request.get_full_path()
    page = urlsplit(request.headers.get("Referer", ""))
    if page.path.startswith("/") and page.netloc == request.get_host():
        return page.path + (f"?{page.query}" if page.query else "")
    return reverse("dashboard")


def actor(request) -> str:
    return f"user:{request.user.get_username()}"


def curator_required(view):
    """Login (anonymous → login page), then staff or curator group (else 403); NotFound → 404."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            if is_htmx(request):
                # Back to the page the curator was on (not the partial htmx asked for), its query string
                # kept: unencoded, "?next=/search/?q=a&kind=b" lost everything after its first "&".
                response = HttpResponse(status=204)
                response["HX-Redirect"] = redirect_to_login(_htmx_page(request)).url
                return response
            if request.method not in ("GET", "HEAD"):
                messages.info(
                    request, "Your login had ended, so that was not done: log in, then do it again."
                )
            return redirect_to_login(_page_after_login(request))
        if not selectors.user_is_curator(request.user):
            raise PermissionDenied("Curator pages need staff status or the curator group.")
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.detail) from None

    return wrapper


def form_errors(form, exc: DomainError) -> None:
    """Put a service's error on the form fields it names, or on the form as a whole."""
    placed = False
    for error in exc.errors:
        field = (error.get("loc") or [None])[-1]
        if field in form.fields:
            form.add_error(field, exc.detail)
            placed = True
            break
    if not placed:
        form.add_error(None, exc.detail)
