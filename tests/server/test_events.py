"""Events a person should see: bound, evicted for which queue, pending reason changed, queue
state changed, command processed or ignored. One per job per decision, on change only, bounded."""

from __future__ import annotations

from lahar.server.events import EventLog, parse_for
from lahar.store import open_store

Q = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
COMMANDS = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands"
NODES = "/api/v1/nodes"
EVENTS = "/lahar/v1/events"


def queue(name: str, **spec) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def job(name: str, queue_name: str = "default", cpu: str = "1", replicas: int = 1) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "queue": queue_name,
            "minAvailable": 1,
            "tasks": [{"name": "main", "replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}],
        },
    }


def node(name: str, cpu: str = "4") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "16Gi"}}}


def command(name: str, action: str, kind: str, target: str) -> dict:
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": name}, "action": action, "target": {"kind": kind, "name": target}}


def ticks(server, n: int = 1, step: float = 1.0) -> None:
    for _ in range(n):
        server.clock.advance(step)
        server.loop.tick()


def events(server, for_: str | None = None) -> list[dict]:
    answer = server.client.get(EVENTS, params={"for": for_} if for_ else None)
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


def reasons(items: list[dict]) -> list[str]:
    return [e["reason"] for e in items if e["type"] != "Audit"]


def test_a_job_that_starts_is_one_bound_event_however_many_tasks(server):
    c = server.client
    c.post(NODES, json=node("n1", "8"))
    c.post(Q, json=queue("team-a"))
    c.post(JOBS, json=job("wide", "team-a", replicas=6))
    ticks(server, 5)
    bound = [e for e in events(server, "job/wide") if e["reason"] == "Bound"]
    assert len(bound) == 1
    assert bound[0]["message"] == "6 tasks of default/wide bound to n1"
    assert bound[0]["metadata"]["labels"] == {"lahar.dev/queue": "team-a", "lahar.dev/namespace": "default", "lahar.dev/job": "wide"}
    assert "Bound" in reasons(events(server, "queue/team-a"))
    assert "Bound" not in reasons(events(server, "queue/default"))
    selected = c.get("/apis/lahar.dev/v1alpha1/events", params={"labelSelector": "lahar.dev/job=wide"}).json()["items"]
    assert [e["reason"] for e in selected] == ["Bound"]


def test_a_waiting_job_reports_its_reason_once_not_every_tick(server):
    c = server.client
    c.post(NODES, json=node("n1", "2"))
    c.post(JOBS, json=job("big", cpu="4"))
    ticks(server, 10)
    waiting = [e for e in events(server, "job/default/big") if e["reason"] == "PendingReason"]
    assert len(waiting) == 1
    assert waiting[0]["message"].startswith("default/big waits: ")


def test_reclaim_names_the_queue_it_was_for(server):
    """Queue b borrowed the whole idle cluster; queue a submits and takes its share back."""
    c = server.client
    c.post(NODES, json=node("n1", "4"))
    c.post(Q, json=queue("a"))
    c.post(Q, json=queue("b"))
    c.post(JOBS, json=job("lender", "b", replicas=4))
    ticks(server, 3)
    c.post(JOBS, json=job("claimer", "a", cpu="2"))
    ticks(server, 6)
    evicted = [e for e in events(server, "job/lender") if e["type"] == "Warning"]
    assert evicted, events(server)
    assert evicted[0]["reason"] == "Reclaimed"
    assert "for job default/claimer of queue a" in evicted[0]["message"]
    assert evicted[0]["metadata"]["labels"]["lahar.dev/queue"] == "b"


