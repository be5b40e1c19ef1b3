"""Seed scenarios 6 (suspend / resume) and 7 (closing drains) through the server's HTTP API."""

from __future__ import annotations

from test_api import JOBS, NODES, Q, job, node, queue


def phase(server, name: str) -> str:
    return server.client.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/{name}").json()["status"]["phase"]


def state(server, name: str) -> str:
    return server.client.get(f"{Q}/{name}").json()["status"]["state"]


def test_suspend_then_resume(server):
    c = server.client
    c.post(NODES, json=node("n1"))
    c.post(Q, json=queue("test"))
    assert c.post(f"{Q}/test/suspend").status_code == 200
    assert state(server, "test") == "Suspended"
    assert c.post(JOBS, json=job("job1", "test", replicas=2)).status_code == 201  # accepted
    for _ in range(3):
        server.loop.tick()
        server.clock.advance(1)
    assert phase(server, "job1") == "Pending"
    why = c.get("/lahar/v1/namespaces/default/jobs/job1/why").json()
    assert why["reason"]["message"] == "queue test is suspended"
    c.post(f"{Q}/test/resume")
    for _ in range(3):
        server.loop.tick()
        server.clock.advance(1)
    assert state(server, "test") == "Open"
    assert phase(server, "job1") == "Running"


def test_closing_drains_then_closed_then_deletable(server):
    c = server.client
    c.post(NODES, json=node("n1"))
    c.post(Q, json=queue("test"))
    c.post(JOBS, json=job("job1", "test", cpu="2", **{"lahar.dev/duration": "60s"}))
    for _ in range(2):
        server.loop.tick()
        server.clock.advance(1)
    assert phase(server, "job1") == "Running"
    c.post(f"{Q}/test/close")
    assert state(server, "test") == "Closing"
    refused = c.post(JOBS, json=job("job2", "test"))
    assert refused.status_code == 422 and "queue test is Closing" in refused.json()["message"]
    assert c.delete(f"{Q}/test").status_code == 422
    server.clock.advance(61)
    for _ in range(3):
        server.loop.tick()
        server.clock.advance(1)
    assert phase(server, "job1") == "Completed"
    assert state(server, "test") == "Closed"
    assert c.delete(f"{Q}/test").status_code == 200
