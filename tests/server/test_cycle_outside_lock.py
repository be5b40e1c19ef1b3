"""The scheduling cycle runs outside the service lock and the store transaction: requests are
served while it runs, and what they changed meanwhile is taken in before the cycle's writes.
A decision about a pod or a node that a request removed meanwhile is dropped, never written
over the removal (the pod is not made again by its bind)."""

from __future__ import annotations

import threading

import pytest

import lahar.server.loop as loop_module
from test_api import JOBS, NODES, job, node

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def server(sqlite_server):
    return sqlite_server


def _during_the_cycle(monkeypatch, requests) -> list[bool]:
    """Make ``requests()`` run on another thread while the next cycle runs; the list returned
    says whether they finished while the cycle waited for them (two seconds at most). Later
    cycles run as they are (the requests are not made again)."""
    finished: list[bool] = []
    real_cycle = loop_module.run_cycle

    def cycle_with_requests(*args, **kwargs):
        result = real_cycle(*args, **kwargs)
        if finished:
            return result
        other = threading.Thread(target=requests, daemon=True)
        other.start()
        other.join(2.0)  # a tick that held the lock through its cycle would make it wait longer
        finished.append(not other.is_alive())
        return result

    monkeypatch.setattr(loop_module, "run_cycle", cycle_with_requests)
    return finished


def _metric(server, name: str) -> float:
    lines = [line for line in server.client.get("/metrics").text.splitlines() if line.startswith(name + " ")]
    return float(lines[0].split()[1])


def test_requests_are_served_while_the_cycle_runs_and_a_deleted_pods_bind_is_dropped(server, monkeypatch):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    for name in ("a", "b"):
        c.post(JOBS, json=job(name))
    service = server.service

    def requests() -> None:
        service.delete("Pod", "default/b-main-0")  # the cycle has just decided to bind it
        service.create(job("c"))

    finished = _during_the_cycle(monkeypatch, requests)
    server.loop.tick()  # the controllers make a's and b's pods, the cycle binds both
    assert finished == [True]  # the requests did not wait for the tick
    assert c.get(f"{PODS}/a-main-0").json()["spec"]["nodeName"] == "n1"
    assert c.get(f"{PODS}/b-main-0").status_code == 404  # its bind was dropped, not written over
    assert c.get(f"{JOBS}/c").status_code == 200
    assert _metric(server, "lahar_binds_total") == 1  # what was carried out
    bound = [e for e in service.list("LaharEvent")[0] if e["reason"] == "Bound"]
    assert [e["involvedObject"]["name"] for e in bound] == ["default/a"]
    server.loop.tick()  # c's pod is made and bound
    assert c.get(f"{PODS}/c-main-0").json()["spec"]["nodeName"] == "n1"


def test_a_bind_to_a_node_deleted_while_the_cycle_ran_is_dropped(server, monkeypatch):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    _during_the_cycle(monkeypatch, lambda: server.service.delete("Node", "n1"))
    server.loop.tick()
    assert "nodeName" not in c.get(f"{PODS}/a-main-0").json()["spec"]
    assert _metric(server, "lahar_binds_total") == 0
    c.post(NODES, json=node("n2", cpu="4"))
    server.loop.tick()
    assert c.get(f"{PODS}/a-main-0").json()["spec"]["nodeName"] == "n2"
