"""``/lahar/v1/usage`` and ``/lahar/v1/usage/series``: accounting over HTTP, like Slurm's sacct.

- ``GET /lahar/v1/usage?queue=&user=&since=7d`` -> ``{"since": t, "items": [row, ...]}``, one row
  per (queue, user): resource-seconds per resource (cpu core-seconds, memory byte-seconds, GPU-
  seconds), jobs finished, mean and maximum wait, run time. ``since`` is a duration back from
  now (``90m``, ``7d``) or an absolute Unix time. ``?format=csv`` answers ``text/csv``.
- ``GET /lahar/v1/usage/series`` -> ``{"resources": {res: {queue: [[t, amount], ...]}},
  "hourly": {...}}``: the recent allocation per queue (one point per tick, bounded) and the
  hourly mean use over ``since`` from the persisted buckets, for charts.

A non-admin sees only their own rows (``user`` is forced to theirs).
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import PlainTextResponse

from lahar.accounting import rows_csv
from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest

__all__ = ["install", "since_time"]

_SINCE_HELP = "How far back: a duration (90m, 7d) or a Unix time; default 7d."


def since_time(text: str | None, now: float) -> float:
    """The Unix time ``text`` means: a duration back from ``now``, or a Unix time (a finite
    number > 1e9: ``float`` also reads ``inf``, ``nan`` and ``1e400``, which are no time)."""
    if text is None or text == "":
        return now - 7 * 86400.0
    try:
        value = float(text)
        if math.isfinite(value) and value > 1e9:
            return value
    except ValueError:
        pass
    try:
        return now - parse_duration(text)
    except DurationError as exc:
        raise BadRequest(f'since: "{text}" is not a duration (90m, 7d) or a Unix time: {exc}') from None


def install(app: FastAPI, service: Any, loop: Any) -> None:
    def history():
        usage = getattr(loop, "usage", None)
        if usage is None:
            raise BadRequest("usage accounting is not running in this server")
        return usage

    def scope(request: Request, user: str | None) -> str | None:
        who = getattr(request.state, "principal", None)
        return who.user if who is not None and not who.admin else user

    @app.get("/lahar/v1/usage", tags=["Lahar"], summary="Usage per queue and user (resource-seconds, jobs, waits)")
    def usage(
        request: Request,
        queue: str | None = Query(None, description="Only this queue."),
        user: str | None = Query(None, description="Only this user."),
        since: str | None = Query(None, description=_SINCE_HELP),
        format: str = Query("json", pattern="^(json|csv)$", description="json or csv"),
    ):
        now = service.clock()
        start = since_time(since, now)
        with service.lock:
            rows = history().ledger.rows(start, queue or None, scope(request, user) or None)
        rows.sort(key=lambda r: (r["queue"], r["user"]))
        if format == "csv":
            return PlainTextResponse(rows_csv(rows), media_type="text/csv")
        return {"since": start, "now": now, "items": rows}

    @app.get("/lahar/v1/usage/series", tags=["Lahar"], summary="Allocation over time per queue, for charts")
    def series(request: Request, since: str | None = Query(None, description=_SINCE_HELP), queue: str | None = Query(None)) -> dict:
        now = service.clock()
        start = since_time(since, now)
        with service.lock:
            recorder = history()
            live = recorder.ledger.series_json()
            hourly = recorder.hourly(start, queue or None, scope(request, None))
        if queue:
            live = {name: {q: pts for q, pts in per.items() if q == queue} for name, per in live.items()}
        who = getattr(request.state, "principal", None)
        if who is not None and not who.admin:
            live = {}  # per-queue allocation of everyone's work: admins only
        return {"since": start, "now": now, "resources": live, "hourly": hourly}
