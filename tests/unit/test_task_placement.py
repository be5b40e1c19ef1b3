"""A task's placement (node selector and tolerations) is read from its pod once per pod object:
a task given a new pod reads the new one, a clone reads what its original read, a task loaded
from a pickle made before placements were kept reads its pod's."""

from __future__ import annotations

import pickle

import pytest

from lahar.model import Node, Pod
from lahar.scheduler.actions.allocate import task_constraints
from lahar.scheduler.api import TaskInfo
from lahar.scheduler.fit import PredicateError
from lahar.scheduler.cache import node_from_object
from lahar.scheduler.plugins.predicates import predicate


def _pod(selector: dict | None = None, tolerations: list | None = None) -> Pod:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if selector is not None:
        spec["nodeSelector"] = selector
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return Pod.model_validate({"metadata": {"name": "p-0", "namespace": "ns"}, "spec": spec})


def _node(labels: dict | None = None, taints: list | None = None, unschedulable: bool = False):
    spec: dict = {"unschedulable": unschedulable}
    if taints:
        spec["taints"] = taints
    obj = {"metadata": {"name": "n0", "labels": labels or {}}, "spec": spec, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    return node_from_object(Node.model_validate(obj))


def _refusal(task: TaskInfo, node) -> str | None:
    try:
        predicate(task, node)
    except PredicateError as error:
        return str(error)
    return None


def test_a_task_given_a_new_pod_reads_the_new_pods_selector():
    task = TaskInfo("u", "p-0", "ns", "ns/p", pod=_pod(selector={"zone": "a"}))
    node = _node(labels={"zone": "a"})
    assert _refusal(task, node) is None
    task.pod = _pod(selector={"zone": "b"})
    assert _refusal(task, node) is not None and "selector" in _refusal(task, node)
    assert task.placement().selector == {"zone": "b"}


def test_tolerations_decide_a_tainted_or_unschedulable_node():
    taint = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    tainted = _node(taints=taint)
    plain = TaskInfo("u", "p-0", "ns", "ns/p", pod=_pod())
    tolerant = TaskInfo("v", "p-0", "ns", "ns/p", pod=_pod(tolerations=[{"key": "gpu", "operator": "Exists"}]))
    assert "taint" in (_refusal(plain, tainted) or "")
    assert _refusal(tolerant, tainted) is None
    cordoned = _node(unschedulable=True)
    everything = TaskInfo("w", "p-0", "ns", "ns/p", pod=_pod(tolerations=[{"operator": "Exists"}]))
    assert "unschedulable" in (_refusal(plain, cordoned) or "")
    assert _refusal(everything, cordoned) is None
    no_pod = TaskInfo("x", "p-0", "ns", "ns/p")
    assert "taint" in (_refusal(no_pod, tainted) or "")
    assert _refusal(no_pod, _node()) is None


@pytest.mark.parametrize(
    ("selector", "tolerations", "text"),
    [
        (None, None, ""),
        ({}, [], ""),
        ({"zone": "a", "disk": "ssd"}, None, "([('disk', 'ssd'), ('zone', 'a')], None)"),
        (None, [{"key": "gpu", "operator": "Exists"}], "([], [{'key': 'gpu', 'operator': 'Exists'}])"),
    ],
)
def test_the_constraints_text_of_a_pod(selector, tolerations, text):
    task = TaskInfo("u", "p-0", "ns", "ns/p", pod=_pod(selector, tolerations))
    assert task_constraints(task) == text
    assert task_constraints(task.clone()) == text


def test_a_task_pickled_before_placements_were_kept_reads_its_pod():
    task = TaskInfo("u", "p-0", "ns", "ns/p", pod=_pod(selector={"zone": "a"}))
    state = task.__getstate__()
    del state["_placement"]  # as a task was pickled by an earlier version
    old = TaskInfo.__new__(TaskInfo)
    old.__setstate__(state)
    assert old.placement().selector == {"zone": "a"}
    task.placement()
    again = pickle.loads(pickle.dumps(task))
    assert again.placement().pod is again.pod and again.placement().selector == {"zone": "a"}
