"""A snapshot takes back the last snapshot's copy of a job that changed on neither side
(``JobInfo.twin``): every such copy must be what a fresh ``clone()`` would have given,
field for field and in the same order, in runs that bind, pipeline, evict and discard. So
must every node copy it takes back (``ClusterState.node_copies``) be what a fresh
``clone_with`` of the session's jobs would give: the same figures and accounting, each task
its job copy's own."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lahar.scheduler import api
from lahar.scheduler.api import JobInfo, NodeInfo
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from lahar.sim.traces import build_workload
from tests.builders import node, pod, podgroup, queue

# replaces functions inside the scheduling core (see tests/test_python_source.py)
pytestmark = pytest.mark.python_source

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "tests" / "data" / "traces" / "philly-head.csv"
OWNED = ("tasks", "status_index", "allocated", "total_request", "fit_errors", "conditions", "changes", "facts", "part", "part_alike", "part_changes", "part_phase", "described", "last_outcome", "last_outcomes")


def _task_fields(task) -> tuple:
    # _request_id and _placement are caches of the request's number and of the pod's placement
    # (worked out when first asked; the request and the pod are compared)
    return tuple((name, getattr(task, name)) for name in type(task).__slots__ if name not in ("_request_id", "_placement"))


def _resources(*figures) -> list[tuple]:
    return [(r.milli_cpu, r.memory, r.scalars, r.max_task_num) for r in figures]


def _fingerprint(job: JobInfo) -> tuple:
    plain = sorted((k, v if isinstance(v, (str, int, float, bool, type(None), dict)) else id(v)) for k, v in job.__dict__.items() if k not in OWNED)
    resources = _resources(job.allocated, job.total_request)
    return (
        plain,
        [(uid, _task_fields(task)) for uid, task in job.tasks.items()],
        [(status, list(bucket)) for status, bucket in job.status_index.items()],
        [(status, [id(t) == id(job.tasks[uid]) for uid, t in bucket.items()]) for status, bucket in job.status_index.items()],
        resources,
        job.fit_errors,
        job.conditions,
    )


def _shared(copy: JobInfo, job: JobInfo) -> list[str]:
    """The attributes whose value the copy shares with the cache's job (same object)."""
    return sorted(k for k, v in copy.__dict__.items() if not isinstance(v, (str, int, float, bool, type(None))) and job.__dict__.get(k) is v)


def _node_fingerprint(node: NodeInfo, jobs: dict[str, JobInfo]) -> tuple:
    """What a session reads of a node copy; each task: its fields and whether it is the very
    task of its job's copy (a task of a job outside the session: a clone of its own)."""
    owner = [jobs[t.job].tasks.get(t.uid) is t if t.job in jobs else "outside" for t in node.tasks.values()]
    tasks = [(key, _task_fields(task)) for key, task in node.tasks.items()]
    figures = _resources(node.allocatable, node.capacity, node.idle, node.used, node.releasing, node.pipelined)
    fields = (node.name, node.labels, node.taints, node.unschedulable, node.ready, node.max_task_num, node.index, node.foreign)
    return (fields, figures, tasks, owner, dict(node._accounted), node.version, node.source_version)


