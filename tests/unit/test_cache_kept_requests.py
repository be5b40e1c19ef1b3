"""The cache takes a pod's request and a podgroup's minResources over from the object it replaces
while they are the very same objects (a write that moved only a status, a node or a phase shares
them: objects are never changed in place), and works them out again when they are not. Either
way the job and its tasks equal what a cache built afresh from the same objects holds."""

from __future__ import annotations

from lahar.scheduler.cache import ClusterState, parse_time
from tests.builders import node, podgroup, pod, queue


def _cluster(*objects) -> ClusterState:
    base = [queue("q").build(), node("n1", cpu=8, memory="16Gi")]
    return ClusterState.from_objects([*base, *objects])


def _group():
    return podgroup("j").queue("q").min_member(1).min_resources(cpu=2, memory="1Gi").phase("Pending").build()


def _pod():
    return pod("j-0").group("j").requests(cpu=2, memory="1Gi").build()


def _same_as_fresh(state: ClusterState, *objects) -> None:
    """Every job's and task's worked-out fields equal a fresh cache's over ``objects``."""
    fresh = _cluster(*objects)
    assert set(state.jobs) == set(fresh.jobs) and set(state.tasks) == set(fresh.tasks)
    for key, job in state.jobs.items():
        other = fresh.jobs[key]
        assert (job.min_resources, job.creation, job.phase, job.priority) == (other.min_resources, other.creation, other.phase, other.priority)
        assert job.podgroup is not None and other.podgroup is not None and job.podgroup == other.podgroup
    for key, task in state.tasks.items():
        other = fresh.tasks[key]
        assert (task.resreq, task.status, task.node_name, task.best_effort) == (other.resreq, other.status, other.node_name, other.best_effort)
        assert task.pod == other.pod


def test_a_bind_keeps_the_request_it_shares():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    before = state.tasks[first.key].resreq
    bound = first.model_copy(update={"spec": first.spec.model_copy(update={"node_name": "n1"})})
    state.upsert(bound)
    assert state.tasks[first.key].resreq is before
    assert state.tasks[first.key].node_name == "n1"
    _same_as_fresh(state, group, bound)


def test_new_containers_are_read_again():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    bigger = pod("j-0").group("j").requests(cpu=4, memory="2Gi").build()
    state.upsert(bigger)
    task = state.tasks[first.key]
    assert task.resreq.milli_cpu == 4000 and task.resreq.memory == 2 * 2**30
    _same_as_fresh(state, group, bigger)


def test_new_init_containers_are_read_again():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    init = [{"name": "init", "resources": {"requests": {"cpu": "6"}}}]
    with_init = first.model_copy(update={"spec": first.spec.model_copy(update={"init_containers": type(first).model_validate({"spec": {"initContainers": init}}).spec.init_containers})})
    state.upsert(with_init)
    assert state.tasks[first.key].resreq.milli_cpu == 6000
    _same_as_fresh(state, group, with_init)


def test_a_phase_keeps_the_min_resources_it_shares():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    before = state.jobs[group.key].min_resources
    inqueue = group.model_copy(update={"status": group.status.model_copy(update={"phase": "Inqueue"})})
    state.upsert(inqueue)
    job = state.jobs[group.key]
    assert job.min_resources is before and job.phase == "Inqueue"
    assert first.key in {t.key for t in job.tasks.values()}
    _same_as_fresh(state, inqueue, first)


def test_new_min_resources_are_read_again():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    larger = podgroup("j").queue("q").min_member(1).min_resources(cpu=3).phase("Pending").build()
    state.upsert(larger)
    job = state.jobs[group.key]
    assert job.min_resources is not None and job.min_resources.milli_cpu == 3000 and job.min_resources.memory == 0
    _same_as_fresh(state, larger, first)


def test_min_resources_dropped_are_dropped():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    bare = group.model_copy(update={"spec": group.spec.model_copy(update={"min_resources": None})})
    state.upsert(bare)
    assert state.jobs[group.key].min_resources is None
    _same_as_fresh(state, bare, first)


def test_a_new_creation_time_is_read_again():
    group, first = _group(), _pod()
    state = _cluster(group, first)
    later = group.model_copy(update={"metadata": group.metadata.model_copy(update={"creation_timestamp": "2026-01-02T03:04:05Z"})})
    state.upsert(later)
    assert state.jobs[group.key].creation == parse_time("2026-01-02T03:04:05Z")
    _same_as_fresh(state, later, first)


def test_parse_time_answers_the_same_again():
    for text in ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.25Z", "1970-01-01T00:01:30Z", "", None, "not a time"):
        first, again = parse_time(text), parse_time(text)
        assert first == again
    assert parse_time("1970-01-01T00:01:30Z") == 90.0
    assert parse_time("2026-01-02T03:04:05.25Z") - parse_time("2026-01-02T03:04:05Z") == 0.25
    assert parse_time("not a time") == 0.0 and parse_time(None) == 0.0
