"""The floor under ``api.py``: its clients and requests against a web server that only answers.

The figures say what HTTP alone costs on this machine, before Lahar does anything.

    python bench/floor.py --requests 10000 --clients 16
    python bench/floor.py --requests 10000 --clients 16 --app asgi      # uvicorn alone
    python bench/floor.py --requests 10000 --clients 16 --client httpx  # clients on httpx

Starts a uvicorn subprocess on loopback, configured as ``lahar server`` runs it (httptools,
uvloop, no access log), with one of two applications at the vcjob route:

- ``fastapi`` (default): a FastAPI route that reads the body, parses it as JSON and answers
  201 with it as JSON, the least any route that takes a document does;
- ``asgi``: a bare ASGI callable that reads the body and answers 201 with it unparsed: the HTTP
  server and the event loop alone.

Then ``--clients`` threads POST ``--requests`` one-pod vcjob documents between them, exactly
as ``api.py`` sends them (``raw``, the default: ``http.client`` with bodies encoded beforehand;
or ``--client httpx``). Prints one JSON line: requests answered per second, p50/p99 latency, the server
process's CPU per request and the clients' CPU per request. On a machine of N cores, a rate R
of the real server needs (server + clients CPU per request) x R <= N seconds a second: the
floor's two CPU figures say how much of that budget is spent before Lahar does anything.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

sys.path.insert(0, str(Path(__file__).parent))
from options import count, parser as bench_parser  # noqa: E402
from api import API, answers_health, cpu_seconds, free_port, share, stop, submit_all  # noqa: E402  (the same route, documents and clients)

APPS = ("fastapi", "asgi")


def fastapi_app():
    app = FastAPI()

    @app.post(API, status_code=201)
    async def create(request: Request) -> JSONResponse:
        return JSONResponse(json.loads(await request.body()), status_code=201)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"ok": True}

    return app


def asgi_app():
    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        body, status = body or b"{}", 201 if scope["method"] == "POST" else 200
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def serve(app_name: str, port: int) -> None:
    import uvicorn

    app = fastapi_app() if app_name == "fastapi" else asgi_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def start(app_name: str, port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, __file__, "--serve", app_name, "--port", str(port)])
    if not answers_health(process, port):
        process.kill()
        sys.exit("the floor's server did not start")
    return process


def measure(args) -> dict:
    port = free_port()
    server = start(args.app, port)
    try:
        sharing = SimpleNamespace(jobs=args.requests, clients=args.clients, client=args.client)
        shares = [share(i, sharing) for i in range(args.clients)]
        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()

        def client(index: int) -> None:
            seconds, bad = submit_all(shares[index], args, f"http://127.0.0.1:{port}", port, {})
            with lock:
                latencies.extend(seconds)
                failures.extend(bad)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        cpu_before, client_cpu, started = cpu_seconds(server.pid), time.process_time(), time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, client_cpu = time.perf_counter() - started, time.process_time() - client_cpu
        cpu_after = cpu_seconds(server.pid)
    finally:
        stop(server)
    if failures:
        print("first failures: " + "; ".join(failures[:3]), file=sys.stderr)
    latencies.sort()
    server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return {
        "bench": "floor",
        "app": args.app,
        "requests": args.requests,
        "clients": args.clients,
        "client": args.client,
        "failed_requests": len(failures),
        "requests_per_second": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2),
        "seconds": round(wall, 2),
        "server_cpu_ms_per_request": None if server_cpu is None else round(1000 * server_cpu / args.requests, 3),
        "client_cpu_ms_per_request": round(1000 * client_cpu / args.requests, 3),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--requests", type=count(1), default=10000, help="requests to send (default: %(default)s)")
    parser.add_argument("--clients", type=count(1), default=16, help="clients sending at once, one connection each (default: %(default)s)")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw", help="the clients' HTTP library, as in api.py (default: %(default)s)")
    parser.add_argument("--app", choices=APPS, default="fastapi", help="fastapi: a route that parses the body and answers it as JSON; asgi: uvicorn alone (default: %(default)s)")
    parser.add_argument("--serve", choices=APPS, help=argparse.SUPPRESS)  # the server subprocess
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    print(json.dumps(measure(args)))


if __name__ == "__main__":
    main()
