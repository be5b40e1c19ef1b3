"""Starting a server: open the store, build the service, the control loop and the HTTP app.

``build_server`` wires the parts without starting anything (tests use it); ``serve`` runs
uvicorn until interrupted and stops the loop cleanly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lahar.scheduler.framework.config import SchedulerConf
from lahar.server.app import create_app
from lahar.server.loop import ControlLoop
from lahar.server.metrics import QueueMetrics
from lahar.server.service import ApiService

__all__ = ["Server", "build_server", "serve"]


@dataclass
class Server:
    store: Any
    service: ApiService
    loop: ControlLoop
    metrics: QueueMetrics
    app: Any


def build_server(store: Any, conf: SchedulerConf, period: float = 1.0) -> Server:
    service = ApiService(store)
    metrics = QueueMetrics()
    loop = ControlLoop(service, conf, period, on_cycle=metrics.observe_cycle)
    app = create_app(service, loop, metrics.text)
    return Server(store, service, loop, metrics, app)


def serve(server: Server, host: str, port: int, log_level: str = "info") -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server.loop.start()
    try:
        uvicorn.run(server.app, host=host, port=port, log_level=log_level, access_log=False)
    finally:
        server.loop.stop()
        server.store.close()