@pytest.fixture
def checked(monkeypatch):
    """Wrap ``snapshot``: compare every taken-back copy with a fresh clone; count them."""
    counts = {"reused": 0, "copies": 0, "nodes_reused": 0, "node_copies": 0}
    original = ClusterState.snapshot

    def snapshot(self):
        before = {uid: job.twin for uid, job in self.jobs.items()}
        nodes_before = {name: kept[0] for name, kept in self.node_copies.items()}
        jobs, nodes, node_list, queues = original(self)
        for name, copy in nodes.items():
            counts["node_copies"] += 1
            assert copy.source is self.nodes[name] and copy is not self.nodes[name]
            if nodes_before.get(name) is copy:
                counts["nodes_reused"] += 1
                assert _node_fingerprint(copy, jobs) == _node_fingerprint(self.nodes[name].clone_with(jobs), jobs), name
        # the session's order: by creation, then key
        assert list(jobs) == sorted((uid for uid, job in self.jobs.items() if job.queue in self.queues), key=lambda uid: (self.jobs[uid].creation, uid))
        for uid, twin in jobs.items():
            counts["copies"] += 1
            assert self.jobs[uid].twin is twin, uid  # the session's copy is the one the job keeps
            kept = before.get(uid)
            if kept is not None and kept is twin:
                counts["reused"] += 1
                fresh = self.jobs[uid].clone()
                assert _fingerprint(twin) == _fingerprint(fresh), uid
                assert _shared(twin, self.jobs[uid]) == _shared(fresh, self.jobs[uid]), uid
            assert twin is not self.jobs[uid]
            assert api.NO_CONDITIONS == []  # shared by copies without conditions: never filled in place
            assert all(task is not self.tasks.get(task.key) for task in twin.tasks.values())
        on_nodes = {id(task) for node in node_list for task in node.tasks.values()}
        for twin in jobs.values():
            for task in twin.tasks.values():
                if task.node_name and task.status.name in ("RUNNING", "BOUND", "BINDING", "RELEASING") and task.node_name in nodes:
                    assert id(task) in on_nodes, task.key
        return jobs, nodes, node_list, queues

    monkeypatch.setattr(ClusterState, "snapshot", snapshot)
    return counts


def test_trace_replay_takes_back_only_copies_equal_to_fresh_ones(checked):
    workload = build_workload(f"philly:{SLICE}", limit=120)
    objects, _ = workload.objects(None)
    sim = Simulation(objects, load_config(default_config_text()), period=1.0)
    sim.keep_cycles = False
    replay(sim, objects, Clock(period=1.0, until=None, cycles=None))
    assert checked["reused"] > checked["copies"] // 2  # most jobs wait unchanged between cycles
    assert checked["nodes_reused"] > 0


@pytest.mark.parametrize("name", ["2-lend-and-reclaim", "4-not-reclaimable", "6-suspend-resume", "7-closing-drains"])
def test_seed_scenarios_take_back_only_copies_equal_to_fresh_ones(checked, name):
    objects, conf = load_simulation_inputs([str(ROOT / "examples" / "seeds" / f"{name}.yaml")], None)
    sim = Simulation(objects, conf, period=1.0)
    sim.run_cycles(40)
    assert checked["reused"] > 0


def _waiting_cluster() -> ClusterState:
    """Jobs that keep their tasks through a cycle, each with what the session writes on it: a
    running job (a Scheduled condition), one that enqueue admits (Pending to Inqueue) but its
    queue's share then refuses, one larger than any node (fit errors, an Unschedulable
    condition) and one its queue's capability keeps Pending."""
    return ClusterState.from_objects(
        [
            queue("work").weight(1).build(),
            queue("capped").weight(1).capability(cpu=1).build(),
            node("n1", cpu=4, memory="8Gi", pods=10),
            node("n2", cpu=4, memory="8Gi", pods=10),
            podgroup("run").queue("work").min_member(1).phase("Running").build(),
            pod("run-0").group("run").requests(cpu=1, memory="1Gi").on("n1").build(),
            podgroup("admit").queue("work").min_member(1).phase("Pending").build(),
            pod("admit-0").group("admit").requests(cpu=8, memory="1Gi").build(),
            podgroup("huge").queue("work").min_member(1).phase("Inqueue").build(),
            pod("huge-0").group("huge").requests(cpu=6, memory="1Gi").build(),
            podgroup("held").queue("capped").min_member(1).min_resources(cpu=2).phase("Pending").build(),
            pod("held-0").group("held").requests(cpu=2, memory="1Gi").build(),
        ]
    )


