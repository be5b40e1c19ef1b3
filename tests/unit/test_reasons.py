"""Pending reasons (``lahar.scheduler.reasons``): a job with nothing left waiting has none."""

from __future__ import annotations

from dataclasses import replace

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler import reasons
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.builders import node, pod, podgroup, queue


def _cluster(tasks: int) -> list:
    objects = [
        Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}),
        Queue.model_validate({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}),
        PodGroup.model_validate({"metadata": {"name": "j", "namespace": "ns"}, "spec": {"queue": "default", "minMember": 1}, "status": {"phase": "Inqueue"}}),
    ]
    for t in range(tasks):
        objects.append(
            Pod.model_validate(
                {
                    "metadata": {"name": f"j-t-{t}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "j"}},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
                    "status": {"phase": "Pending"},
                }
            )
        )
    return objects


def test_a_job_bound_in_this_cycle_has_no_pending_reason():
    """Its phase moves to Running only in the next cycle; meanwhile it waits for nothing, even
    though its queue has now used all of its deserved share."""
    result = run_cycle(ClusterState.from_objects(_cluster(1)), load_config(default_config_text()), 0.0)
    assert [(d.type, d.task) for d in result.decisions] == [("bind", "ns/j-t-0")]
    assert result.jobs["ns/j"].reason is None


def test_a_task_left_behind_keeps_the_reason():
    result = run_cycle(ClusterState.from_objects(_cluster(2)), load_config(default_config_text()), 0.0)
    assert [d.type for d in result.decisions] == ["bind"]
    assert result.jobs["ns/j"].reason is not None


def test_a_podgroup_without_pods_yet_is_explained():
    result = run_cycle(ClusterState.from_objects(_cluster(0)), load_config(default_config_text()), 0.0)
    assert result.jobs["ns/j"].reason is not None


def _capped_queue_with_admitted_jobs() -> list:
    """Queue capped at 4 CPUs: one job runs on 1 CPU, one was admitted (Inqueue) for 2 CPUs and
    waits for its pods; a third asks to be admitted for 2 CPUs: 2 + 1 + 2 > 4."""
    return [
        node("n0", cpu=16, memory="64Gi", pods=110),
        queue("capped").capability(cpu=4).status("Open").build(),
        podgroup("running").queue("capped").min_member(1).min_resources(cpu=1).phase("Running").build(),
        pod("running-t-0").group("running").requests(cpu=1).on("n0").build(),
        podgroup("admitted").queue("capped").min_member(1).min_resources(cpu=2).phase("Inqueue").build(),
        podgroup("waiting").queue("capped").min_member(1).min_resources(cpu=2).phase("Pending").build(),
    ]


def test_the_capability_reason_counts_what_admitted_jobs_reserve():
    """The enqueue check adds the admitted jobs' reservations (Volcano's inqueue) to what the
    queue holds: the message says so, or its figures would not add up (2 + 1 <= 4). Without
    their figure: it moves with every job admitted or placed, and each change would rewrite
    the reason of every job waiting in the queue."""
    result = run_cycle(ClusterState.from_objects(_capped_queue_with_admitted_jobs()), load_config(default_config_text()), 0.0)
    reason = result.jobs["default/waiting"].reason
    assert reason is not None and reason["kind"] == "capability"
    assert "the job needs cpu=2, more than the queue has left of at most cpu=4 (jobs it admitted that wait for nodes reserve part of it)" in reason["message"]


def test_the_capability_reason_without_admitted_jobs_names_what_the_queue_holds():
    objects = [o for o in _capped_queue_with_admitted_jobs() if o.metadata.name not in ("admitted", "waiting")]
    objects.append(podgroup("big").queue("capped").min_member(1).min_resources(cpu=4).phase("Pending").build())
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    reason = result.jobs["default/big"].reason
    assert reason is not None and reason["kind"] == "capability"
    assert reason["message"] == "queue capped capability reached on cpu: the job needs cpu=4, more than the queue has left of at most cpu=4, its capability"


def test_the_capability_reason_names_what_running_jobs_hold_above_their_minimum():
    """Volcano leaves that part (elastic) out of the check: a job may give it back."""
    objects = [
        node("n0", cpu=16, memory="64Gi", pods=110),
        queue("capped").capability(cpu=4).status("Open").build(),
        podgroup("running").queue("capped").min_member(1).min_resources(cpu="500m").phase("Running").build(),
        pod("running-t-0").group("running").requests(cpu=1).on("n0").build(),
        podgroup("big").queue("capped").min_member(1).min_resources(cpu=4).phase("Pending").build(),
    ]
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    reason = result.jobs["default/big"].reason
    assert reason is not None and reason["kind"] == "capability"
    assert "more than the queue has left of at most cpu=4 (what its jobs hold above their minimum is not counted)" in reason["message"]


def test_the_capability_reason_stays_the_same_while_only_the_reservations_move():
    """A reason that changes is written again for every job waiting in the queue (the server's
    podgroup annotation): what admitted jobs reserve must not make it change."""
    def message(reserved: int) -> str:
        objects = [o for o in _capped_queue_with_admitted_jobs() if o.metadata.name != "admitted"]
        objects.append(podgroup("admitted").queue("capped").min_member(1).min_resources(cpu=reserved).phase("Inqueue").build())
        reason = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0).jobs["default/waiting"].reason
        assert reason is not None and reason["kind"] == "capability"
        return reason["message"]

    assert message(2) == message(3)


