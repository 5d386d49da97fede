"""The gunicorn worker that `serve` runs: uvicorn with its compiled HTTP parser (httptools) and event
loop (uvloop) named outright.

uvicorn's own worker asks for "auto" and silently falls back to its pure-Python parser (h11) and the
standard asyncio loop when the compiled ones are missing. Measured with `bench_write --clients 8`, that
fallback cost about 1.5-2 ms of server CPU on every request (5.7 -> 3.8-4.2 ms an entry write). Naming
them here makes a missing package fail at start instead of slowing every request.
"""

from uvicorn_worker import UvicornWorker


class WebWorker(UvicornWorker):
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "loop": "uvloop", "http": "httptools"}
