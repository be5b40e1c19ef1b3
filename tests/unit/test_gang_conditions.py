"""gang's conditions at session close: every ready job gets a ``Scheduled`` condition of this
session, every job that is not ready an ``Unschedulable`` one saying why. The ready jobs' condition
reads the same for all of them, so they share one object (a server closes a session over every
running job each busy tick), and so do the waiting jobs whose ``Unschedulable`` message reads the
same (a backlog's look-alikes); a condition is never changed in place, so sharing it is safe."""

from __future__ import annotations

from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import open_session, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.builders import node, pod, podgroup, queue

CONF = load_config(default_config_text())


def _cluster() -> ClusterState:
    objects = [queue("work").weight(1).build(), node("n1", cpu=8, memory="16Gi", pods=20)]
    for name in ("a", "b", "c"):
        objects.append(podgroup(name).queue("work").min_member(1).phase("Running").build())
        objects.append(pod(f"{name}-0").group(name).requests(cpu=1, memory="1Gi").on("n1").build())
    objects.append(podgroup("huge").queue("work").min_member(1).phase("Inqueue").build())
    objects.append(pod("huge-0").group("huge").requests(cpu=64, memory="1Gi").build())
    return ClusterState.from_objects(objects)


def _only(conditions: list[dict]) -> dict:
    assert len(conditions) == 1
    return conditions[0]


def test_ready_jobs_share_one_scheduled_condition_of_this_session():
    result = run_cycle(_cluster(), CONF, 0.0, uid="cycle-7")
    scheduled = [_only(result.jobs[f"default/{name}"].conditions) for name in ("a", "b", "c")]
    assert scheduled[0] == {
        "type": "Scheduled",
        "status": "True",
        "transitionID": "cycle-7",
        "reason": "tasks in gang are ready to be scheduled",
        "message": "",
    }
    assert scheduled[1] is scheduled[0] and scheduled[2] is scheduled[0]
    unschedulable = _only(result.jobs["default/huge"].conditions)
    assert (unschedulable["type"], unschedulable["transitionID"]) == ("Unschedulable", "cycle-7")
    assert unschedulable["message"].startswith("1/1 tasks in gang unschedulable")


def test_each_session_makes_its_own_condition_and_leaves_the_last_ones_alone():
    state = _cluster()
    first = run_cycle(state, CONF, 0.0, uid="cycle-1")
    second = run_cycle(state, CONF, 0.0, uid="cycle-2")
    before, after = _only(first.jobs["default/a"].conditions), _only(second.jobs["default/a"].conditions)
    assert after is not before
    assert (before["transitionID"], after["transitionID"]) == ("cycle-1", "cycle-2")


def test_waiting_jobs_with_one_message_share_one_unschedulable_condition():
    objects = [queue("work").weight(1).build(), node("n1", cpu=8, memory="16Gi", pods=20)]
    for name, members, tasks in (("big-1", 2, 2), ("big-2", 2, 2), ("wide", 1, 3)):
        objects.append(podgroup(name).queue("work").min_member(members).phase("Inqueue").build())
        objects += [pod(f"{name}-{i}").group(name).requests(cpu=64, memory="1Gi").build() for i in range(tasks)]
    result = run_cycle(ClusterState.from_objects(objects), CONF, 0.0, uid="cycle-3")
    big_1, big_2, wide = (_only(result.jobs[f"default/{name}"].conditions) for name in ("big-1", "big-2", "wide"))
    assert big_1 == {
        "type": "Unschedulable",
        "status": "True",
        "transitionID": "cycle-3",
        "reason": "NotEnoughResources",
        "message": "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable",
    }
    assert big_2 is big_1  # one object for the message
    assert wide["message"] == "1/3 tasks in gang unschedulable: pod group is not ready, 1 minAvailable, 3 Pending"
    assert (wide["type"], wide["transitionID"]) == ("Unschedulable", "cycle-3")


def test_ready_jobs_without_conditions_share_one_list_and_one_with_its_own_gets_a_new_one():
    """The ready jobs with no other condition share one list too (a new list per job and cycle
    was most of what gang's close cost a server); a job that has one of its own gets a new list
    with both, and the shared one is left as it was."""
    ssn = open_session(_cluster(), CONF, 0.0, uid="cycle-3")
    other = {"type": "Other", "status": "True", "transitionID": "cycle-3"}
    ssn.jobs["default/c"].set_condition(other)
    ssn.plugins["gang"].on_session_close(ssn)
    shared = ssn.jobs["default/a"].conditions
    assert ssn.jobs["default/b"].conditions is shared and _only(shared)["type"] == "Scheduled"
    own = ssn.jobs["default/c"].conditions
    assert own is not shared and [c["type"] for c in own] == ["Other", "Scheduled"] and own[1] is shared[0]
    ssn.release()
