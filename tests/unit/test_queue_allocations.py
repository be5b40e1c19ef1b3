"""``queue_allocations``: each queue's allocated resources (its jobs' Bound, Binding, Running and
Allocated tasks), added to every ancestor when the queues form a tree under ``root``."""

from __future__ import annotations

from builders import node, pod, podgroup, queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import open_session, queue_allocations
from lahar.scheduler.framework.config import default_config_text, load_config

GPU = "nvidia.com/gpu"


def _allocations(queues, placements, finished=()):
    """``placements``: (queue, pod name, cpu, gpus, phase or None for pending); the pods named in
    ``finished`` then succeed (as the cache hears of it)."""
    objects = list(queues) + [node("n0", cpu="64", memory="256Gi", pods="110", **{GPU: "8"})]
    groups = set()
    for queue_name, name, cpu, gpus, phase in placements:
        group = name.rstrip("0123456789")  # pods x1 and x2 make one job, x
        if group not in groups:
            groups.add(group)
            objects.append(podgroup(group).queue(queue_name).min_member(1).phase("Running" if phase else "Inqueue").build())
        builder = pod(name).requests(cpu=cpu, **({GPU: gpus} if gpus else {})).group(group)
        objects.append((builder.on("n0", phase) if phase else builder).build())
    state = ClusterState.from_objects(objects)
    for obj in objects:
        if getattr(obj, "kind", "") == "Pod" and obj.metadata.name in finished:
            state.upsert(obj.model_copy(update={"status": obj.status.model_copy(update={"phase": "Succeeded"})}))
    ssn = open_session(state, load_config(default_config_text()))
    return {name: (res.milli_cpu, res.get(GPU), GPU in (res.scalars or {})) for name, res in queue_allocations(ssn).items()}


def test_flat_queues_count_only_tasks_holding_resources():
    totals = _allocations(
        [queue("a").build(), queue("b").build()],
        [("a", "a1", "2", 1, "Running"), ("a", "b1", "1", 0, "Running"), ("a", "c1", "4", 2, None), ("b", "d1", "3", 0, "Running")],
    )
    assert totals["a"] == (3000.0, 1000.0, True)
    assert totals["b"] == (3000.0, 0.0, False)


def test_a_finished_task_leaves_no_trace():
    totals = _allocations([queue("a").build()], [("a", "a1", "2", 0, "Running"), ("a", "b1", "1", 2, "Succeeded")])
    assert totals["a"] == (2000.0, 0.0, False)


def test_a_task_that_finished_since_leaves_no_zero_behind_in_the_queue_or_its_parents():
    queues = [queue("root").build(), queue("eng").parent("root").build()]
    totals = _allocations(queues, [("eng", "x1", "2", 0, "Running"), ("eng", "x2", "1", 2, "Running")], finished={"x2"})
    assert totals["eng"] == (2000.0, 0.0, False)
    assert totals["root"] == (2000.0, 0.0, False)


def test_ancestors_hold_their_descendants_allocations():
    queues = [queue("root").build(), queue("eng").parent("root").build(), queue("eng-a").parent("eng").build(), queue("ops").parent("root").build()]
    totals = _allocations(queues, [("eng-a", "x1", "2", 1, "Running"), ("eng-a", "x2", "1", 0, "Running"), ("ops", "z1", "4", 0, "Running")])
    assert totals["eng-a"] == (3000.0, 1000.0, True)
    assert totals["eng"] == (3000.0, 1000.0, True)
    assert totals["ops"] == (4000.0, 0.0, False)
    assert totals["root"] == (7000.0, 1000.0, True)