def test_cycles_whose_results_are_not_applied_take_back_copies_equal_to_fresh_ones(checked):
    """The same cluster scheduled again without applying the last result (as ``bench/checkpoint.py
    repeat`` does): the copies come back with what their session wrote on them (a phase moved on
    by enqueue, conditions, fit errors) and must be reset to the cache's jobs."""
    state = _waiting_cluster()
    conf = load_config(default_config_text())
    first = run_cycle(state, conf, 0.0, uid="cycle-1")
    assert first.jobs["default/huge"].conditions and first.jobs["default/admit"].phase == "Inqueue"
    for n in range(2, 4):
        again = run_cycle(state, conf, 0.0, uid=f"cycle-{n}")
        assert [(d.type, d.task, d.node) for d in again.decisions] == [(d.type, d.task, d.node) for d in first.decisions]
        assert {uid: o.phase for uid, o in again.jobs.items()} == {uid: o.phase for uid, o in first.jobs.items()}
    assert checked["reused"] >= 8  # all four jobs, taken back twice


def test_a_clone_has_every_field_of_its_job():
    """``JobInfo.clone`` names each field (a compiled class has no ``__dict__`` to copy): one
    missing would silently keep its constructor default when compiled."""
    state = ClusterState.from_objects(
        [queue("q").build(), node("n1", cpu=4), podgroup("g").queue("q").min_member(2).min_resources(cpu=1).build(), pod("g-0").group("g").requests(cpu=1).build(), pod("g-1").group("g").requests(cpu=1).on("n1").build()]
    )
    job = state.jobs["default/g"]
    twin = job.clone()
    assert sorted(vars(twin)) == sorted(vars(job))
    assert [k for k, v in vars(job).items() if k not in OWNED and vars(twin)[k] is not v and vars(twin)[k] != v] == []


