"""Dry runs and expected starts over HTTP (``lahar job run --dry-run``, ``lahar job why``).

``POST /lahar/v1/namespaces/{ns}/jobs/dry-run`` takes a vcjob as ``POST .../jobs`` would, stores
nothing, and answers whether admission would take it now and, if so, when it is expected to
start. ``GET /lahar/v1/namespaces/{ns}/jobs/{name}/estimate`` answers the same for a job that
is already waiting. Both simulate forward from the server's present state (``lahar.sim.forecast``).
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Query, Request

from lahar.errors import BadRequest, LaharError
from lahar.model.manifest import KINDS
from lahar.server.bodies import JSON_OBJECT_BODY, json_object
from lahar.server.service import ApiService
from lahar.sim.forecast import DEFAULT_HORIZON, expected_start

__all__ = ["install"]

_STATE_KINDS = ("PriorityClass", "Queue", "Node", "Job", "PodGroup", "Pod")


def install(app: FastAPI, service: ApiService, loop: Any) -> None:
    horizon_query = Query(DEFAULT_HORIZON, gt=0, le=90 * 86400, description="How far ahead to simulate, in seconds.")

    @app.post("/lahar/v1/namespaces/{namespace}/jobs/dry-run", tags=["Lahar"], summary="Would this job be admitted, and when would it start?", openapi_extra=JSON_OBJECT_BODY)
    def dry_run(request: Request, namespace: str, body: dict = Depends(json_object), horizon: float = horizon_query) -> dict:
        proposed = service.parse(body, namespace)
        if proposed.kind != "Job":
            raise BadRequest(f"kind: a dry run takes a vcjob (kind Job), not {proposed.kind}")
        service.access.create(getattr(request.state, "principal", None), proposed)
        return _estimate(service, loop, proposed.key, proposed, horizon)

    @app.get("/lahar/v1/namespaces/{namespace}/jobs/{name}/estimate", tags=["Lahar"], summary="When a waiting job is expected to start")
    def estimate(request: Request, namespace: str, name: str, horizon: float = horizon_query) -> dict:
        service.get("Job" if service.exists("Job", f"{namespace}/{name}") else "PodGroup", f"{namespace}/{name}", who=getattr(request.state, "principal", None))
        return _estimate(service, loop, f"{namespace}/{name}", None, horizon)


def _estimate(service: ApiService, loop: Any, key: str, proposed: Any, horizon: float) -> dict:
    if loop is None:
        raise LaharError("this server runs no scheduler: nothing to estimate with")
    objects = [KINDS[kind].model_validate(item) for kind in _STATE_KINDS for item in service.store.list(kind)[0]]
    typical = _typical_runtime(service, loop)
    result = expected_start(objects, loop.conf, loop.clock(), key, proposed=proposed, horizon=horizon, period=loop.period, typical=typical)
    return result.to_json()


HISTORY = 7 * 86400.0


def _typical_runtime(service: ApiService, loop: Any):
    """A queue's mean job run time over the last week of its usage history, or None. The history
    is read under the service lock, as the control loop changes it under that lock."""
    usage = getattr(loop, "usage", None)
    if usage is None:
        return None
    since = loop.clock() - HISTORY

    def typical(queue: str) -> float | None:
        with service.lock:
            rows = usage.ledger.rows(since=since, queue=queue)
        jobs = sum(row["jobs"] for row in rows)
        return sum(row["runSum"] for row in rows) / jobs if jobs else None

    return typical