def test_the_capability_reason_stays_the_same_while_what_the_queue_holds_moves():
    """What the queue holds moves with every task it starts or ends: with it in the message,
    every job waiting at the cap was written again at each move (``backlog.py --moving-demand``:
    about a thousand podgroup writes per tick). ``job why`` adds the figures when asked."""
    def message(held: int) -> str:
        objects = [o for o in _capped_queue_with_admitted_jobs() if o.metadata.name not in ("running-t-0", "admitted", "waiting")]
        objects.append(pod("running-t-0").group("running").requests(cpu=held).on("n0").build())
        objects.append(podgroup("big").queue("capped").min_member(1).min_resources(cpu=4).phase("Pending").build())
        reason = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0).jobs["default/big"].reason
        assert reason is not None and reason["kind"] == "capability", reason
        return reason["message"]

    assert message(2) == message(3)  # above the running job's minimum of 1 both times


def _at_its_share(running_cpus: int) -> list:
    """Two queues of weight 1 on 12 CPUs: ``a`` runs ``running_cpus`` CPUs (at or over its
    deserved 6, as ``b`` asks for more than the rest) and has a 2-CPU job waiting."""
    return [
        node("n0", cpu=12, memory="64Gi", pods=110),
        queue("a").weight(1).status("Open").build(),
        queue("b").weight(1).status("Open").build(),
        podgroup("runs").queue("a").min_member(1).phase("Running").build(),
        pod("runs-t-0").group("runs").requests(cpu=running_cpus).on("n0").build(),
        podgroup("waits").queue("a").min_member(1).phase("Inqueue").build(),
        pod("waits-t-0").group("waits").requests(cpu=2).build(),
        podgroup("wants").queue("b").min_member(1).phase("Inqueue").build(),
        pod("wants-t-0").group("wants").requests(cpu=20).build(),
    ]


def test_the_deserved_reason_stays_the_same_while_the_queue_s_usage_moves():
    """The queue's figures move with every task it starts or ends, and its deserved share with
    every other queue's demand: a reason that carried them was written again for every job
    waiting in the queue at each move (thousands of podgroups in a deep backlog). ``job why``
    adds them when asked (``tests/server``)."""
    def reason(running_cpus: int) -> dict:
        found = run_cycle(ClusterState.from_objects(_at_its_share(running_cpus)), load_config(default_config_text()), 0.0).jobs["default/waits"].reason
        assert found is not None and found["kind"] == "deserved", found
        return found

    assert reason(6) == reason(7)
    assert reason(6)["message"] == "queue a has used its deserved share; the job's cpu=2 must wait until the queue's usage falls or its share grows"


