"""The cluster a trace is replayed on: ``--cluster`` specs, and a default sized from the trace.

``--cluster '40 x cpu=64,memory=512Gi,nvidia.com/gpu=8'`` makes 40 identical nodes
(``gpu`` is short for ``nvidia.com/gpu``; the option may be repeated, nodes are numbered
across all of them: ``node-0001``...).

The default cluster (Philly and CSV traces, when no node is given) is made of nodes shaped like
Philly's 8-GPU servers, ``cpu=64, memory=512Gi, nvidia.com/gpu=8`` (each dimension raised to
the largest single task request, so every task fits on one node). Their number is the largest of:

- for each resource, ``ceil(1.25 x mean demand / node size)``, where the mean demand is
  ``sum(tasks x request x duration) / (last arrival - first arrival)`` over the replayed jobs
  (when every job arrives at once: ``sum(tasks x request)``), i.e. the cluster can serve the
  trace's average load with 25% headroom, but never more than running every job at once needs
  with the same headroom (``sum(tasks x request)``: a job that runs longer than the arrivals
  last would otherwise count many times over);
- the nodes the largest gang needs to start at all.

Past ``MAX_NODES`` nodes it is an error that asks for ``--cluster`` or ``--nodes``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from lahar.errors import BadRequest
from lahar.model import Node
from lahar.model.base import ObjectMeta
from lahar.quantity import MAX_MAGNITUDE, TOO_LARGE, QuantityError, QuantityFormat, format_quantity, parse_quantity
from lahar.resources import GPU
from lahar.sim.traces.records import TraceJob

__all__ = ["parse_cluster", "default_cluster", "NODE_SHAPE", "HEADROOM"]

NODE_SHAPE = {"cpu": Fraction(64), "memory": Fraction(512 * 2**30), GPU: Fraction(8)}
HEADROOM = Fraction(5, 4)
MAX_NODES = 100_000
_SPEC = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\S.*)$")
_RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_ALIASES = {"gpu": GPU}
_EXAMPLE = '"40 x cpu=64,memory=512Gi,nvidia.com/gpu=8"'


def parse_cluster(specs: list[str]) -> list[Node]:
    """Nodes for ``--cluster`` specs, in order. Raises ``BadRequest`` naming the bad part."""
    shapes = [_parse_spec(spec) for spec in specs]
    if sum(count for count, _ in shapes) > MAX_NODES:
        raise BadRequest(f"--cluster: at most {MAX_NODES} nodes in all")
    nodes, number = [], 0
    for count, shape in shapes:
        for _ in range(count):
            number += 1
            nodes.append(_node(number, shape))
    return nodes


def _parse_spec(spec: str) -> tuple[int, dict[str, str]]:
    match = _SPEC.match(spec)
    if not match:
        raise BadRequest(f'--cluster: Invalid value: "{spec}": expected COUNT x RESOURCE=QUANTITY,... such as {_EXAMPLE}')
    count = int(match.group(1))
    if count < 1:
        raise BadRequest(f'--cluster: Invalid value: "{spec}": the node count must be >= 1')
    shape: dict[str, str] = {}
    for part in match.group(2).split(","):
        name, _, value = (s.strip() for s in part.partition("="))
        name = _ALIASES.get(name, name)
        if not name or not value or not _RESOURCE_NAME.match(name):
            raise BadRequest(f'--cluster: Invalid value: "{part.strip()}" in "{spec}": expected RESOURCE=QUANTITY such as cpu=64')
        try:
            amount = parse_quantity(value)
            if amount < 0:
                raise QuantityError(value)
        except QuantityError:
            raise BadRequest(f'--cluster: Invalid value: "{value}" for {name}: must be a quantity >= 0 such as 64, 500m, 512Gi') from None
        if amount > MAX_MAGNITUDE:
            raise BadRequest(f'--cluster: Invalid value: "{value}" for {name}: {TOO_LARGE}')
        shape[name] = value
    return count, shape


def _node(number: int, allocatable: dict[str, str]) -> Node:
    status = {"allocatable": {"pods": "110", **allocatable}}
    return Node(metadata=ObjectMeta(name=f"node-{number:04d}"), status=status)


def default_cluster(jobs: list[TraceJob]) -> tuple[list[Node], str]:
    """Nodes sized from ``jobs`` (see the module docstring), and a one-line description."""
    requests = [_requests(job) for job in jobs]
    shape = _shape(requests)
    gangs = (_gang_nodes(job, req, shape) for job, req in zip(jobs, requests))
    count = max([1, *_load_nodes(jobs, requests, shape), *gangs])
    allocatable = {name: _quantity(name, value) for name, value in shape.items()}
    text = ",".join(f"{k}={v}" for k, v in allocatable.items())
    if count > MAX_NODES:
        raise BadRequest(f"the cluster sized from the trace would have {count} nodes of {text}, more than {MAX_NODES}: give the nodes to replay on with --cluster or --nodes")
    return [_node(i, allocatable) for i in range(1, count + 1)], f"{count} x {text}"


@lru_cache(maxsize=4096)
def _parsed(value: str) -> Fraction:
    return parse_quantity(value)


def _requests(job: TraceJob) -> dict[str, Fraction]:
    return {name: _parsed(value) for name, value in job.requests.items()}


def _shape(requests: list[dict[str, Fraction]]) -> dict[str, Fraction]:
    shape = dict(NODE_SHAPE)
    for request in requests:
        for name, value in request.items():
            if value > shape.get(name, 0):
                shape[name] = value
    return shape


def _load_nodes(jobs: list[TraceJob], requests: list[dict[str, Fraction]], shape: dict[str, Fraction]) -> list[int]:
    if not jobs:
        return []
    span = max(j.arrival for j in jobs) - min(j.arrival for j in jobs)
    demand: dict[str, float] = {}  # the mean over the arrivals' span
    at_once: dict[str, float] = {}  # every job running together
    for job, request in zip(jobs, requests):
        weight = job.duration / span if span > 0 else 1.0
        for name, value in request.items():
            asked = job.tasks * float(value)
            demand[name] = demand.get(name, 0.0) + asked * weight
            at_once[name] = at_once.get(name, 0.0) + asked
    return [math.ceil(float(HEADROOM) * min(total, at_once[name]) / float(shape[name])) for name, total in demand.items() if shape[name] > 0]


def _gang_nodes(job: TraceJob, request: dict[str, Fraction], shape: dict[str, Fraction]) -> int:
    per_node = min((int(shape[n] // v) for n, v in request.items() if v > 0), default=job.min_available)
    return math.ceil(job.min_available / max(per_node, 1))


def _quantity(name: str, value: Fraction) -> str:
    fmt = QuantityFormat.BINARY if name == "memory" else QuantityFormat.DECIMAL
    return format_quantity(value, fmt)
