"""The usage history's running totals (what the running pods are charged, per queue and owner)
are kept up from the pods, podgroups and vcjobs that changed since the last tick, not summed
again over every running pod each busy tick. After any sequence of changes they must be what
summing every running pod afresh gives: the same owners, the same values, the same resource
names (a GPU no running pod of an owner asks for any more is gone, not left at zero)."""

from __future__ import annotations

import random

import pytest

from lahar.model import Job, Pod, PodGroup
from lahar.security import OWNER
from lahar.server.usage_history import UsageHistory
from lahar.sim.world import World
from tests.builders import job, pod, podgroup, queue

START = "2026-01-01T00:00:00Z"


class _Store:
    """No records stored: the history starts empty (what it reads at start)."""

    def list(self, kind: str):
        return [], 0


def _pod(name: str, group: str, phase: str = "Running", owner: str | None = None, **requests) -> Pod:
    builder = pod(name).group(group).requests(**requests).on("n1", phase)
    if owner:
        builder = builder.annotation(OWNER, owner)
    manifest = builder.manifest()
    if phase == "Running":
        manifest["status"]["startTime"] = START
    return Pod.model_validate(manifest)


def _group(name: str, queue_name: str, owner: str | None = None) -> PodGroup:
    builder = podgroup(name).queue(queue_name).min_member(1).phase("Running")
    if owner:
        builder = builder.annotation(OWNER, owner)
    return builder.build()


def _afresh(world: World) -> dict:
    """Every running pod summed again, in a history that never saw the world before."""
    return {(q, u): total.to_json() for q, u, total in UsageHistory(_Store())._running(world)}


def _kept(history: UsageHistory, world: World) -> dict:
    return {(q, u): total.to_json() for q, u, total in history._running(world)}


def _counting(history: UsageHistory) -> list[int]:
    """How many times ``history`` summed every running pod again."""
    calls = [0]
    recount = history._recount

    def counted(world):
        calls[0] += 1
        return recount(world)

    history._recount = counted  # type: ignore[method-assign]
    return calls


def _world() -> World:
    world = World(raw=True)
    for name in ("a", "b"):
        world.ingest(queue(name).weight(1).build())
    return world


def test_totals_follow_pods_that_start_end_and_move():
    world, history = _world(), UsageHistory(_Store())
    world.ingest(_group("g1", "a"))
    world.ingest(_pod("p1", "g1", cpu=2, memory="1Gi"))
    world.ingest(_pod("p2", "g1", cpu=1, gpu=2))
    assert _kept(history, world) == _afresh(world) == {("a", "-"): {"cpu": 3.0, "memory": 2.0**30, "nvidia.com/gpu": 2.0}}
    world.ingest(_pod("p2", "g1", phase="Succeeded", cpu=1, gpu=2))  # the only GPU pod ends
    assert _kept(history, world) == _afresh(world) == {("a", "-"): {"cpu": 2.0, "memory": 2.0**30}}
    world.ingest(_group("g1", "b", owner="ann"))  # its podgroup moves to another queue and owner
    assert _kept(history, world) == _afresh(world) == {("b", "ann"): {"cpu": 2.0, "memory": 2.0**30}}
    world.forget(world.pods["default/p1"])
    assert _kept(history, world) == _afresh(world) == {}


def test_a_vcjob_s_owner_reaches_the_pods_of_its_podgroup():
    world, history = _world(), UsageHistory(_Store())
    world.ingest(_group("j", "a"))
    world.ingest(_pod("j-0", "j", cpu=1))
    assert _kept(history, world) == {("a", "-"): {"cpu": 1.0}}
    world.ingest(Job.model_validate(job("j").queue("a").tasks(1, cpu=1).annotation(OWNER, "bob").manifest()))
    assert _kept(history, world) == _afresh(world) == {("a", "bob"): {"cpu": 1.0}}


@pytest.mark.parametrize("seed", range(8))
def test_any_sequence_of_changes_gives_the_totals_summed_afresh(seed):
    rng = random.Random(seed)
    world, history = _world(), UsageHistory(_Store())
    recounts = _counting(history)
    groups = [f"g{n}" for n in range(4)]
    for name in groups:
        world.ingest(_group(name, rng.choice("ab")))
    for step in range(60):
        roll = rng.random()
        name = f"p{rng.randrange(12)}"
        if roll < 0.5:
            requests = {"cpu": rng.randint(1, 4), "memory": f"{rng.randint(1, 3)}Gi"}
            if rng.random() < 0.3:
                requests["gpu"] = rng.randint(1, 2)
            phase = rng.choice(["Running", "Running", "Pending", "Succeeded"])
            world.ingest(_pod(name, rng.choice(groups), phase, rng.choice([None, "ann", "bob"]), **requests))
        elif roll < 0.7 and f"default/{name}" in world.pods:
            world.forget(world.pods[f"default/{name}"])
        elif roll < 0.9:
            world.ingest(_group(rng.choice(groups), rng.choice("ab"), rng.choice([None, "ann"])))
        if rng.random() < 0.5:  # a tick: sometimes several changes come between two
            assert _kept(history, world) == _afresh(world), f"step {step}"
    assert _kept(history, world) == _afresh(world)
    assert recounts == [1]  # only the first call summed every pod: the others kept the totals up


def test_a_fraction_of_a_unit_is_summed_afresh_every_time():
    """Sums kept up by adding and taking away are exact only for whole numbers: with a request
    of a fraction of a byte the totals are summed again over every running pod, as before."""
    world, history = _world(), UsageHistory(_Store())
    recounts = _counting(history)
    world.ingest(_group("g", "a"))
    world.ingest(_pod("p1", "g", cpu=1, memory="1500m"))  # 1.5 bytes
    world.ingest(_pod("p2", "g", cpu=1, memory="1"))
    assert _kept(history, world) == _afresh(world)
    world.ingest(_pod("p1", "g", phase="Succeeded", cpu=1, memory="1500m"))
    assert _kept(history, world) == _afresh(world) == {("a", "-"): {"cpu": 1.0, "memory": 1.0}}
    assert recounts == [2]
