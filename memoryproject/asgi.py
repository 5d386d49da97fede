"""ASGI entry point for `serve`: /mcp goes to the MCP server, everything else to Django's WSGI app.

Django runs as today: its WSGI application in a thread pool (a2wsgi's, through
memoryproject.wsgi_bridge: one hand-off between the loop and the thread per request), WEB_THREADS
threads per worker, so sync views keep the concurrency gunicorn's gthread workers gave them.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

from django.core.wsgi import get_wsgi_application  # noqa: E402

django_application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402

# The URLconf, and the API's routers and schemas it imports, loaded now rather than by each worker's
# first request (0.3 s of CPU here, in that request's time): so they are among the objects the worker
# moves out of the garbage collector's reach before it serves (memoryproject/web_worker.py).
get_resolver().url_patterns  # noqa: B018

from memoryproject.env import env_int  # noqa: E402
from memoryproject.mcp.http import MCP_PATH, mcp_http_app  # noqa: E402
from memoryproject.wsgi_bridge import DjangoWSGIBridge  # noqa: E402

# `serve` checked it and passed it on; a server started otherwise gets the same check.
_django = DjangoWSGIBridge(django_application, workers=env_int("WEB_THREADS", 4, minimum=1, maximum=1024))
_mcp = mcp_http_app()


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await _mcp(scope, receive, send)
    path = scope.get("path", "")
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        return await _mcp(scope, receive, send)
    return await _django(scope, receive, send)
