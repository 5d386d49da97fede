"""The gunicorn worker that `serve` runs: uvicorn with its compiled HTTP parser (httptools) and event
loop (uvloop) named outright.

uvicorn's own worker asks for "auto" and silently falls back to its pure-Python parser (h11) and the
standard asyncio loop when the compiled ones are missing. That fallback cost 0.3-0.4 ms of server CPU
a request (GET /api/v1/me, 2.58-2.67 against 2.22-2.39 ms; docs/benchmarks.md). Naming them here
makes a missing package fail at start instead of slowing every request.

Once the application is loaded, the objects it made (Django, its apps and URL patterns, the MCP
server: 120,000-odd) are moved out of the garbage collector's reach (gc.freeze): a full collection
walked all of them, about once every few thousand requests, and held every thread of the worker while
it did (60-80 ms of CPU in-process, 210 ms seen under load).

Its loop is uvloop with the workers' accepts balanced (memoryproject/connection_balance.py): a few
keep-alive clients connecting together landed on one worker and left the other's core idle.
"""

import gc

from uvicorn_worker import UvicornWorker

import memoryproject.connection_balance  # noqa: F401  (its table is made here, in gunicorn's master)


class WebWorker(UvicornWorker):
    CONFIG_KWARGS = {
        **UvicornWorker.CONFIG_KWARGS,
        "loop": "memoryproject.connection_balance:BalancedLoop",
        "http": "httptools",
    }

    def run(self) -> None:
        # gunicorn's init_process has loaded the application (load_wsgi) and calls this to serve.
        gc.collect()
        gc.freeze()
        return super().run()