def test_commands_say_whether_they_were_processed_or_ignored(server):
    c = server.client
    c.post(Q, json=queue("q1"))
    c.post(COMMANDS, json=command("c1", "SuspendQueue", "Queue", "q1"))
    ticks(server)
    c.post(COMMANDS, json=command("c2", "SuspendQueue", "Queue", "q1"))
    c.post(COMMANDS, json=command("c4", "CloseQueue", "Queue", "root"))
    ticks(server)
    items = [e for e in events(server) if e["type"] != "Audit"]
    by_message = {e["message"]: e for e in items}
    processed = by_message["command default/c1 (SuspendQueue Queue/q1) processed: queue q1: Open -> Suspended"]
    assert processed["reason"] == "CommandProcessed"
    assert by_message["command default/c2 (SuspendQueue Queue/q1) processed: nothing to change"]["type"] == "Normal"
    assert by_message["command default/c4 (CloseQueue Queue/root) ignored: the root queue can never be closed or suspended"]["reason"] == "CommandIgnored"
    state_changes = [e for e in events(server, "queue/q1") if e["reason"] == "SuspendQueue"]
    assert [e["message"] for e in state_changes] == ["queue q1: Open -> Suspended"]
    assert c.get(COMMANDS).json()["items"] == []


def test_for_rejects_what_is_neither_a_queue_nor_a_job(server):
    answer = server.client.get(EVENTS, params={"for": "node/n1"})
    assert answer.status_code == 400
    assert "queue/NAME or job/[NAMESPACE/]NAME" in answer.json()["message"]
    assert parse_for("job/team/x") == ("Job", "team/x")
    assert parse_for("q/a") == ("Queue", "a")


def test_retention_drops_the_oldest_in_one_go_each_a_deletion_of_its_own(tmp_path):
    """On SQLite: the oldest events go first, each with its own DELETED change (a watcher of
    events sees every one leave), and one deleted by another writer meanwhile is not counted."""
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    now = [1000.0]
    log = EventLog(store, lambda: now[0], max_events=400, prune_every=0.0)
    with store.batch():
        names = [log.emit("Queue", "q", "R", f"m{i}", queue="q", now=1000.0 + i)["metadata"]["name"] for i in range(1000)]
    store.delete("LaharEvent", names[3])
    start = store.current_version()
    with store.batch():
        assert log.prune(now[0]) == 599
    left = sorted(store.list("LaharEvent")[0], key=lambda e: e["timestamp"])
    assert [e["message"] for e in left] == [f"m{i}" for i in range(600, 1000)]
    gone = store.watch(start)
    assert [(e.type, e.key) for e in gone] == [("DELETED", name) for name in names[:600] if name != names[3]]
    assert [e.resource_version for e in gone] == list(range(start + 1, start + 600))
    store.close()


def test_a_busy_server_drops_old_events_a_little_at_a_time():
    """700 events a second (a server binding 350 jobs a second) over a full log: each second's
    look drops about a second's worth, never tens of thousands in one tick, which holds the
    write lock while it deletes (requests wait); the log stays near its bound meanwhile."""
    store = open_store("memory://")
    now = [1000.0]
    log = EventLog(store, lambda: now[0], max_events=2000)
    dropped = []
    for second in range(40):
        with store.batch():
            for i in range(700):
                log.emit("Job", f"default/j{second}-{i}", "Bound", "1 task bound", now=now[0])
            dropped.append(log.prune(now[0]))
        now[0] += 1.0
    assert max(dropped) <= 1400 and sum(dropped) == 40 * 700 - 2000
    assert len(store.list("LaharEvent")[0]) == 2000