def test_a_reason_that_reads_as_the_last_one_is_the_last_object():
    """The close hands a waiting job's last reason back when it reads the same (its status then
    compares at once), and makes a new one when anything in it differs."""
    conf = load_config(default_config_text())
    state = ClusterState.from_objects(_cluster(2))
    first = run_cycle(state, conf, 0.0, uid="c0")
    last = first.jobs["ns/j"].reason
    assert last is not None and last["job"] == "ns/j"
    again = run_cycle(state, conf, 1.0, uid="c1", previous=first.jobs)
    assert again.jobs["ns/j"].reason is last
    fresh = run_cycle(state, conf, 2.0, uid="c2")  # without the last outcomes: a new object
    assert fresh.jobs["ns/j"].reason == last and fresh.jobs["ns/j"].reason is not last
    for changed in ({**last, "message": "something else"}, {**last, "extra": 1}, {**last, "job": "ns/other"}):
        previous = {**first.jobs, "ns/j": replace(first.jobs["ns/j"], reason=changed)}
        found = run_cycle(state, conf, 3.0, uid="c3", previous=previous).jobs["ns/j"].reason
        assert found == last and found is not changed


def test_a_deserved_message_is_one_part_from_session_to_session(monkeypatch):
    """The deserved reason's kind and message are one object per message across sessions (a
    waiting job's new reason then compares with its last one by identity), and the table is
    emptied when full."""
    parts = reasons._DeservedParts()
    message = "queue q has used its deserved share; the job's cpu=1 must wait"
    again = "".join(message)  # equal, another object
    assert again is not message or len(message) < 2
    first = parts.part(message)
    assert first == {"kind": "deserved", "message": message}
    assert parts.part(again) is first
    monkeypatch.setattr(reasons, "DESERVED_PARTS_KEPT", 2)
    parts.part("other")
    parts.part("a third")  # full: emptied before it is kept
    assert len(parts.parts) == 1 and parts.part(message) is not first and parts.part(message) == first


def test_a_job_that_reclaim_cannot_help_names_the_queues_that_are_not_reclaimable():
    """Every node is held by queue ``locked`` (reclaimable: false); ``want`` (below its share)
    finds no node and nothing to reclaim. Its reason names ``locked``, the queue holding running
    tasks that may not be taken, and neither ``idle`` (not reclaimable, its job waiting) nor
    ``open`` (reclaimable, running nothing)."""
    objects = [
        node("n0", cpu=4, memory="16Gi", pods=110),
        node("n1", cpu=4, memory="16Gi", pods=110),
        queue("locked").weight(1).reclaimable(False).status("Open").build(),
        queue("idle").weight(1).reclaimable(False).status("Open").build(),
        queue("open").weight(1).status("Open").build(),
        queue("want").weight(1).status("Open").build(),
        podgroup("hold").queue("locked").min_member(2).phase("Running").build(),
        pod("hold-t-0").group("hold").requests(cpu=4).on("n0").build(),
        pod("hold-t-1").group("hold").requests(cpu=4).on("n1").build(),
        podgroup("ask").queue("want").min_member(1).phase("Inqueue").build(),
        pod("ask-t-0").group("ask").requests(cpu=2).build(),
        podgroup("wait").queue("idle").min_member(1).phase("Inqueue").build(),
        pod("wait-t-0").group("wait").requests(cpu=8).build(),
    ]
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    assert result.decisions == []
    reason = result.jobs["default/ask"].reason
    assert reason is not None and reason["kind"] == "no-node-fits"
    assert reason["message"].endswith("Nothing could be reclaimed: queue(s) locked hold the resources and are not reclaimable.")
