"""A tick writes in two transactions, the controllers' and then the cycle's: one that fails
writes nothing (it is undone), and the control loop must not go on believing what it wrote:
the next tick starts again from the store."""

from __future__ import annotations

import threading

import pytest

from lahar.server.loop import StoreWorld
from lahar.server.usage_history import UsageHistory
from test_api import JOBS, NODES, job, node

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def server(sqlite_server):
    return sqlite_server


def _fail_once(monkeypatch, method: str) -> None:
    original = getattr(StoreWorld, method)

    def broken(self, *args, **kwargs):
        monkeypatch.setattr(StoreWorld, method, original)
        raise RuntimeError("disk full")

    monkeypatch.setattr(StoreWorld, method, broken)


def test_a_failed_tick_is_undone_and_the_next_one_does_its_work(server, monkeypatch):
    """The controllers' writes (the job's podgroup and pod) are one transaction, committed before
    the cycle; the cycle's writes (binds, phases, reasons) another, undone when it fails."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    _fail_once(monkeypatch, "write_reasons")  # after the pod was bound and the phases written
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    pod = c.get(f"{PODS}/a-main-0").json()
    assert "nodeName" not in pod["spec"]  # the bind was undone; the pod the controller made stays
    assert c.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/a").json()["status"].get("phase") in (None, "Pending")
    _fail_once(monkeypatch, "reconcile_all")  # now the controllers' transaction fails: nothing new
    c.post(JOBS, json=job("b"))
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert c.get(f"{PODS}/b-main-0").status_code == 404
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
    assert "nodeName" not in c.get(f"{PODS}/c-main-0").json()["spec"]  # made, its bind undone
    server.loop.tick()
    assert c.get(f"{PODS}/c-main-0").json()["spec"]["nodeName"] == "n1"
    assert server.loop.errors == 0  # ticks called directly: the caller saw the error


def _buckets(history: UsageHistory) -> dict:
    return {key: bucket.to_json() for key, bucket in history.ledger.buckets.items()}


def test_usage_flushed_in_a_failed_tick_is_not_believed_written(server, monkeypatch):
    """The usage records a failed tick wrote were undone with it: the server must not go on
    believing them stored (a bucket that does not change again would never be written). After
    the failure the usage history is read again from the store, as at a restart: what the
    server answers is what the store keeps (the last flush), and nothing is counted twice."""
    c = server.client
    clock = iter([1000.0, 1060.0, 1125.0, 1130.0, 1190.0])
    server.loop.clock = clock.__next__
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    server.loop.tick()  # 1000: the pod is made and bound; the first flush is due at 1060
    server.loop.tick()  # 1060: 60 cpu-seconds, flushed
    _fail_once(monkeypatch, "skip_own_writes")  # 1125: after a flush of 125 cpu-seconds
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert c.delete(f"{JOBS}/a").status_code == 200  # nothing runs any more: no bucket changes
    server.loop.tick()  # 1130
    server.loop.tick()  # 1190: the next flush
    server.loop.stop()  # and a last one
    held = _buckets(server.loop.usage)
    assert held == _buckets(UsageHistory(server.store))  # what the store keeps, read as at a restart
    assert [bucket["usage"] for bucket in held.values()] == [{"cpu": 60.0}]
    rows = c.get("/lahar/v1/usage", params={"since": "30000d"}).json()["items"]  # the clock began in 1970
    assert [row["queue"] for row in rows] == ["default"]


def test_the_world_holds_what_the_store_holds_after_ticks(server):
    """What the loop wrote (created pods and podgroups with the uid and time the store stamped,
    binds, phases, statuses) is what it keeps in memory, field for field."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a", replicas=2))
    server.loop.tick()
    server.loop.tick()
    world = server.loop.world
    tables = {"Pod": world.pods, "PodGroup": world.podgroups, "Job": world.jobs}
    for kind, table in tables.items():
        stored = {item["metadata"]["name"]: item for item in server.store.list(kind)[0]}
        assert stored and {obj.name for obj in table.values()} == set(stored), kind
        for obj in table.values():
            assert obj.metadata.uid and obj.dump() == stored[obj.name], (kind, obj.name)


def _bind_watcher(server, seen: list):
    """``on_cycle`` wrapped to look, from another thread (another connection), at the pods the
    cycle bound: what a client reading the store at that moment would find."""
    from lahar.errors import NotFound

    observe = server.loop.on_cycle

    def observed(result, seconds, queues):
        bound = [d.task for d in result.decisions if d.type == "bind"]

        def look() -> None:
            for key in bound:
                try:
                    seen.append(server.store.get("Pod", key)["spec"].get("nodeName"))
                except NotFound:
                    seen.append(None)

        reader = threading.Thread(target=look)
        reader.start()
        reader.join(10)
        observe(result, seconds, queues)

    return observed


def _binds_total(server) -> float:
    lines = [line for line in server.client.get("/metrics").text.splitlines() if line.startswith("lahar_binds_total ")]
    return float(lines[0].split()[1])


def test_metrics_count_a_ticks_binds_only_once_they_are_stored(server):
    """``lahar_binds_total`` and the cycle metrics are reported after the tick's transaction
    commits: a client that sees the count sees the bound pods too (``bench/api.py`` waits on
    the count, then reads the pods)."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    seen: list = []
    server.loop.on_cycle = _bind_watcher(server, seen)
    server.loop.tick()  # makes the pod and binds it
    assert seen == ["n1"]
    assert _binds_total(server) == 1


def test_a_failed_tick_reports_nothing(server, monkeypatch):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    original = StoreWorld.skip_own_writes
    calls = []

    def last_step_fails(self):  # the tick's last step before it reports: its second call
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        original(self)

    monkeypatch.setattr(StoreWorld, "skip_own_writes", last_step_fails)
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert _binds_total(server) == 0 and server.loop.cycles == 1
    server.loop.tick()  # binds it again, for good
    assert _binds_total(server) == 1
    assert c.get(f"{PODS}/a-main-0").json()["spec"]["nodeName"] == "n1"


def test_a_leaders_tick_reports_once_its_fenced_transaction_commits(server, lone_leader):
    """Under ``LeaderLoop`` the tick's batch is a savepoint inside the fenced transaction: the
    report waits for that outer commit."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    seen: list = []
    server.loop.on_cycle = _bind_watcher(server, seen)
    lone_leader.tick()
    assert seen == ["n1"]
    assert _binds_total(server) == 1