def test_a_prune_does_not_read_its_own_deletions_back_but_misses_no_other_write(tmp_path):
    """The next look starts after the log's own deletions, unless another writer came between
    its look and its deletions: then the look reads them all, and the other writer's event is
    known (and dropped in its turn)."""
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    now = [1000.0]
    log = EventLog(store, lambda: now[0], max_events=5, prune_every=0.0)
    seen = []
    real_watch = store.watch

    def watch(since, kinds=None, timeout=0.0):
        found = real_watch(since, kinds, timeout)
        seen.extend(e.type for e in found)
        return found

    store.watch = watch
    for i in range(10):
        log.emit("Queue", "q", "R", f"m{i}", queue="q")
    with store.batch():
        assert log.prune(now[0]) == 5
    seen.clear()
    log.emit("Queue", "q", "R", "m10", queue="q")
    assert log.prune(now[0]) == 1
    assert seen == ["ADDED"]  # the five deletions were not read back
    real_delete_many = store.delete_many

    def another_writer_first(kind, keys):
        log.emit("Queue", "q", "R", "between", queue="q", now=now[0] + 1)  # as another server would
        return real_delete_many(kind, keys)

    store.delete_many = another_writer_first
    log.emit("Queue", "q", "R", "m11", queue="q")
    assert log.prune(now[0]) == 1
    store.delete_many = real_delete_many
    log.prune(now[0])  # reads "between" and the deletion it came before
    assert "between" in [e["message"] for e in store.list("LaharEvent")[0]]
    assert sorted(name for _, name in log._known) == sorted(e["metadata"]["name"] for e in store.list("LaharEvent")[0])
    for i in range(5):
        log.emit("Queue", "q", "R", f"late{i}", queue="q", now=now[0] + 2)
    log.prune(now[0])
    assert [e["message"] for e in store.list("LaharEvent")[0] if e["message"] == "between"] == []
    store.close()


def test_events_and_audit_records_are_written_when_a_drawn_name_is_taken(monkeypatch):
    """Every audit record's name comes from one stem, and a queue's events from the queue's
    name: with thousands kept, a new name is sometimes one already taken. The write goes on
    under a name drawn again; the tick or request that made it does not fail."""
    import lahar.store.base as base

    store = open_store("memory://")
    log = EventLog(store, lambda: 1000.0)
    draws = iter(["aaaaa", "aaaaa", "bbbbb"])
    monkeypatch.setattr(base, "_name_suffix", lambda: next(draws))
    log.emit("Queue", "q", "R", "first", queue="q")
    log.emit("Queue", "q", "R", "second", queue="q")
    assert sorted(e["metadata"]["name"] for e in store.list("LaharEvent")[0]) == ["q-aaaaa", "q-bbbbb"]


def test_retention_keeps_the_newest_events_and_drops_old_ones():
    store = open_store("memory://")
    now = [1000.0]
    log = EventLog(store, lambda: now[0], max_events=3, max_age=100.0, prune_every=0.0)
    for i in range(5):
        log.emit("Queue", "q", "R", f"m{i}", queue="q")
        now[0] += 1
    assert log.prune(now[0]) == 2
    assert sorted(e["message"] for e in store.list("LaharEvent")[0]) == ["m2", "m3", "m4"]
    now[0] += 200
    log.emit("Queue", "q", "R", "fresh", queue="q")
    log.prune(now[0])
    assert [e["message"] for e in store.list("LaharEvent")[0]] == ["fresh"]
    again = EventLog(store, lambda: now[0], max_events=3)  # a restart lists what is there
    assert [name for _, name in again._known] == [e["metadata"]["name"] for e in store.list("LaharEvent")[0]]


def _nulls(value, path: str = "") -> list[str]:
    if value is None:
        return [path or "."]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _nulls(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _nulls(item, f"{path}[{i}]")]
    return []


def test_an_audit_record_without_authentication_names_nobody_and_holds_no_null(tmp_path):
    """With authentication off nobody is known: the record says so in its message and has no
    ``user`` (an empty value is left out, as in every object the server writes), so a reader
    of ``user`` finds it missing rather than null."""
    from lahar.server.service import ApiService

    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    ApiService(store).create(queue("ml", weight=1))
    audits = [e for e in store.list("LaharEvent")[0] if e["type"] == "Audit"]
    assert [e["message"] for e in audits] == ["anonymous (authentication off) create Queue ml"]
    assert "user" not in audits[0] and _nulls(audits[0]) == []
    store.close()
