"""Two real ``lahar server`` processes on one PostgreSQL database, on loopback.

Both answer the API; exactly one (the leader) runs the control loop. Kill the leader with
SIGKILL under load: the other takes over within seconds, and then no task is bound twice, no
node is over-committed at any version of the history, and every acknowledged job is there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from lahar.quantity import parse_quantity
from pg import PASSWORD
from test_durability import JOBS, check_invariants, free_port, job

PODS = "/api/v1/namespaces/default/pods"
NODE_CPU = 8


class Server:
    def __init__(self, url: str, log: Path) -> None:
        self.port, self.log = free_port(), log
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "lahar.cli.main", "server", "--db", url, "--port", str(self.port), "--period", "0.1s", "--no-auth"]
        with open(log, "wb") as err:
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)

    def wait_ready(self) -> "Server":
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(self.base + "/healthz", timeout=0.5).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError(f"server did not start:\n{self.output()}")

    def leader(self) -> bool:
        return httpx.get(self.base + "/lahar/v1/leader", timeout=5).json()["leader"]

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def servers(pg_cluster, tmp_path, request):
    url = pg_cluster.url(pg_cluster.create_database(request.node.name))
    started: list[Server] = []
    try:
        for name in ("a", "b"):
            started.append(Server(url, tmp_path / f"{name}.log"))
        for server in started:
            server.wait_ready()
        yield started
    finally:
        for server in started:
            server.stop()


def metric(base: str, name: str) -> float:
    for line in httpx.get(base + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name} at {base}")


def add_nodes(base: str, count: int) -> None:
    for n in range(count):
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{n}"}, "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": "32Gi"}}}
        assert httpx.post(base + "/api/v1/nodes", json=node, timeout=10).status_code == 201


def short_job(i: int, seconds: int = 1) -> dict:
    body = job(i)
    body["metadata"]["annotations"] = {"lahar.dev/duration": f"{seconds}s"}
    return body


def submit(bases: list[str], numbers: range, make=job) -> set[str]:
    acknowledged: set[str] = set()

    def one(i: int) -> None:
        try:
            response = httpx.post(bases[i % len(bases)] + JOBS, json=make(i), timeout=10)
        except httpx.HTTPError:
            return
        if response.status_code == 201:
            acknowledged.add(f"j{i}")

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(one, numbers))
    return acknowledged


def pod_history(base: str) -> list[dict]:
    """Every pod change since the beginning, in order (the store keeps the whole history here)."""
    lines = httpx.get(base + PODS, params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "1"}, timeout=30).text
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


def check_history(events: list[dict]) -> None:
    """Replay the pods' history: a pod is bound once and stays on its node; at no version does a
    node hold more running or pending pods than its cpu."""
    live: dict[str, dict] = {}
    bound: dict[str, str] = {}
    used: dict[str, float] = {}

    def load(pod: dict | None) -> tuple[str | None, float]:
        if pod is None or (pod.get("status") or {}).get("phase", "Pending") not in ("Running", "Pending"):
            return None, 0.0
        cpu = float(parse_quantity(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]))
        return pod["spec"].get("nodeName"), cpu

    for event in events:
        pod, kind = event["object"], event["type"]
        name = pod["metadata"]["name"]
        if kind == "ADDED":
            assert name not in live, f"pod {name} created twice"
        node = pod["spec"].get("nodeName")
        if node:
            assert bound.setdefault(name, node) == node, f"pod {name} bound to {bound[name]}, then to {node}"
        old_node, old_cpu = load(live.get(name))
        if old_node:
            used[old_node] -= old_cpu
        if kind == "DELETED":
            live.pop(name, None)
            continue
        live[name] = pod
        new_node, new_cpu = load(pod)
        if new_node:
            used[new_node] = used.get(new_node, 0.0) + new_cpu
            assert used[new_node] <= NODE_CPU, f"node {new_node} over-committed at resourceVersion {pod['metadata']['resourceVersion']}: {used[new_node]} cpu"


def test_two_servers_serve_one_database(servers):
    a, b = servers
    assert sorted([a.leader(), b.leader()]) == [False, True]  # exactly one leads
    for server in servers:  # the start-up line names the database, never its password
        assert "(database: postgresql://lahar@127.0.0.1:" in server.output()
        assert PASSWORD not in server.output()
    add_nodes(a.base, 1)
    acknowledged = submit([b.base], range(4))
    assert acknowledged == {"j0", "j1", "j2", "j3"}
    seen_on_a = {j["metadata"]["name"] for j in httpx.get(a.base + JOBS, timeout=10).json()["items"]}
    assert seen_on_a == acknowledged  # written through b, read through a
    deadline = time.monotonic() + 20  # the leader (a) schedules what b accepted; b shows it
    while time.monotonic() < deadline:
        if len([p for p in check_invariants(b.base).values() if p["spec"].get("nodeName")]) == 4:
            break
        time.sleep(0.1)
    assert len([p for p in check_invariants(b.base).values() if p["spec"].get("nodeName")]) == 4
    leader, follower = (a, b) if a.leader() else (b, a)
    assert metric(leader.base, "lahar_binds_total") == 4  # one control loop did all the work
    assert metric(follower.base, "lahar_scheduling_cycle_seconds_count") == 0
    assert metric(follower.base, "lahar_binds_total") == 0

    # A watch on b sees a write made through a as it happens.
    version = httpx.get(b.base + "/apis/scheduling.volcano.sh/v1beta1/queues", timeout=10).json()["metadata"]["resourceVersion"]
    seen: list[tuple[dict, float]] = []

    def watch() -> None:
        params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "10"}
        with httpx.stream("GET", b.base + "/apis/scheduling.volcano.sh/v1beta1/queues", params=params, timeout=30) as stream:
            for line in stream.iter_lines():
                if line.strip():
                    seen.append((json.loads(line), time.monotonic()))
                    return

    watching = threading.Thread(target=watch)
    watching.start()
    time.sleep(0.3)
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"}, "spec": {"weight": 1}}
    created = httpx.post(a.base + "/apis/scheduling.volcano.sh/v1beta1/queues", json=queue, timeout=10)
    written = time.monotonic()
    assert created.status_code == 201
    watching.join()
    assert seen and seen[0][0]["type"] == "ADDED" and seen[0][0]["object"]["metadata"]["name"] == "team"
    assert seen[0][1] - written < 1.0  # woken by NOTIFY, not by the 10 s timeout

    # Compare-and-swap holds across servers: a stale version written through a is refused.
    stale = created.json()
    fresh = httpx.get(b.base + "/apis/scheduling.volcano.sh/v1beta1/queues/team", timeout=10).json()
    fresh["spec"]["weight"] = 2
    assert httpx.put(b.base + "/apis/scheduling.volcano.sh/v1beta1/queues/team", json=fresh, timeout=10).status_code == 200
    stale["spec"]["weight"] = 3
    conflict = httpx.put(a.base + "/apis/scheduling.volcano.sh/v1beta1/queues/team", json=stale, timeout=10)
    assert conflict.status_code == 409, conflict.text


def test_leader_killed_the_other_takes_over_without_double_binding(servers):
    a, b = servers
    add_nodes(a.base, 3)  # 24 cpu: 24 one-cpu jobs at a time
    acknowledged = submit([a.base, b.base], range(36), short_job)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # kill in the middle of the work
        if len([p for p in check_invariants(b.base).values() if p["spec"].get("nodeName")]) >= 10:
            break
        time.sleep(0.05)
    leader, survivor = (a, b) if a.leader() else (b, a)
    assert not survivor.leader()

    late: set[str] = set()
    during = threading.Thread(target=lambda: late.update(submit([survivor.base], range(36, 48), short_job)))
    os.kill(leader.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    during.start()
    while not survivor.leader():
        assert time.monotonic() - killed < 10, f"no takeover after 10 s:\n{survivor.output()}"
        time.sleep(0.02)
    takeover = time.monotonic() - killed
    during.join()
    assert takeover < 5.0, f"takeover took {takeover:.2f} s"
    acknowledged |= late

    stored = {j["metadata"]["name"] for j in httpx.get(survivor.base + JOBS, timeout=10).json()["items"]}
    assert acknowledged <= stored, f"lost acknowledged jobs: {sorted(acknowledged - stored)}"
    deadline = time.monotonic() + 45  # the new leader finishes the work: every task runs once
    while time.monotonic() < deadline:
        pods = check_invariants(survivor.base)
        if len(pods) == len(stored) and all(p["status"].get("phase") == "Succeeded" for p in pods.values()):
            break
        time.sleep(0.2)
    pods = check_invariants(survivor.base)
    phases = sorted(p["status"].get("phase") for p in pods.values())
    assert len(pods) == len(stored) and set(phases) == {"Succeeded"}, f"{phases}\n{survivor.output()}"
    check_history(pod_history(survivor.base))
    print(f"takeover after kill -9 of the leader: {takeover:.2f} s")


def test_a_deposed_leader_writes_nothing_and_the_other_server_goes_on(pg_cluster, request):
    """The leader's lock session ends (an operator's pg_terminate_backend, a cut connection)
    before its own beat notices: its next tick is fenced off inside its transaction."""
    import psycopg

    from lahar.scheduler.framework.config import default_config_text, load_config
    from lahar.server.main import build_server
    from lahar.store import PostgresStore

    url = pg_cluster.url(pg_cluster.create_database(request.node.name))
    conf = load_config(default_config_text())
    one, two = PostgresStore(url), PostgresStore(url)
    first, second = build_server(one, conf, auth=False), build_server(two, conf, auth=False)
    try:
        first.loop.leadership.interval = 3600.0  # its beat never runs here: only the fence acts
        second.loop.leadership.interval = 0.05
        first.loop.leadership.start()
        second.loop.leadership.start()
        assert (first.loop.leading, second.loop.leading) == (True, False)
        assert second.loop.tick() is None  # a follower does nothing
        first.service.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}})
        first.loop.tick()
        second.service.create(job(1))
        pid = first.loop.leadership._session[0]
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # it returns once the signal is sent; until the backend has gone it still holds the lock
            gone_by = time.monotonic() + 5
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() and time.monotonic() < gone_by:
                time.sleep(0.01)
        version = one.current_version()
        assert first.loop.tick() is None and one.current_version() == version  # fenced: nothing written
        assert first.loop.skipped == 1 and not first.loop.leading  # the fence said no
        deadline = time.monotonic() + 5
        while not second.loop.leading and time.monotonic() < deadline:
            time.sleep(0.02)
        assert second.loop.leading
        for _ in range(3):
            second.loop.tick()
        pods, _ = two.list("Pod")
        assert [p["spec"].get("nodeName") for p in pods] == ["n0"]
    finally:
        for server in (first, second):
            server.loop.leadership.stop()
            server.store.close()


def test_servers_starting_together_on_an_empty_database_all_start(pg_cluster, request):
    """Each races the others to create the built-in queues (root, then default)."""
    from lahar.scheduler.framework.config import default_config_text, load_config
    from lahar.server.main import build_server
    from lahar.store import PostgresStore

    url = pg_cluster.url(pg_cluster.create_database(request.node.name))
    conf = load_config(default_config_text())
    stores = [PostgresStore(url) for _ in range(4)]
    built, errors = [], []
    barrier = threading.Barrier(len(stores))

    def start(store) -> None:
        barrier.wait()
        try:
            built.append(build_server(store, conf, auth=False))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == [] and len(built) == len(stores)
        assert sorted(q["metadata"]["name"] for q in stores[0].list("Queue")[0]) == ["default", "root"]
    finally:
        for store in stores:
            store.close()
