"""Jobs that arrive during a replay are created then: their podgroups and pods carry that
``creationTimestamp``, as an API server stamps it. Job order falls back on it (then on the uid):
jobs waiting together in a queue go first come, first served, not by name."""

from __future__ import annotations

import math

import builders
from builders import node, queue
from lahar.model import Pod
from lahar.sim.engine import Simulation
from lahar.sim.inputs import resolve_config
from lahar.sim.metrics import MetricsCollector


def timed(name: str, at: str, duration: str):
    return builders.timed(name, "q", at, duration)


def replay(objects, until: float = math.inf):
    metrics = MetricsCollector()
    sim = Simulation(objects, resolve_config(None, objects), observers=[metrics])
    sim.run_until(until)
    return sim, metrics.result(sim)["jobs"]


def test_jobs_waiting_together_start_in_arrival_order_not_name_order():
    """One CPU, held until 10 s. ``b-early`` arrives at 1 s, ``a-late`` at 2 s (its name sorts
    first): ``b-early`` gets the CPU at 10 s, ``a-late`` when that ends at 20 s."""
    jobs = replay([node("n1", cpu="1", memory="4Gi"), queue("q").build(), timed("holder", "0s", "10s"), timed("b-early", "1s", "10s"), timed("a-late", "2s", "10s")])[1]
    assert [jobs[f"default/{name}"]["start"] for name in ("holder", "b-early", "a-late")] == [0.0, 10.0, 20.0]


def test_what_a_job_makes_is_created_when_it_arrives():
    later = timed("later", "90s", "1000s")
    sim, _ = replay([node("n1", cpu="4", memory="4Gi"), queue("q").build(), later], until=100)
    group, pod = sim.world.podgroups["default/later"], sim.world.pods["default/later-main-0"]
    assert group.metadata.creation_timestamp == pod.metadata.creation_timestamp == "1970-01-01T00:01:30Z"
    assert sim.world.cache.jobs["default/later"].creation == 90.0
    assert later.metadata.creation_timestamp is None  # a copy was stamped: the input may be replayed again


def test_a_bare_pod_and_its_podgroup_are_created_when_it_arrives():
    bare = Pod.model_validate(
        {"metadata": {"name": "solo", "annotations": {"lahar.dev/at": "5s", "lahar.dev/duration": "1s"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    )
    sim, _ = replay([node("n1", cpu="4", memory="4Gi"), bare])
    stamps = {obj.metadata.creation_timestamp for obj in (*sim.world.pods.values(), *sim.world.podgroups.values())}
    assert stamps == {"1970-01-01T00:00:05Z"}


def test_a_creation_time_written_in_the_manifest_is_kept():
    written = timed("dated", "3s", "1000s")
    written.metadata.creation_timestamp = "2026-01-01T00:00:00Z"
    sim, _ = replay([node("n1", cpu="4", memory="4Gi"), queue("q").build(), written], until=10)
    assert sim.world.podgroups["default/dated"].metadata.creation_timestamp == "2026-01-01T00:00:00Z"
