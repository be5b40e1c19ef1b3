"""``in_worker`` runs a write route's store work on its application's writer thread: the caller
gets its value or its exception, and the work sees the caller's context variables (as
Starlette's ``run_in_threadpool`` gives them), not the worker thread's."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from lahar.errors import Conflict
from lahar.server.service import ApiService
from lahar.server.write_groups import WriteGroups, in_worker
from lahar.store import MemoryStore

_REQUEST = contextvars.ContextVar("request", default="unset")


def _seen(extra: str, *, suffix: str = "") -> tuple[str, str, bool]:
    return _REQUEST.get() + extra + suffix, threading.current_thread().name, threading.current_thread() is threading.main_thread()


def _refuse() -> None:
    raise Conflict("stale resourceVersion")


def test_the_work_runs_on_a_worker_with_the_callers_context():
    async def request() -> tuple[str, str, bool]:
        _REQUEST.set("r-1")
        return await in_worker(WriteGroups(ApiService(MemoryStore())), _seen, "/a", suffix="/b")

    value, thread, on_main = asyncio.run(request())
    assert value == "r-1/a/b" and thread.startswith("lahar-request") and not on_main
    assert _REQUEST.get() == "unset"  # the caller's context was copied, not changed here


def test_the_works_exception_reaches_the_caller():
    with pytest.raises(Conflict, match="stale resourceVersion"):
        asyncio.run(in_worker(WriteGroups(ApiService(MemoryStore())), _refuse))
