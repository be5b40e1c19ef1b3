"""Starting a server: open the store, build the service, the control loop and the HTTP app.

``build_server`` wires the parts without starting anything (tests use it); ``serve`` runs
uvicorn until interrupted and stops the loop cleanly. On a store several servers may share
(PostgreSQL) the control loop runs only while this server is the leader (``server.leader``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lahar.scheduler.framework.config import SchedulerConf
from lahar.server.app import create_app
from lahar.errors import AlreadyExists
from lahar.server.auth import TokenStore, bootstrap_admin_token
from lahar.server.heap import HeapCollector
from lahar.server.leader import LeaderLoop, install_routes, leadership_for
from lahar.server.loop import ControlLoop
from lahar.server.metrics import QueueMetrics
from lahar.server.runtime import LocalRuntime
from lahar.server.service import ApiService
from lahar.store import lahar_home

__all__ = ["Server", "build_server", "serve"]


@dataclass
class Server:
    store: Any
    service: ApiService
    loop: ControlLoop  # a LeaderLoop (same face) on a shared store
    metrics: QueueMetrics
    app: Any
    tokens: Any = None
    admin_token_path: Path | None = None


def build_server(
    store: Any, conf: SchedulerConf, period: float = 1.0, auth: bool = True, home: Path | None = None, runtime: str = "simulated"
) -> Server:
    """Wire the parts. With ``auth`` a store without tokens gets an admin token, written to
    ``home/token`` (default ``$LAHAR_HOME``, ``~/.lahar``); ``admin_token_path`` says where.
    ``runtime``: ``simulated`` (tasks end after ``lahar.dev/duration``) or ``local`` (each task's
    command runs as a process here, its output in ``home/logs``)."""
    service = _service(store)
    metrics = QueueMetrics()

    def make_loop() -> ControlLoop:
        tasks = LocalRuntime((home or lahar_home()) / "logs") if runtime == "local" else None
        return ControlLoop(service, conf, period, on_cycle=metrics.observe_cycle, on_quiet=metrics.quiet_ticks.inc, on_tick=metrics.loop_cpu.inc, runtime=tasks, heap=HeapCollector(), on_locked=metrics.loop_held)

    leadership = leadership_for(store)
    loop: Any = make_loop() if leadership is None else LeaderLoop(make_loop, leadership)
    tokens = TokenStore(store) if auth else None
    written = bootstrap_admin_token(tokens, home or lahar_home()) if tokens is not None else None
    app = create_app(service, loop, metrics.text, tokens, metrics.observe_write_group, metrics.requests_held)
    install_routes(app, loop)
    return Server(store, service, loop, metrics, app, tokens, written)


def _service(store: Any, attempts: int = 5) -> ApiService:
    """The service; servers starting together on an empty shared database race to create the
    built-in queues (root, then default): the one that loses a race looks again."""
    for attempt in range(attempts):
        try:
            return ApiService(store)
        except AlreadyExists:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def serve(server: Server, host: str, port: int, log_level: str = "info") -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stopped = False

    def stop() -> None:
        """Stop the loop (flushing usage, ending local task processes) and close the store, once.
        Also a shutdown hook: uvicorn re-raises SIGTERM after its shutdown, so code after
        ``uvicorn.run`` does not run when the server is terminated."""
        nonlocal stopped
        if not stopped:
            stopped = True
            server.loop.stop()
            server.store.close()

    server.app.router.on_shutdown.append(stop)
    server.loop.start()
    try:
        uvicorn.run(server.app, host=host, port=port, log_level=log_level, access_log=False)
    finally:
        stop()
