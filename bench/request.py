"""A vcjob's create request in-process: through the web application (no sockets), and the
same work called directly, so the difference is what the web framework's path costs.

    python bench/request.py
    python bench/request.py --requests 5000 --rounds 7
    python bench/request.py --concurrent 16   # 16 requests in flight at a time: their writes commit in groups
    python bench/request.py --concurrent 16 --auth   # each request with the admin token, as lahar server runs by default

Builds a server's application over a fresh SQLite file (no control loop; no authentication
unless ``--auth``: then every request sends the admin token and the direct creates are made as
the admin, so the difference holds the token's check)
and sends it ``--requests`` one-pod vcjob creates as ASGI calls, each awaited in turn, then
creates as many with ``ApiService.create``. Prints one JSON line: CPU milliseconds per request
both ways and their difference, medians of ``--rounds``, and the mean number of requests the
writer committed together (``writes_per_commit``). CPU time (the disk's sync is not in
it). With ``--callgrind-requests N`` it sends N requests with callgrind's counting on and
nothing else (run it under ``valgrind --tool=callgrind --instr-atstart=no``): the exact
instruction count of the request path, the same run after run with ``--concurrent 16`` (one
request at a time it moves by up to 6% between runs: whether the event loop sleeps before an
answer comes back decides how often it polls). ``--concurrent N`` sends the
requests N at a time, awaited together, so the writer thread takes them in groups as it does
for concurrent clients (one at a time, each is a group of one), and the direct creates run in
groups of N as the writer runs them (one transaction, a savepoint each), so the difference is
still the web path's alone.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.security import authenticate
from lahar.server.main import build_server
from lahar.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from api import API as JOBS, job  # noqa: E402  (the same vcjob as the end-to-end benchmark sends)
from callgrind import instruments  # noqa: E402
from options import count, parser as bench_parser  # noqa: E402


async def post(app, body: bytes, token: str | None = None) -> None:
    """One create request as uvicorn would hand it to the application (with ``token`` as its
    bearer token)."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": JOBS, "raw_path": JOBS.encode(), "query_string": b"", "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "state": {},
    }
    await app(scope, receive, send)
    if sent[0]["status"] != 201:
        sys.exit(f"create answered {sent[0]['status']}: {sent[-1].get('body', b'')[:300]!r}")


async def send_all(app, bodies: list[bytes], concurrent: int, token: str | None = None) -> None:
    """Every body posted, ``concurrent`` requests in flight at a time."""
    for start in range(0, len(bodies), concurrent):
        await asyncio.gather(*(post(app, body, token) for body in bodies[start : start + concurrent]))


async def through_app(app, prefix: str, count: int, concurrent: int = 1, token: str | None = None) -> float:
    bodies = [json.dumps(job(f"{prefix}-{i}")).encode() for i in range(count)]
    started = time.process_time()
    await send_all(app, bodies, concurrent, token)
    return 1000 * (time.process_time() - started) / count


def direct(service, prefix: str, count: int, concurrent: int = 1, who=None) -> float:
    """CPU ms a create called directly (by ``who``, when authentication is on): one at a time,
    or as the writer runs a group of ``concurrent`` (one transaction, each create in its own
    savepoint)."""
    documents = [job(f"{prefix}-{i}") for i in range(count)]
    store = service.store
    started = time.process_time()
    if concurrent == 1:
        for document in documents:
            service.create(document, "default", who=who)
    else:
        for start in range(0, count, concurrent):
            with store.batch():
                for document in documents[start : start + concurrent]:
                    with store.batch():
                        service.create(document, "default", who=who)
    return 1000 * (time.process_time() - started) / count


async def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--requests", type=count(1), default=2000, help="creates per round, each way (default: %(default)s)")
    parser.add_argument("--rounds", type=count(1), default=5, help="rounds; the figures are their medians (default: %(default)s)")
    parser.add_argument("--concurrent", type=count(1), default=1, metavar="N", help="requests in flight at a time (default: %(default)s)")
    parser.add_argument("--auth", action="store_true", help="authentication on, as lahar server runs by default: every request sends the admin token")
    parser.add_argument("--callgrind-requests", type=count(0), default=0, metavar="N", help="only N requests, counted by callgrind; 0: the rounds instead (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'lahar.db'}")
        server = build_server(store, load_config(default_config_text()), auth=args.auth, home=Path(folder))
        token = server.admin_token_path.read_text().strip() if args.auth else None
        who = authenticate(f"Bearer {token}", server.tokens.lookup) if args.auth else None
        server.service.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "bench"}, "spec": {"weight": 1}})
        await through_app(server.app, "warm", 200, token=token)
        if args.callgrind_requests:
            bodies = [json.dumps(job(f"counted-{i}")).encode() for i in range(args.callgrind_requests)]
            instruments("on")
            await send_all(server.app, bodies, args.concurrent, token)
            instruments("off")
            print(json.dumps({"bench": "request", "counted_requests": args.callgrind_requests, "concurrent": args.concurrent, "auth": args.auth}))
            store.close()
            return
        app_ms, direct_ms = [], []
        groups_before, writes_before = _write_groups(server)
        for round_ in range(args.rounds):
            app_ms.append(await through_app(server.app, f"app{round_}", args.requests, args.concurrent, token))
            direct_ms.append(direct(server.service, f"direct{round_}", args.requests, args.concurrent, who))
        groups, writes = (after - before for after, before in zip(_write_groups(server), (groups_before, writes_before)))
        store.close()
    app_median, direct_median = statistics.median(app_ms), statistics.median(direct_ms)
    print(json.dumps({
        "bench": "request", "requests": args.requests, "rounds": args.rounds, "concurrent": args.concurrent, "auth": args.auth,
        "through_app_cpu_ms": round(app_median, 3), "direct_cpu_ms": round(direct_median, 3),
        "web_framework_cpu_ms": round(app_median - direct_median, 3),
        "writes_per_commit": round(writes / groups, 2) if groups else None,
    }))


def _write_groups(server) -> tuple[float, float]:
    """The groups of write requests the server's writer ran so far, and the writes in them."""
    registry = server.metrics.registry
    return registry.get_sample_value("lahar_write_groups_total") or 0.0, registry.get_sample_value("lahar_grouped_writes_total") or 0.0


if __name__ == "__main__":
    asyncio.run(main())
