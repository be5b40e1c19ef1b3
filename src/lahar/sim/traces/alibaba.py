"""Alibaba PAI GPU cluster trace v2023 ("openb", Weng et al., ATC'23), with its real node list.

Pods (``openb_pod_list_*.csv``): one job of one task per pod, named after the pod:

- queue key = ``qos`` (LS, BE, Burstable, Guaranteed) by default, or ``gpu_spec`` (the allowed
  GPU models, empty meaning any: those pods go to the ``default`` queue);
- requests: cpu = ``cpu_milli`` millicores, memory = ``memory_mib`` MiB, GPUs =
  ``gpu_milli / 1000`` when ``num_gpu`` is 1 (GPU sharing: 460 asks for 0.46 GPU), else ``num_gpu``;
- arrival = ``creation_time``; duration = ``deletion_time - creation_time`` (the pod's lifetime
  in the trace; the trace's own queueing delay is not taken out).

Nodes (``openb_node_list_all_node.csv``, found beside the pod list): one Node per row named by
``sn``, allocatable cpu, memory and ``nvidia.com/gpu``; the GPU model is the label
``lahar.dev/gpu-model``. ``gpu_spec`` is only a queue key: it does not constrain placement.
"""

from __future__ import annotations

from pathlib import Path

from lahar.errors import BadRequest
from lahar.model import Node
from lahar.model.base import ObjectMeta
from lahar.resources import GPU
from lahar.sim.traces.reading import CsvRow, CsvTable
from lahar.sim.traces.records import Trace, TraceJob

__all__ = ["load_alibaba", "load_alibaba_nodes", "QUEUE_KEYS", "DEFAULT_POD_LIST", "NODE_LIST"]

QUEUE_KEYS = ("qos", "gpu_spec")
DEFAULT_POD_LIST = "openb_pod_list_default.csv"
NODE_LIST = "openb_node_list_all_node.csv"
GPU_MODEL_LABEL = "lahar.dev/gpu-model"
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time")
_POD_OPTIONAL = ("gpu_spec", "qos", "pod_phase", "scheduled_time")
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")


def load_alibaba(path: str | Path, queue_key: str = "qos") -> Trace:
    """Pods and nodes of the trace. ``path`` is a pod list, or the folder holding the default one."""
    if queue_key not in QUEUE_KEYS:
        raise BadRequest(f'--queue-key: Unsupported value: "{queue_key}": supported values: "qos", "gpu_spec"')
    pods = Path(path)
    if pods.is_dir():
        pods = pods / DEFAULT_POD_LIST
    table = CsvTable(pods, "Alibaba GPU 2023 pod list", _POD_COLUMNS + (queue_key,), _POD_OPTIONAL)
    jobs = [_job(row, number, queue_key) for number, row in enumerate(table.rows(), start=1)]
    jobs.sort(key=lambda j: (j.arrival, j.row))
    node_list = pods.parent / NODE_LIST
    nodes = load_alibaba_nodes(node_list) if node_list.is_file() else []
    return Trace("alibaba", jobs, nodes)


def _job(row: CsvRow, number: int, queue_key: str) -> TraceJob:
    created, deleted = row.number("creation_time"), row.number("deletion_time")
    if deleted < created:
        raise row.fail("deletion_time", f"must not be before creation_time ({created:g})")
    return TraceJob(
        name=_name(row),
        queue=row.get(queue_key),
        arrival=created,
        duration=deleted - created,
        tasks=1,
        requests=_requests(row),
        min_available=1,
        row=number,
    )


def _name(row: CsvRow) -> str:
    name = row.get("name").lower()
    if not name:
        raise row.fail("name", "is empty: every pod needs a name")
    return name


def _requests(row: CsvRow) -> dict[str, str]:
    requests = {"cpu": f"{row.integer('cpu_milli')}m", "memory": f"{row.integer('memory_mib')}Mi"}
    count = row.integer("num_gpu")
    if count == 1:
        milli = row.integer("gpu_milli")
        if milli > 1000:
            raise row.fail("gpu_milli", "must be at most 1000 (one whole GPU) when num_gpu is 1")
        if milli:
            requests[GPU] = f"{milli}m" if milli % 1000 else "1"
    elif count > 1:
        requests[GPU] = str(count)
    return requests


def load_alibaba_nodes(path: str | Path) -> list[Node]:
    """The trace's node list as Nodes (110 pods each, Kubernetes' default)."""
    table = CsvTable(path, "Alibaba GPU 2023 node list", _NODE_COLUMNS, ("model",))
    return [_node(row) for row in table.rows()]


def _node(row: CsvRow) -> Node:
    allocatable = {"cpu": f"{row.integer('cpu_milli')}m", "memory": f"{row.integer('memory_mib')}Mi", "pods": "110"}
    gpus = row.integer("gpu")
    if gpus:
        allocatable[GPU] = str(gpus)
    labels = {GPU_MODEL_LABEL: row.get("model")} if row.get("model") else {}
    name = row.get("sn").lower()
    if not name:
        raise row.fail("sn", "is empty: every node needs a name")
    return Node(metadata=ObjectMeta(name=name, labels=labels), status={"allocatable": allocatable})
