"""preempt asks once per kind of look-alike waiting job whether a starving job can do anything
(``_nothing_to_do`` in phase A, ``_gives_up_inside`` in phase B), when a cycle has described the
kinds. Jobs of one kind have the same queue, priority and tasks, so the answer is theirs alike;
jobs of another kind get their own. A cycle with the answers kept by kind decides exactly as one
that asks every job."""

from __future__ import annotations

import pytest

import lahar.scheduler.actions.preempt as preempt
from lahar.model import Node, Pod, PodGroup, PriorityClass, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import Session

pytestmark = pytest.mark.python_source


def _pod(name: str, group: str, klass: str, node: str | None = None) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": {"priorityClassName": klass, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def _group(name: str, klass: str, phase: str) -> PodGroup:
    spec = {"queue": "q", "minMember": 1, "priorityClassName": klass}
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": {"phase": phase}})


def _cluster() -> list:
    """One 4-cpu node full of a low-priority job's tasks; waiting in the same queue, look-alikes
    of the same low priority (nothing to evict for them: they come first by name) and
    look-alikes of a high priority (they can evict the running tasks)."""
    objects: list = [
        PriorityClass.model_validate({"metadata": {"name": "low"}, "value": 1}),
        PriorityClass.model_validate({"metadata": {"name": "high"}, "value": 100}),
        Queue.model_validate({"metadata": {"name": "q"}, "spec": {"weight": 1}, "status": {"state": "Open"}}),
        Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
        _group("run", "low", "Running"),
    ]
    objects += [_pod(f"run-{i}", "run", "low", node="n0") for i in range(4)]
    for prefix, klass in (("a", "low"), ("b", "high")):
        for i in range(6):
            objects += [_group(f"{prefix}{i}", klass, "Inqueue"), _pod(f"{prefix}{i}-0", f"{prefix}{i}", klass)]
    return objects


def _cycles(monkeypatch: pytest.MonkeyPatch, by_kind: bool) -> tuple[list, list, int]:
    """Two cycles on the cluster, the first hiding look-alikes (which describes their kinds),
    the second in full: each one's decisions and outcomes, and how many times the session was
    asked a task's preemptable key or its queue's ``Allocatable`` (what a look at a job's tasks
    asks)."""
    asked = [0]
    if not by_kind:
        monkeypatch.setattr(preempt, "_kind_of", lambda ssn, job: None)
    for name in ("preemptable_key", "allocatable"):
        real = getattr(Session, name)

        def counted(self, *args, real=real):
            asked[0] += 1
            return real(self, *args)

        monkeypatch.setattr(Session, name, counted)
    state = ClusterState.from_objects(_cluster())
    conf = load_config(default_config_text())
    seen = []
    for n, hiding in enumerate((True, False)):
        result = run_cycle(state, conf, float(n), uid=f"c{n}", lookalikes=hiding)
        seen.append((
            sorted((d.type, d.task, d.node) for d in result.decisions),
            sorted((uid, o.phase, repr(o.reason)) for uid, o in result.jobs.items()),
        ))
    return seen[0], seen[1], asked[0]


def test_answers_kept_by_kind_decide_as_asking_every_job(monkeypatch):
    first, second, asked_by_kind = _cycles(monkeypatch, by_kind=True)
    monkeypatch.undo()
    first_every, second_every, asked_every = _cycles(monkeypatch, by_kind=False)
    assert (first, second) == (first_every, second_every)
    assert any(kind == "evict" for kind, _, _ in first[0])  # a high-priority look-alike evicted
    assert asked_by_kind < asked_every
