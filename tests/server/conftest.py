"""A server without sockets: the FastAPI app over a store, with a hand-driven clock and loop."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.server.service import ApiService
from lahar.store import open_store


class Clock:
    """A clock moved on by hand, from ``now``."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["memory", "sqlite"])
def server(request, tmp_path):
    url = "memory://" if request.param == "memory" else str(tmp_path / "lahar.db")
    store = open_store(url)
    built = build_server(store, load_config(default_config_text()), auth=False)
    clock = Clock()
    built.loop.clock = clock
    built.service.clock = clock
    built.clock = clock
    built.client = TestClient(built.app)
    yield built
    store.close()


@pytest.fixture(params=["sqlite", "memory"])
def each_store_service(request, tmp_path):
    """An ``ApiService`` on a SQLite file, then on the memory store (no loop, no HTTP)."""
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}" if request.param == "sqlite" else "memory://")
    yield ApiService(store)
    store.close()


@pytest.fixture
def sqlite_server(tmp_path):
    """A server on a SQLite file whose loop is ticked by hand (no authentication), with a
    ``client``; its loop is stopped and its store closed afterwards."""
    built = build_server(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"), load_config(default_config_text()), auth=False, home=tmp_path)
    built.client = TestClient(built.app)
    yield built
    built.loop.stop()
    built.store.close()


class LoneLeadership:
    """Leadership as a lone leader sees it: held, and still held when the tick checks (the
    PostgreSQL lock itself is tested in test_multi_server)."""

    term = 1

    def is_leader(self) -> bool:
        return True

    def confirm(self) -> bool:
        return True


@pytest.fixture
def lone_leader(sqlite_server):
    """A ``LeaderLoop`` around ``sqlite_server``'s own loop, as if it was built in this term."""
    from lahar.server.leader import LeaderLoop

    inner = sqlite_server.loop
    leader = LeaderLoop(lambda: inner, LoneLeadership())
    leader._term = LoneLeadership.term
    return leader
