"""Dry runs and expected starts over HTTP, simulated forward from the server's state."""

from __future__ import annotations

from test_api import JOBS, NODES, Q, job, node, queue

DRY = "/lahar/v1/namespaces/default/jobs/dry-run"


def with_a_finished_job(server):
    """A job of 5 minutes has run and finished: its queue's usage history has a typical run time."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    assert c.post(JOBS, json=job("done", cpu="4", **{"lahar.dev/duration": "5m"})).status_code == 201
    for _ in range(3):
        server.loop.tick()
        server.clock.advance(150)
    server.loop.tick()
    return c


def busy(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    assert c.post(JOBS, json=job("a", cpu="1", replicas=4, **{"lahar.dev/duration": "10m"})).status_code == 201
    server.loop.tick()
    server.loop.tick()
    server.clock.advance(120)
    return c


def test_dry_run_stores_nothing_and_says_when_the_job_would_start(server):
    c = busy(server)
    answer = c.post(DRY, json=job("b", cpu="2"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["admitted"] and not body["startsNow"]
    assert body["expectedWaitSeconds"] == 480.0 and body["summary"] == "expected to start in 8m00s"
    assert c.get(f"{JOBS}/b").status_code == 404


def test_dry_run_of_a_job_that_fits_starts_now(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    body = c.post(DRY, json=job("b", cpu="2")).json()
    assert body["startsNow"] and body["summary"] == "would start now"


def test_dry_run_to_a_closed_queue_says_it_would_be_refused(server):
    c = busy(server)
    c.post(Q, json=queue("shut"))
    c.post(f"{Q}/shut/close")
    body = c.post(DRY, json=job("b", "shut")).json()
    assert body["admitted"] is False and "queue shut is Closed" in body["message"]


def test_dry_run_takes_only_jobs_and_checks_the_body(server):
    c = server.client
    answer = c.post(DRY, json=queue("x"))
    assert answer.status_code == 400 and "a dry run takes a vcjob (kind Job), not Queue" in answer.json()["message"]
    bad = c.post(DRY, json={**job("b"), "spec": {"queue": "default", "tasks": [{"replicas": -1}]}}).json()
    assert bad["admitted"] is False and "spec.tasks[0].replicas" in bad["message"], bad
    nameless = c.post(DRY, json={"kind": "Job"}).json()
    assert nameless["admitted"] is False and "metadata.name: Required value" in nameless["message"]


def test_a_waiting_job_has_an_estimate(server):
    c = busy(server)
    assert c.post(JOBS, json=job("b", cpu="3")).status_code == 201
    server.loop.tick()
    body = c.get("/lahar/v1/namespaces/default/jobs/b/estimate").json()
    assert body["expectedWaitSeconds"] == 480.0
    assert c.get("/lahar/v1/namespaces/default/jobs/nope/estimate").status_code == 404


def test_tasks_without_a_duration_take_their_queue_typical_run_time(server):
    c = with_a_finished_job(server)
    assert c.post(JOBS, json=job("open-ended", cpu="4")).status_code == 201
    server.loop.tick()
    server.loop.tick()
    body = c.post(DRY, json=job("next", cpu="1")).json()
    assert any("typical run time" in note for note in body["assumptions"]), body
    assert body["expectedWaitSeconds"] is not None and 0 < body["expectedWaitSeconds"] <= 300


def test_the_usage_history_is_read_under_the_lock_the_loop_changes_it_under(server, monkeypatch):
    """The loop changes its usage history inside its tick, holding the service lock; a forecast
    reads it from a request's thread and must hold that lock too."""
    c = with_a_finished_job(server)
    ledger = server.loop.usage.ledger
    held = []
    rows = ledger.rows

    def rows_holding(*args, **kwargs):
        held.append(server.service.lock._is_owned())
        return rows(*args, **kwargs)

    monkeypatch.setattr(ledger, "rows", rows_holding)
    assert c.post(DRY, json=job("next", cpu="1")).status_code == 200
    assert held and all(held)
