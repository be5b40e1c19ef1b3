"""Prometheus metrics with Volcano's queue metric names (reference: control plane section 5).

The registry is the server's own (not the process-global default), so several servers in one
process (tests) do not collide. Values are set after every scheduling cycle from its session.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from lahar.resources import Dim

__all__ = ["QueueMetrics"]

_PHASES = ("inqueue", "pending", "running", "unknown", "completed")


class QueueMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        q = ["queue_name"]
        qr = ["queue_name", "resource"]
        self.allocated_cpu = Gauge("volcano_queue_allocated_milli_cpu", "CPU allocated to the queue, milli-cores", q, registry=reg)
        self.allocated_memory = Gauge("volcano_queue_allocated_memory_bytes", "Memory allocated to the queue", q, registry=reg)
        self.allocated_scalar = Gauge("volcano_queue_allocated_scalar_resources", "Other resources allocated", qr, registry=reg)
        self.deserved_cpu = Gauge("volcano_queue_deserved_milli_cpu", "CPU the queue deserves, milli-cores", q, registry=reg)
        self.deserved_memory = Gauge("volcano_queue_deserved_memory_bytes", "Memory the queue deserves", q, registry=reg)
        self.deserved_scalar = Gauge("volcano_queue_deserved_scalar_resources", "Other resources deserved", qr, registry=reg)
        self.share = Gauge("volcano_queue_share", "Allocated over deserved, largest resource", q, registry=reg)
        self.weight = Gauge("volcano_queue_weight", "Queue weight", q, registry=reg)
        self.overused = Gauge("volcano_queue_overused", "1 when allocated reaches deserved in every resource", q, registry=reg)
        self.counts = {
            phase: Gauge(f"volcano_queue_pod_group_{phase}_count", f"Podgroups of the queue in phase {phase}", q, registry=reg)
            for phase in _PHASES
        }
        self.cycle_seconds = Histogram("lahar_scheduling_cycle_seconds", "Duration of one scheduling cycle", registry=reg)
        self.binds = Counter("lahar_binds_total", "Tasks bound", registry=reg)
        self.quiet_ticks = Counter(
            "lahar_quiet_ticks", "Control-loop ticks that skipped the scheduling cycle: nothing changed since the last cycle looked", registry=reg
        )
        self.evictions = Counter("lahar_evictions_total", "Tasks evicted", ["reason"], registry=reg)
        self.write_groups = Counter(
            "lahar_write_groups",
            "Groups of write requests run together, one transaction and one disk sync each (counted whether or not the commit succeeded; on the memory store each write is a group)",
            registry=reg,
        )
        self.grouped_writes = Counter("lahar_grouped_writes", "Write requests run in those groups", registry=reg)
        self.loop_cpu = Counter(
            "lahar_control_loop_cpu_seconds",
            "CPU seconds the control loop's thread spent in ticks (the rest of the process's CPU serves requests)",
            registry=reg,
        )

        self.write_lock = Counter(
            "lahar_write_lock_seconds",
            "Seconds the server's write lock was held, by the control loop's transactions (control_loop) and by the groups of write requests (requests): writes run one at a time, so when these add up to most of the wall clock the writes bound the server's rate",
            ["holder"],
            registry=reg,
        )
        self.loop_held = self.write_lock.labels("control_loop").inc
        self.requests_held = self.write_lock.labels("requests").inc

    def observe_write_group(self, writes: int) -> None:
        self.write_groups.inc()
        self.grouped_writes.inc(writes)

    def observe_cycle(self, result: Any, seconds: float, queues: dict[str, Any]) -> None:
        self.cycle_seconds.observe(seconds)
        for decision in result.decisions:
            if decision.type == "bind":
                self.binds.inc()
            elif decision.type == "evict":
                self.evictions.labels(decision.reason or "").inc()
        attrs = result.session.queue_attrs
        for name, queue in queues.items():
            allocated = result.queue_allocated.get(name)
            if allocated is not None:
                self._resource(name, allocated, self.allocated_cpu, self.allocated_memory, self.allocated_scalar)
            attr = attrs.get(name)
            if attr is not None:
                self._resource(name, attr.deserved, self.deserved_cpu, self.deserved_memory, self.deserved_scalar)
                self.share.labels(name).set(attr.share)
                self.overused.labels(name).set(1.0 if attr.deserved.less_equal(attr.allocated, Dim.ZERO) else 0.0)
            self.weight.labels(name).set(queue.spec.weight)
            for phase in _PHASES:
                self.counts[phase].labels(name).set(getattr(queue.status, phase))

    @staticmethod
    def _resource(name: str, res: Any, cpu: Gauge, memory: Gauge, scalar: Gauge) -> None:
        cpu.labels(name).set(res.milli_cpu)
        memory.labels(name).set(res.memory)
        for resource, value in (res.scalars or {}).items():
            scalar.labels(name, resource).set(value)

    def text(self) -> str:
        return generate_latest(self.registry).decode()
