"""allocate's and reclaim's pass over a queue that refuses everything it has waiting
(``_refused_throughout``) asks once per kind of look-alike waiting job, when a cycle has
described the kinds: jobs of one kind have the same queue and tasks, so the queue refuses them
alike. The notes are still written task by task, and a cycle decides exactly as one that asks
every job."""

from __future__ import annotations

import pytest

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import JobFacts, Session

pytestmark = pytest.mark.python_source


def _pod(name: str, group: str, queue_cpu: str, node: str | None = None) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": queue_cpu}}}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def _group(name: str, queue: str, phase: str, members: int = 1) -> PodGroup:
    spec = {"queue": queue, "minMember": members}
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": {"phase": phase}})


def _cluster() -> list:
    """Two 4-cpu nodes, two queues of one weight (4 cpu deserved each). Queue ``a`` runs 3 cpu and
    has look-alikes of two kinds waiting (one task of 2 cpu; two tasks of 1 cpu): below its
    share, it still refuses every one of them (3 + 1.5 > 4). Queue ``b`` runs 4 cpu and waits for
    more, so ``a`` deserves no more than its half."""
    objects: list = [
        Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}}) for name in ("a", "b")
    ]
    objects += [Node.model_validate({"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}) for i in range(2)]
    objects += [_group("run-a", "a", "Running", 3)] + [_pod(f"run-a-{i}", "run-a", "1", node="n0") for i in range(3)]
    objects += [_group("run-b", "b", "Running", 4)] + [_pod(f"run-b-{i}", "run-b", "1", node="n1") for i in range(4)]
    objects += [_group("more-b", "b", "Inqueue"), _pod("more-b-0", "more-b", "1")]
    for i in range(6):
        objects += [_group(f"big{i}", "a", "Inqueue"), _pod(f"big{i}-0", f"big{i}", "2")]
        objects += [_group(f"pair{i}", "a", "Inqueue", 2), _pod(f"pair{i}-0", f"pair{i}", "1500m"), _pod(f"pair{i}-1", f"pair{i}", "1500m")]
    return objects


def _cycles(monkeypatch: pytest.MonkeyPatch, by_kind: bool) -> tuple[list, dict[str, int]]:
    """Two cycles, the first hiding look-alikes (which describes their kinds), the second in
    full: each one's decisions, outcomes and notes, and how many times the second asked its
    queue's ``Allocatable`` and ``Preemptive``."""
    asked = {"allocatable": 0, "preemptive": 0}
    if not by_kind:
        monkeypatch.setattr(JobFacts, "described_kind", lambda self: None)
    state = ClusterState.from_objects(_cluster())
    conf = load_config(default_config_text())
    seen = []
    for n, hiding in enumerate((True, False)):
        if n == 1:
            for name in asked:
                real = getattr(Session, name)

                def counted(self, *args, real=real, name=name):
                    asked[name] += 1
                    return real(self, *args)

                monkeypatch.setattr(Session, name, counted)
        result = run_cycle(state, conf, float(n), uid=f"c{n}", lookalikes=hiding)
        seen.append((
            sorted((d.type, d.task, d.node) for d in result.decisions),
            sorted((uid, o.phase, repr(o.reason)) for uid, o in result.jobs.items()),
            result.session.notes,
        ))
    return seen, asked


def test_refused_kinds_are_noted_as_when_every_job_is_asked(monkeypatch):
    by_kind, asked_by_kind = _cycles(monkeypatch, by_kind=True)
    monkeypatch.undo()
    every, asked_every = _cycles(monkeypatch, by_kind=False)
    assert by_kind == every
    notes = by_kind[1][2]
    for i in range(6):  # each look-alike noted task by task by both actions
        kinds = [note["kind"] for note in notes[f"ns/pair{i}"]]
        assert kinds.count("queue-allocatable") == 2 and kinds.count("cannot-reclaim") == 2, kinds
        assert {note["task"] for note in notes[f"ns/pair{i}"]} == {f"ns/pair{i}-0", f"ns/pair{i}-1"}
    assert all(o[2] != "None" for o in by_kind[1][1] if o[0].startswith(("ns/big", "ns/pair")))
    # every job asked: 6 + 12 tasks by each pass; by kind: one job of each kind (1 + 2 tasks).
    # ``Allocatable`` is asked by allocate's pass and again by preempt's (``_gives_up_inside``,
    # by kind since an earlier change): 15 fewer questions each
    assert asked_every["allocatable"] >= 36 and asked_every["preemptive"] >= 18, asked_every
    assert asked_every["allocatable"] - asked_by_kind["allocatable"] == 2 * 15, (asked_every, asked_by_kind)
    assert asked_every["preemptive"] - asked_by_kind["preemptive"] == 15, (asked_every, asked_by_kind)
