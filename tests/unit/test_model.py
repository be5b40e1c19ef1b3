"""Manifests: Volcano kinds load typed, unknown fields survive, bad documents say what is wrong."""

import pytest

from lahar.errors import BadRequest, Invalid
from lahar.model import Job, Pod, PodGroup, Queue, dump_yaml, expand_job, kind_class, load_objects

QUEUE_YAML = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
  annotations: {team: vision}
spec:
  weight: 3
  capability: {cpu: "8", memory: 16Gi}
  extendClusters: [{name: c1, weight: 1}]
status:
  state: Open
"""


def test_queue_loads_with_defaults_and_keeps_unknown_fields():
    (queue,) = load_objects(QUEUE_YAML)
    assert isinstance(queue, Queue)
    assert queue.spec.weight == 3
    assert queue.reclaimable is True
    assert queue.parent_name == "root"
    assert queue.key == "research"
    dumped = queue.dump()
    assert dumped["spec"]["extendClusters"] == [{"name": "c1", "weight": 1}]
    assert dumped["metadata"]["annotations"] == {"team": "vision"}


def test_round_trip_is_stable():
    objs = load_objects(QUEUE_YAML)
    again = load_objects(dump_yaml(objs))
    assert [o.dump() for o in again] == [o.dump() for o in objs]


def test_multi_document_and_json_and_list():
    text = QUEUE_YAML + "---\n" + '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]}'
    objs = load_objects(text)
    assert [o.kind for o in objs] == ["Queue", "Node"]


def test_numbers_as_quantities_become_strings():
    (queue,) = load_objects("kind: Queue\nmetadata: {name: q}\nspec: {capability: {cpu: 2, memory: 1.5}}")
    assert queue.spec.capability == {"cpu": "2", "memory": "1.5"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("- a\n- b", "must be an object"),
        ("apiVersion: v1\nmetadata: {name: x}", "kind: Required value"),
        ("kind: Gadget\nmetadata: {name: x}", 'kind: Unsupported value: "Gadget"'),
        ("kind: Queue\napiVersion: v9\nmetadata: {name: x}", 'apiVersion: Unsupported value: "v9"'),
        ("kind: Queue\nmetadata: {name: x\n", "not valid YAML"),
    ],
)
def test_bad_documents(text, message):
    with pytest.raises(BadRequest) as err:
        load_objects(text)
    assert message in err.value.message


def test_wrong_types_report_every_field_at_once():
    text = "kind: Queue\nmetadata: {name: q}\nspec: {weight: heavy, reclaimable: 'yes', priority: [1]}"
    with pytest.raises(Invalid) as err:
        load_objects(text)
    paths = [e.path for e in err.value.errors]
    assert paths == ["spec.weight", "spec.reclaimable", "spec.priority"]
    assert 'spec.weight: Invalid value: "heavy": must be an integer' in err.value.message


def test_kind_aliases():
    assert kind_class("queues") is Queue
    assert kind_class("pg") is PodGroup
    assert kind_class("vcjob") is Job
    with pytest.raises(BadRequest):
        kind_class("gizmo")


def test_pod_requests_sum_containers_and_max_init():
    (pod,) = load_objects(
        """
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - {name: init, resources: {requests: {cpu: "3"}}}
  - {name: side, restartPolicy: Always, resources: {requests: {cpu: 500m}}}
  containers:
  - {name: a, resources: {requests: {cpu: "1", memory: 1Gi}}}
  - {name: b, resources: {limits: {cpu: "1", nvidia.com/gpu: "1"}}}
"""
    )
    req = pod.requests()
    assert req["cpu"] == 3  # init container 3 > 1 + 1 + 0.5
    assert req["memory"] == 2**30
    assert req["nvidia.com/gpu"] == 1  # limits default the requests


def test_expand_job():
    (job,) = load_objects(
        """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations: {lahar.dev/duration: 10m}
spec:
  queue: research
  minAvailable: 3
  priorityClassName: high
  tasks:
  - name: ps
    replicas: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "2", memory: 1Gi}}}]}}
  - name: worker
    replicas: 4
    minAvailable: 2
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}}]}}
"""
    )
    group, pods = expand_job(job)
    assert group.key == "ml/train"
    assert group.spec.min_member == 3
    assert group.spec.queue == "research"
    assert group.spec.min_task_member == {"worker": 2}
    assert group.spec.min_resources == {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "2"}
    assert [p.name for p in pods] == ["train-ps-0", "train-worker-0", "train-worker-1", "train-worker-2", "train-worker-3"]
    assert all(isinstance(p, Pod) and p.group_name == "train" for p in pods)
    assert pods[0].annotations["lahar.dev/duration"] == "10m"
    assert pods[1].spec.priority_class_name == "high"
    assert job.spec.tasks[1].template.spec.priority_class_name is None  # the template is untouched
    assert pods[1].dump()["spec"] == {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}], "priorityClassName": "high"}


def test_default_min_available_is_every_replica():
    (job,) = load_objects("kind: Job\nmetadata: {name: j}\nspec: {tasks: [{name: t, replicas: 3}]}")
    group, pods = expand_job(job)
    assert group.spec.min_member == 3 and len(pods) == 3 and group.queue == "default"


def _parts(model) -> tuple:
    return model.__dict__, model.__pydantic_extra__, model.__pydantic_fields_set__, model.__pydantic_private__


@pytest.mark.parametrize("update", [None, {}, {"name": "other"}, {"unknownField": "x"}, {"name": "b", "labels": {"a": "1"}, "later": [1]}])
def test_model_copy_is_pydantics(update):
    """``K8sModel.model_copy`` (shallow) makes what pydantic's own makes: the same fields,
    unknown fields and fields set, the values shared, the maps its own; the original untouched."""
    from pydantic import BaseModel

    (queue,) = load_objects(QUEUE_YAML)
    queue.metadata.__pydantic_extra__["kept"] = {"deep": True}
    models = [queue, queue.metadata, queue.spec, queue.status]
    for model in models:
        before = [part.copy() if isinstance(part, (dict, set)) else part for part in _parts(model)]
        ours, theirs = model.model_copy(update=update), BaseModel.model_copy(model, update=update)
        assert type(ours) is type(model)
        assert _parts(ours) == _parts(theirs)
        assert list(_parts(model)) == before
        for mine, original in zip(_parts(ours)[:3], _parts(model)[:3]):
            assert original is None or mine is not original
        assert all(ours.__dict__[name] is value for name, value in model.__dict__.items() if name not in (update or {}))
        assert ours.dump() == theirs.dump()


def test_deep_model_copy_is_pydantics():
    (queue,) = load_objects(QUEUE_YAML)
    copied = queue.model_copy(deep=True)
    assert copied.dump() == queue.dump() and copied.spec is not queue.spec
    assert copied.spec.__pydantic_extra__["extendClusters"] is not queue.spec.__pydantic_extra__["extendClusters"]
