"""A tick that fails part-way writes nothing (its store transaction is undone), and the control
loop must not go on believing what it wrote: the next tick starts again from the store."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.loop import StoreWorld
from lahar.server.main import build_server
from lahar.store import open_store
from test_api import JOBS, NODES, job, node

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def server(tmp_path):
    built = build_server(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"), load_config(default_config_text()), auth=False, home=tmp_path)
    built.client = TestClient(built.app)
    yield built
    built.loop.stop()
    built.store.close()


def _fail_once(monkeypatch, method: str) -> None:
    original = getattr(StoreWorld, method)

    def broken(self, *args, **kwargs):
        monkeypatch.setattr(StoreWorld, method, original)
        raise RuntimeError("disk full")

    monkeypatch.setattr(StoreWorld, method, broken)


def test_a_failed_tick_is_undone_and_the_next_one_does_its_work(server, monkeypatch):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    _fail_once(monkeypatch, "write_reasons")  # after the pod and its podgroup were made and bound
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert c.get(f"{PODS}/a-main-0").status_code == 404  # the failed tick's writes were undone
    server.loop.tick()
    pod = c.get(f"{PODS}/a-main-0").json()
    assert pod["spec"]["nodeName"] == "n1"
    server.loop.tick()
    assert c.get(f"{JOBS}/a").json()["status"]["state"]["phase"] == "Running"


def test_a_tick_failing_after_binds_binds_them_again(server, monkeypatch):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("b"))
    server.loop.tick()  # makes the pod and binds it
    c.post(JOBS, json=job("c"))
    _fail_once(monkeypatch, "write_allocations")
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert c.get(f"{PODS}/c-main-0").status_code == 404
    server.loop.tick()
    assert c.get(f"{PODS}/c-main-0").json()["spec"]["nodeName"] == "n1"
    assert server.loop.errors == 0  # ticks called directly: the caller saw the error
