"""Load against a real ``lahar server`` process, and the invariants it must keep under it.

Shared by the load test and the fault tests. ``Load`` runs many client threads for a bounded
time; each thread submits vcjobs and podgroups with their pods, deletes some of its own work and
operates queues (open, close, suspend, resume, weight changes), and records every create and
delete the server acknowledged with a 2xx. A sampler thread lists pods and nodes during the run,
and a watch thread follows every pod change, so over-commitment and double binding are looked
for while the load runs, not only at the end.

The checks (``check_*``) raise ``AssertionError`` with the objects at fault.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import httpx

from lahar.quantity import parse_quantity

API = "/apis/batch.volcano.sh/v1alpha1"
JOBS = f"{API}/namespaces/default/jobs"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
PODS = "/api/v1/namespaces/default/pods"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
NODES = "/api/v1/nodes"
WORK_QUEUES = ("load-a", "load-b", "load-c")  # jobs go here; their state is changed under load
RESOURCES = ("cpu", "memory")
ACTIONS = ("close", "open", "suspend", "resume")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerProcess:
    """``lahar server`` on loopback over a SQLite file; ``token`` is None with --no-auth."""

    db: Path
    home: Path
    port: int
    auth: bool = True
    period: str = "0.2s"
    process: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict:
        if not self.auth:
            return {}
        return {"Authorization": "Bearer " + (self.home / "token").read_text().strip()}

    def start(self, timeout: float = 60) -> None:
        command = [sys.executable, "-m", "lahar.cli.main", "server", "--db", str(self.db), "--port", str(self.port), "--period", self.period]
        if not self.auth:
            command.append("--no-auth")
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / f"server-{self.starts}.log").open("w") as log:  # a file: a pipe nobody reads can block the server
            self.process = subprocess.Popen(command, env={**os.environ, "LAHAR_HOME": str(self.home)}, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"server did not start: {self.log()[-2000:]}")

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.home.glob("server-*.log")))

    def kill9(self) -> None:
        assert self.process is not None
        self.process.kill()  # SIGKILL: no shutdown code runs
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def client(self, timeout: float = 20) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=timeout)


# --------------------------------------------------------------------- the cluster


def seed_cluster(server: ServerProcess) -> None:
    """Demo-like nodes (three 16-CPU nodes, one 32-CPU node) and the work queues."""
    with server.client() as c:
        for name, cpu, memory in (("cpu-1", "16", "64Gi"), ("cpu-2", "16", "64Gi"), ("cpu-3", "16", "64Gi"), ("big-1", "32", "128Gi")):
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}
            c.post(NODES, json=node).raise_for_status()
        for i, name in enumerate(WORK_QUEUES):
            queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": i + 1}}
            c.post(QUEUES, json=queue).raise_for_status()


def container(cpu: str, memory: str) -> dict:
    return {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def vcjob(name: str, queue: str, rng: random.Random) -> dict:
    replicas = rng.randint(1, 3)
    cpu, memory = rng.choice(("500m", "1", "2", "3")), rng.choice(("512Mi", "1Gi", "2Gi"))
    task = {"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [container(cpu, memory)]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": {"queue": queue, "minAvailable": replicas, "tasks": [task]}}


def podgroup_with_pods(name: str, queue: str, rng: random.Random) -> tuple[dict, list[dict]]:
    members = rng.randint(1, 2)
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name}, "spec": {"queue": queue, "minMember": members}}
    cpu = rng.choice(("1", "2"))
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": {"schedulerName": "volcano", "containers": [container(cpu, "1Gi")]},
        }
        for i in range(members)
    ]
    return group, pods


# --------------------------------------------------------------------- the load


@dataclass
class Ledger:
    """What the server acknowledged (2xx), per thread merged at the end."""

    jobs: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    pods: set[str] = field(default_factory=set)
    deleted_jobs: set[str] = field(default_factory=set)
    deleted_groups: set[str] = field(default_factory=set)
    deleted_pods: set[str] = field(default_factory=set)
    maybe: set[str] = field(default_factory=set)  # sent, no answer (timeout, connection lost)
    current: str = ""  # the write being sent now
    requests: Counter = field(default_factory=Counter)  # "POST Job 201" -> count
    errors: list[str] = field(default_factory=list)  # 5xx or 4xx without a message

    def merge(self, other: "Ledger") -> None:
        for name in ("jobs", "groups", "pods", "deleted_jobs", "deleted_groups", "deleted_pods", "maybe"):
            getattr(self, name).update(getattr(other, name))
        self.requests.update(other.requests)
        self.errors += other.errors

    @property
    def sent(self) -> int:
        return sum(v for k, v in self.requests.items() if k != "refused")

    def doubt(self, mark: str) -> None:
        """``mark`` is about to be sent: in doubt until answered (``Kind/name``, ``-Kind/name``)."""
        # a mark already in doubt (an earlier request for it went unanswered) stays in doubt even
        # if this attempt never reaches the server: the earlier one may have been carried out
        self.current = "" if mark in self.maybe else mark
        self.maybe.add(mark)


class Load:
    """``clients`` threads hammering ``server`` for ``seconds``; a sampler and a pod watch beside.

    Answers allowed besides 2xx: 409 (a stale resourceVersion on a weight change), 422 (a job
    sent to a queue that is closing, an action the lifecycle ignores), 404 (deleting what a
    queue deletion or a restart took); connection failures while the server is down are counted
    as ``unanswered`` and the object as maybe-created. A 5xx, or a 4xx without a message naming
    what is wrong, is an error.
    """

    def __init__(self, server: ServerProcess, clients: int = 50, seconds: float = 15.0, seed: int = 7) -> None:
        self.server, self.clients, self.seconds, self.seed = server, clients, seconds, seed
        self.ledger = Ledger()
        self.samples = 0
        self.violations: list[str] = []
        self.bound: dict[str, str] = {}  # pod uid -> the first node the watch saw it bound to
        self.last_node: dict[str, str] = {}  # pod uid -> its nodeName in the latest event ("" unbound)
        self.rebinds = 0  # pods bound again after an eviction had unbound them
        self.watch_events = 0
        self.version = 0  # the newest resourceVersion the watch has seen
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # ------------------------------------------------------------- running

    def run(self, during: callable = None) -> None:
        """Run the load; ``during(load)`` is called in the middle (e.g. to kill the server)."""
        threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.clients)]
        threads += [threading.Thread(target=self._sampler, daemon=True), threading.Thread(target=self._watch, daemon=True)]
        for t in threads:
            t.start()
        if during is not None:
            time.sleep(self.seconds / 2)
            during(self)
            time.sleep(self.seconds / 2)
        else:
            time.sleep(self.seconds)
        self._stop.set()
        for t in threads:
            t.join(60)

    def _client(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        mine = Ledger()
        with self.server.client(timeout=30) as c:
            n = 0
            while not self._stop.is_set():
                n += 1
                roll, mine.current = rng.random(), ""
                try:
                    if roll < 0.45:
                        self._submit_job(c, mine, f"j{index}-{n}", rng)
                    elif roll < 0.60:
                        self._submit_group(c, mine, f"g{index}-{n}", rng)
                    elif roll < 0.75:
                        self._delete_some(c, mine, rng)
                    elif roll < 0.85:
                        self._operate_queue(c, mine, rng)
                    elif roll < 0.95:
                        self._change_weight(c, mine, rng)
                    else:
                        self._answer(mine, "GET Job", c.get(JOBS))
                except httpx.ConnectError:  # never reached the server: nothing is in doubt
                    mine.requests["refused"] += 1
                    mine.maybe.discard(mine.current)
                    time.sleep(0.2)
                except httpx.HTTPError:  # sent, no answer: what it asked for may or may not be done
                    mine.requests["unanswered"] += 1
                    time.sleep(0.2)
        with self._lock:
            self.ledger.merge(mine)

    def _answer(self, mine: Ledger, what: str, response: httpx.Response, allowed: tuple[int, ...] = ()) -> bool:
        mine.requests[f"{what} {response.status_code}"] += 1
        if 200 <= response.status_code < 300:
            return True
        if response.status_code >= 500 or response.status_code not in allowed:
            mine.errors.append(f"{what}: {response.status_code} {response.text[:300]}")
            return False
        message = response.json().get("message", "") if response.headers.get("content-type", "").startswith("application/json") else ""
        if not message:
            mine.errors.append(f"{what}: {response.status_code} without a message")
        return False

    def _submit_job(self, c: httpx.Client, mine: Ledger, name: str, rng: random.Random) -> None:
        mine.doubt(f"Job/{name}")
        if self._answer(mine, "POST Job", c.post(JOBS, json=vcjob(name, rng.choice(WORK_QUEUES), rng)), (422,)):
            mine.jobs.add(name)
        mine.maybe.discard(f"Job/{name}")

    def _submit_group(self, c: httpx.Client, mine: Ledger, name: str, rng: random.Random) -> None:
        group, pods = podgroup_with_pods(name, rng.choice(WORK_QUEUES), rng)
        mine.doubt(f"PodGroup/{name}")
        if not self._answer(mine, "POST PodGroup", c.post(PODGROUPS, json=group), (422,)):
            mine.maybe.discard(f"PodGroup/{name}")
            return
        mine.groups.add(name)
        mine.maybe.discard(f"PodGroup/{name}")
        for pod in pods:
            pod_name = pod["metadata"]["name"]
            mine.doubt(f"Pod/{pod_name}")
            if self._answer(mine, "POST Pod", c.post(PODS, json=pod), (422,)):
                mine.pods.add(pod_name)
            mine.maybe.discard(f"Pod/{pod_name}")

    def _delete_some(self, c: httpx.Client, mine: Ledger, rng: random.Random) -> None:
        live_jobs = sorted(mine.jobs - mine.deleted_jobs)
        live_groups = sorted(mine.groups - mine.deleted_groups)
        if live_jobs and (not live_groups or rng.random() < 0.7):
            name = rng.choice(live_jobs)
            if self._delete(c, mine, "Job", f"{JOBS}/{name}", name):
                mine.deleted_jobs.add(name)
        elif live_groups:
            name = rng.choice(live_groups)
            for pod in sorted(p for p in mine.pods - mine.deleted_pods if p.rsplit("-", 1)[0] == name):
                if self._delete(c, mine, "Pod", f"{PODS}/{pod}", pod):
                    mine.deleted_pods.add(pod)
            if self._delete(c, mine, "PodGroup", f"{PODGROUPS}/{name}", name):
                mine.deleted_groups.add(name)

    def _delete(self, c: httpx.Client, mine: Ledger, kind: str, path: str, name: str) -> bool:
        """True when the object is gone: deleted now (2xx), or 404 after an earlier delete of it
        went unanswered (the server died after committing it). A 404 for anything else is an
        acknowledged object lost, and an error."""
        mark = f"-{kind}/{name}"
        earlier = mark in mine.maybe
        mine.doubt(mark)
        response = c.delete(path)
        mine.maybe.discard(mark)
        if response.status_code == 404 and earlier:
            mine.requests[f"DELETE {kind} 404"] += 1
            return True
        return self._answer(mine, f"DELETE {kind}", response)

    def _operate_queue(self, c: httpx.Client, mine: Ledger, rng: random.Random) -> None:
        queue, action = rng.choice(WORK_QUEUES), rng.choice(ACTIONS)
        self._answer(mine, f"POST queue/{action}", c.post(f"{QUEUES}/{queue}/{action}"), (409, 422))

    def _change_weight(self, c: httpx.Client, mine: Ledger, rng: random.Random) -> None:
        """Read, change, write back; on 409 (the loop wrote the queue's status meanwhile) read
        again and retry, as kubectl does, up to three times."""
        name = rng.choice(WORK_QUEUES)
        for _ in range(3):
            queue = c.get(f"{QUEUES}/{name}")
            if not self._answer(mine, "GET Queue", queue):
                return
            body = queue.json()
            body["spec"]["weight"] = rng.randint(1, 10)
            response = c.put(f"{QUEUES}/{name}", json=body)
            if self._answer(mine, "PUT Queue", response, (409, 422)) or response.status_code != 409:
                return

    # ------------------------------------------------------------- watching

    def _sampler(self) -> None:
        with self.server.client(timeout=30) as c:
            while not self._stop.is_set():
                try:
                    pods = c.get("/api/v1/pods").json()["items"]
                    nodes = c.get(NODES).json()["items"]
                except (httpx.HTTPError, ValueError, KeyError):
                    time.sleep(0.3)
                    continue
                problems = over_commitment(pods, nodes)
                with self._lock:
                    self.samples += 1
                    self.violations += problems
                self._stop.wait(0.5)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.follow(5)

    def follow(self, seconds: float) -> None:
        """Read pod changes after the last one seen, for up to ``seconds`` (one watch request)."""
        try:
            with self.server.client(timeout=30) as c:
                params = {"watch": "true", "resourceVersion": self.version, "timeoutSeconds": seconds}
                with c.stream("GET", PODS, params=params) as stream:  # the namespaced list watches
                    for line in stream.iter_lines():
                        if not line:
                            continue
                        event = json.loads(line)
                        if "object" not in event:
                            with self._lock:
                                self.violations.append(f"not a watch event: {line[:200]}")
                            return
                        obj = event["object"]
                        self.version = max(self.version, int(obj.get("metadata", {}).get("resourceVersion") or 0))
                        problems = self._rebound([obj])
                        with self._lock:
                            self.watch_events += 1
                            self.violations += problems
                        if self._stop.is_set() and seconds > 1:
                            return
        except (httpx.HTTPError, ValueError):
            time.sleep(0.3)

    def _rebound(self, pods: list[dict]) -> list[str]:
        """Pods (by uid) moved from one node straight to another, as the watch saw them.

        Every change of a pod reaches the watch, so a pod evicted (its nodeName cleared: reclaim,
        preempt, a suspended or closed queue draining) and bound again later is seen unbound in
        between, and is counted in ``rebinds``; a nodeName that changes from one node to
        another without that is a task bound twice."""
        out = []
        with self._lock:
            for pod in pods:
                uid, node = pod.get("metadata", {}).get("uid"), (pod.get("spec") or {}).get("nodeName") or ""
                if not uid:
                    continue
                last = self.last_node.get(uid, "")
                if last and node and last != node:
                    out.append(f"pod {pod['metadata']['name']} (uid {uid}) bound to {last}, then to {node}")
                if node and not last and uid in self.bound:
                    self.rebinds += 1
                if node:
                    self.bound.setdefault(uid, node)
                self.last_node[uid] = node
        return out

    def check_final(self, pods: list[dict]) -> list[str]:
        """The final state agrees with the watch: each bound pod is where the watch last saw it."""
        with self._lock:
            return [f"pod {p['metadata']['name']} is on {p['spec'].get('nodeName')}, the watch last saw it on {self.last_node.get(p['metadata']['uid'])}"
                    for p in pods if (p.get("spec") or {}).get("nodeName") and self.last_node.get(p["metadata"]["uid"]) != p["spec"]["nodeName"]]


# --------------------------------------------------------------------- invariants


def requests_of(pod: dict) -> dict[str, Fraction]:
    total: dict[str, Fraction] = defaultdict(Fraction)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] += parse_quantity(value)
    return total


def holds_resources(pod: dict) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def over_commitment(pods: list[dict], nodes: list[dict]) -> list[str]:
    """Nodes whose bound, unfinished pods ask for more than the node has."""
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod in pods:
        if holds_resources(pod):
            for name, amount in requests_of(pod).items():
                used[pod["spec"]["nodeName"]][name] += amount
    allocatable = {n["metadata"]["name"]: n.get("status", {}).get("allocatable", {}) for n in nodes}
    out = []
    for node, amounts in used.items():
        for name in RESOURCES:
            limit = parse_quantity(allocatable.get(node, {}).get(name, "0"))
            if amounts[name] > limit:
                out.append(f"node {node} over-committed on {name}: {float(amounts[name])} > {float(limit)}")
        if sum(1 for p in pods if holds_resources(p) and p["spec"]["nodeName"] == node) > int(allocatable.get(node, {}).get("pods", "110")):
            out.append(f"node {node} holds more pods than allowed")
    return out


def check_acknowledged(c: httpx.Client, ledger: Ledger) -> dict[str, int]:
    """Every acknowledged, not deleted object exists exactly once; deleted ones are gone."""
    jobs = [j["metadata"]["name"] for j in c.get(JOBS).json()["items"]]
    groups = [g["metadata"]["name"] for g in c.get(PODGROUPS).json()["items"]]
    pods = [p["metadata"]["name"] for p in c.get(PODS).json()["items"]]
    for kind, names in (("Job", jobs), ("PodGroup", groups), ("Pod", pods)):
        twice = [n for n, k in Counter(names).items() if k > 1]
        assert not twice, f"{kind}s listed twice: {twice[:10]}"
    maybe_gone = {m[1:] for m in ledger.maybe if m.startswith("-")}  # deletes sent, never answered
    kept_jobs = ledger.jobs - ledger.deleted_jobs - {m.split("/", 1)[1] for m in maybe_gone if m.startswith("Job/")}
    kept_groups = ledger.groups - ledger.deleted_groups - {m.split("/", 1)[1] for m in maybe_gone if m.startswith("PodGroup/")}
    kept_pods = ledger.pods - ledger.deleted_pods - {m.split("/", 1)[1] for m in maybe_gone if m.startswith("Pod/")}
    assert kept_jobs <= set(jobs), f"acknowledged jobs lost: {sorted(kept_jobs - set(jobs))[:20]}"
    assert kept_groups <= set(groups), f"acknowledged podgroups lost: {sorted(kept_groups - set(groups))[:20]}"
    assert kept_pods <= set(pods), f"acknowledged pods lost: {sorted(kept_pods - set(pods))[:20]}"
    assert not (ledger.deleted_jobs & set(jobs)), f"deleted jobs came back: {sorted(ledger.deleted_jobs & set(jobs))[:20]}"
    assert not (ledger.deleted_groups & set(groups)), f"deleted podgroups came back: {sorted(ledger.deleted_groups & set(groups))[:20]}"
    assert not (ledger.deleted_pods & set(pods)), f"deleted pods came back: {sorted(ledger.deleted_pods & set(pods))[:20]}"
    ours = {n for n in jobs if n.startswith("j")}
    unexplained = ours - ledger.jobs - {m.split("/", 1)[1] for m in ledger.maybe if m.startswith("Job/")}
    assert not unexplained, f"jobs nobody acknowledged exist: {sorted(unexplained)[:20]}"
    return {"jobs": len(jobs), "podgroups": len(groups), "pods": len(pods)}


def check_nodes(c: httpx.Client) -> list[dict]:
    pods = c.get("/api/v1/pods").json()["items"]
    problems = over_commitment(pods, c.get(NODES).json()["items"])
    assert not problems, problems
    return pods


def queue_of_pod(pod: dict, groups: dict[str, str]) -> str:
    annotations = pod.get("metadata", {}).get("annotations") or {}
    group = annotations.get("scheduling.k8s.io/group-name") or annotations.get("scheduling.volcano.sh/group-name")
    return groups.get(f"{pod['metadata'].get('namespace', 'default')}/{group}", "default")


def allocation_mismatches(c: httpx.Client) -> list[str]:
    """Queues whose status.allocated differs from the sum of the bound, unfinished pods in their
    subtree (a parent's allocation is its descendants')."""
    pods = c.get("/api/v1/pods").json()["items"]
    groups = {f"{g['metadata'].get('namespace', 'default')}/{g['metadata']['name']}": g["spec"].get("queue", "default") for g in c.get("/apis/scheduling.volcano.sh/v1beta1/podgroups").json()["items"]}
    queues = c.get(QUEUES).json()["items"]
    again = c.get("/api/v1/pods").json()["items"]
    if pods != again:
        return ["pods changed while reading"]
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod in pods:
        if holds_resources(pod):
            for name, amount in requests_of(pod).items():
                used[queue_of_pod(pod, groups)][name] += amount
    parents = {q["metadata"]["name"]: (q.get("spec") or {}).get("parent") or "root" for q in queues}
    for leaf in [q for q in list(used) if q != "root"]:
        seen, ancestor = {leaf}, parents.get(leaf, "root")
        while ancestor not in seen:  # a parent's allocation is the sum of its descendants'
            seen.add(ancestor)
            for name, amount in list(used[leaf].items()):
                used[ancestor][name] += amount
            ancestor = parents.get(ancestor, "root") if ancestor != "root" else "root"
    out = []
    for queue in queues:
        name = queue["metadata"]["name"]
        allocated = (queue.get("status") or {}).get("allocated") or {}
        for resource in RESOURCES:
            have, want = parse_quantity(allocated.get(resource, "0")), used[name][resource]
            if have != want:
                out.append(f"queue {name}: status.allocated.{resource} {float(have)} != {float(want)} (sum of its running pods)")
    return out


def check_allocations_settle(c: httpx.Client, timeout: float = 20) -> None:
    """Once the loop has caught up, every queue's allocated equals its running pods' requests."""
    deadline = time.monotonic() + timeout
    problems = ["not checked"]
    while time.monotonic() < deadline:
        problems = allocation_mismatches(c)
        if not problems:
            return
        time.sleep(0.5)
    raise AssertionError(problems)