def test_a_snapshot_lists_jobs_in_key_order_as_they_come_and_go():
    """The snapshot's job order is the keys' order whatever order the jobs came in, went and
    came back in (the sorted keys are kept between snapshots, not sorted again)."""
    state = ClusterState.from_objects([queue("work").weight(1).build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    names = ["m", "c", "x", "a", "k"]
    for name in names:
        state.upsert(podgroup(name).queue("work").min_member(1).build())
        assert list(state.snapshot()[0]) == sorted(f"default/{n}" for n in names[: names.index(name) + 1])
    gone = podgroup("c").queue("work").build()
    state.remove(gone)
    state.forget_job("default/x")
    state.upsert(podgroup("b").queue("work").min_member(1).build())
    state.upsert(podgroup("z").queue("work").min_member(1).build())
    state.upsert(podgroup("m").queue("work").min_member(2).build())  # replaced: still once
    assert list(state.snapshot()[0]) == ["default/a", "default/b", "default/k", "default/m", "default/z"]  # as many as before
    state.upsert(gone)
    assert list(state.snapshot()[0]) == ["default/a", "default/b", "default/c", "default/k", "default/m", "default/z"]


def test_a_snapshot_reads_the_jobs_as_they_are_now_whatever_came_and_went():
    """The jobs kept in key order beside the keys (``ClusterState.job_list``) follow every
    podgroup added, replaced (a new job under the same key) and dropped: each snapshot copies
    the job now under each key, in key order."""
    rng = random.Random(7)
    state = ClusterState.from_objects([queue("work").weight(1).build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    names = [f"g{i:02d}" for i in range(12)]
    for step in range(200):
        name = rng.choice(names)
        move = rng.random()
        if move < 0.5:
            state.upsert(podgroup(name).queue("work").min_member(rng.randint(1, 4)).build())  # added or replaced
        elif move < 0.75:
            state.remove(podgroup(name).queue("work").build())
        else:
            state.forget_job(f"default/{name}")
        if step % 3 == 0:
            copies = state.snapshot()[0]
            assert list(copies) == sorted(state.jobs)
            for uid, copy in copies.items():
                assert state.jobs[uid].twin is copy and copy.min_available == state.jobs[uid].min_available


def test_a_snapshot_leaves_out_the_jobs_of_a_queue_that_is_gone_and_takes_them_back():
    """Jobs whose queue is not in the cache are left out of the session, the others kept in key
    order; they come back with their queue."""
    state = ClusterState.from_objects([queue("work").build(), queue("side").build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    for name, owner in [("a", "work"), ("b", "side"), ("c", "work"), ("d", "side"), ("e", "work")]:
        state.upsert(podgroup(name).queue(owner).min_member(1).build())
    assert list(state.snapshot()[0]) == ["default/a", "default/b", "default/c", "default/d", "default/e"]
    state.remove(queue("side").build())
    for _ in range(2):  # and again, from the same keys
        copies = state.snapshot()[0]
        assert list(copies) == ["default/a", "default/c", "default/e"]
        assert all(copy is state.jobs[uid].twin for uid, copy in copies.items())
    state.upsert(queue("side").build())
    assert list(state.snapshot()[0]) == ["default/a", "default/b", "default/c", "default/d", "default/e"]


def _two_nodes() -> ClusterState:
    return ClusterState.from_objects(
        [
            queue("work").build(),
            queue("side").build(),
            node("n1", cpu=4, memory="8Gi", pods=10),
            node("n2", cpu=4, memory="8Gi", pods=10),
            podgroup("a").queue("work").min_member(1).phase("Running").build(),
            pod("a-0").group("a").requests(cpu=1, memory="1Gi").on("n1").build(),
            podgroup("b").queue("side").min_member(1).phase("Running").build(),
            pod("b-0").group("b").requests(cpu=1, memory="1Gi").on("n2").build(),
        ]
    )


def test_a_node_copy_is_taken_back_only_while_its_jobs_and_both_sides_stand():
    """Node copies over the state's own snapshots (``cache._node_copy``): taken back when
    nothing moved; copied anew where a job on the node was copied anew, where the copy moved a task, where
    the node did, where a queue name went (its jobs leave the session), and where the copy
    holds a clone of a task outside the session."""
    state = _two_nodes()
    first = state.snapshot()[1]
    again = state.snapshot()[1]
    assert again["n1"] is first["n1"] and again["n2"] is first["n2"]
    state.upsert(pod("a-0").group("a").requests(cpu=2, memory="1Gi").on("n1").build())  # job a changed
    moved = state.snapshot()[1]
    assert moved["n1"] is not again["n1"] and moved["n2"] is again["n2"]
    moved["n2"].remove_task(next(iter(moved["n2"].tasks.values())))  # the session's copy moved
    taken = state.snapshot()[1]
    assert taken["n2"] is not moved["n2"] and taken["n1"] is moved["n1"]
    assert len(taken["n2"].tasks) == 1
    state.nodes["n1"].version += 1  # the node moved, whatever moved it
    assert state.snapshot()[1]["n1"] is not taken["n1"]
    state.remove(queue("side").build())  # b leaves the session: n2 holds a clone of its task
    gone = state.snapshot()[1]
    assert gone["n2"].foreign and gone["n2"] is not taken["n2"]
    assert state.snapshot()[1]["n2"] is not gone["n2"]  # never taken back while it holds one


def test_node_copies_taken_back_through_cycles_are_fresh_ones(checked):
    """Cycles on the same cluster, applied or not, every node copy taken back checked against
    a fresh one (``checked``)."""
    state = _waiting_cluster()
    conf = load_config(default_config_text())
    for n in range(4):
        run_cycle(state, conf, 0.0, uid=f"cycle-{n}")
    assert checked["nodes_reused"] >= 2


def test_a_node_replaced_gets_a_copy_of_its_own():
    """A node replaced in the cache (same name, same tasks, so the same ``version``) gets a copy
    made of it: the last copy was made of the node it replaced."""
    state = _two_nodes()
    first = state.snapshot()[1]["n2"]
    state.upsert(node("n2", cpu=16, memory="8Gi", pods=10))
    assert state.nodes["n2"].version == first.source_version
    copy = state.snapshot()[1]["n2"]
    assert copy is not first and copy.source is state.nodes["n2"] and copy.allocatable.milli_cpu == 16000

