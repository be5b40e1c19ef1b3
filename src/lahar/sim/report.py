"""What a simulation reports: the JSON of SPEC section 7, and tables for people.

JSON numbers use the units people read: cpu in cores, memory in bytes, other resources in their
own unit. The internal ``pods`` dimension is left out of queue resources.
"""

from __future__ import annotations

from typing import Any

from lahar.resources import Resource
from lahar.scheduler.api import allocated_status
from lahar.sim.engine import Simulation

__all__ = ["simulation_json", "queue_rows", "job_rows"]


def _public(res: Resource | None) -> dict[str, float]:
    if res is None:
        return {}
    return {k: v for k, v in res.to_json().items() if k != "pods"}


def _share(allocated: Resource, deserved: Resource | None) -> float:
    if deserved is None:
        return 0.0
    shares = [allocated.get(n) / deserved.get(n) for n in deserved.resource_names() if n != "pods" and deserved.get(n) > 0]
    return round(max(shares), 6) if shares else 0.0


def _allocations(sim: Simulation) -> dict[str, Resource]:
    totals: dict[str, Resource] = {name: Resource() for name in sim.world.cache.queues}
    for job in sim.world.cache.jobs.values():
        for status, tasks in job.status_index.items():
            if allocated_status(status) and job.queue in totals:
                for task in tasks.values():
                    totals[job.queue].add(task.resreq)
    return totals


def queue_rows(sim: Simulation) -> dict[str, dict[str, Any]]:
    attrs = sim.last.session.queue_attrs if sim.last else {}
    allocations = _allocations(sim)
    out = {}
    for name, info in sorted(sim.world.cache.queues.items()):
        attr = attrs.get(name)
        deserved = attr.deserved if attr is not None else None
        capability = Resource.from_list(info.queue.spec.capability) if info.queue.spec.capability else None
        out[name] = {
            "state": info.queue.status.state or info.queue.desired_state,
            "weight": info.queue.spec.weight,
            "parent": info.queue.parent_name,
            "deserved": _public(deserved),
            "allocated": _public(allocations.get(name)),
            "capability": _public(capability),
            "share": _share(allocations.get(name, Resource()), deserved),
        }
    return out


def job_rows(sim: Simulation) -> dict[str, dict[str, Any]]:
    outcomes = sim.last.jobs if sim.last else {}
    out = {}
    for key, group in sorted(sim.world.podgroups.items()):
        outcome = outcomes.get(key)
        out[key] = {
            "phase": group.status.phase or "Pending",
            "queue": group.queue,
            "reason": outcome.reason if outcome is not None else None,
        }
    return out


def simulation_json(sim: Simulation) -> dict[str, Any]:
    return {
        "cycles": [record.to_json() for record in sim.cycles if record.result.decisions],
        "queues": queue_rows(sim),
        "jobs": job_rows(sim),
        "tasks": {
            key: {"status": pod.phase, "node": pod.spec.node_name}
            for key, pod in sorted(sim.world.pods.items())
        },
        "rejected": [r.to_json() for r in sim.world.rejections],
        "events": sim.world.events,
        "time": sim.now,
    }
