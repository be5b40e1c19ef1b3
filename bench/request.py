"""A vcjob's create request in-process: through the web application (no sockets), and the
same work called directly, so the difference is what the web framework's path costs.

    python bench/request.py
    python bench/request.py --requests 5000 --rounds 7

Builds a server's application over a fresh SQLite file (no control loop, no authentication)
and sends it ``--requests`` one-pod vcjob creates as ASGI calls, each awaited in turn, then
creates as many with ``ApiService.create``. Prints one JSON line: CPU milliseconds per request
both ways and their difference, medians of ``--rounds``. CPU time (the disk's sync is not in
it). With ``--callgrind-requests N`` it sends N requests with callgrind's counting on and
nothing else (run it under ``valgrind --tool=callgrind --instr-atstart=no``): the exact
instruction count of the request path, the same run after run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from api import API as JOBS, job  # noqa: E402  (the same vcjob as the end-to-end benchmark sends)
from callgrind import instruments  # noqa: E402


async def post(app, body: bytes) -> None:
    """One create request as uvicorn would hand it to the application."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": JOBS, "raw_path": JOBS.encode(), "query_string": b"", "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "state": {},
    }
    await app(scope, receive, send)
    if sent[0]["status"] != 201:
        sys.exit(f"create answered {sent[0]['status']}: {sent[-1].get('body', b'')[:300]!r}")


async def through_app(app, prefix: str, count: int) -> float:
    bodies = [json.dumps(job(f"{prefix}-{i}")).encode() for i in range(count)]
    started = time.process_time()
    for body in bodies:
        await post(app, body)
    return 1000 * (time.process_time() - started) / count


def direct(service, prefix: str, count: int) -> float:
    documents = [job(f"{prefix}-{i}") for i in range(count)]
    started = time.process_time()
    for document in documents:
        service.create(document, "default")
    return 1000 * (time.process_time() - started) / count


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="creates per round, each way")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callgrind-requests", type=int, default=0, metavar="N", help="only N requests, counted by callgrind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'lahar.db'}")
        server = build_server(store, load_config(default_config_text()), auth=False, home=Path(folder))
        server.service.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "bench"}, "spec": {"weight": 1}})
        await through_app(server.app, "warm", 200)
        if args.callgrind_requests:
            bodies = [json.dumps(job(f"counted-{i}")).encode() for i in range(args.callgrind_requests)]
            instruments("on")
            for body in bodies:
                await post(server.app, body)
            instruments("off")
            print(json.dumps({"bench": "request", "counted_requests": args.callgrind_requests}))
            store.close()
            return
        app_ms, direct_ms = [], []
        for round_ in range(args.rounds):
            app_ms.append(await through_app(server.app, f"app{round_}", args.requests))
            direct_ms.append(direct(server.service, f"direct{round_}", args.requests))
        store.close()
    app_median, direct_median = statistics.median(app_ms), statistics.median(direct_ms)
    print(json.dumps({
        "bench": "request", "requests": args.requests, "rounds": args.rounds,
        "through_app_cpu_ms": round(app_median, 3), "direct_cpu_ms": round(direct_median, 3),
        "web_framework_cpu_ms": round(app_median - direct_median, 3),
    }))


if __name__ == "__main__":
    asyncio.run(main())
