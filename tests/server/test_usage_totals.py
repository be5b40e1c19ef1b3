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


class _Rows(dict):
    """The rows by owner, in the order they came (the ledger adds a queue's users in that order)."""

    def __init__(self, rows) -> None:
        super().__init__(((q, u), total.to_json()) for q, u, total in rows)
        self.order = list(self)

    def __eq__(self, other) -> bool:
        return dict.__eq__(self, other) and (not isinstance(other, _Rows) or self.order == other.order)


def _afresh(world: World) -> _Rows:
    """Every running pod summed again, in a history that never saw the world before."""
    return _Rows(UsageHistory(_Store())._recount(world).rows())


def _kept(history: UsageHistory, world: World) -> _Rows:
    return _Rows(history._running(world))


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


def test_the_tick_a_fraction_arrives_in_is_summed_afresh_too():
    world, history = _world(), UsageHistory(_Store())
    world.ingest(_group("g", "a"))
    world.ingest(_pod("p1", "g", cpu=1, memory="1"))
    assert _kept(history, world) == _afresh(world)
    for name, memory in (("p3", "200m"), ("p2", "600m"), ("p4", "100m")):  # tenths of a byte: the order of the sum shows
        world.ingest(_pod(name, "g", cpu=1, memory=memory))
    assert _kept(history, world) == _afresh(world)


def test_values_too_large_to_add_exactly_are_summed_afresh():
    world, history = _world(), UsageHistory(_Store())
    world.ingest(_group("g", "a"))
    world.ingest(_pod("huge", "g", cpu=1, memory="1Ei"))  # 2**60 bytes: 3 more are lost in a float
    world.ingest(_pod("small", "g", cpu=1, memory="3"))
    assert _kept(history, world) == _afresh(world)
    world.ingest(_pod("huge", "g", phase="Succeeded", cpu=1, memory="1Ei"))
    assert _kept(history, world) == _afresh(world) == {("a", "-"): {"cpu": 1.0, "memory": 3.0}}


def test_rows_come_in_owner_order_both_ways():
    """A queue's users are added up by the ledger in row order: with fractions of a core, the
    order moves the last digit, so both ways must hand the rows in the same order."""
    world, history = _world(), UsageHistory(_Store())
    for user in ("u3", "u1", "u2"):
        world.ingest(_group(f"g-{user}", "a", owner=user))
    world.ingest(_pod("p1", "g-u1", cpu="200m"))
    assert _kept(history, world) == _afresh(world)
    world.ingest(_pod("p3", "g-u3", cpu="100m"))
    world.ingest(_pod("p2", "g-u2", cpu="300m"))
    world.forget(world.pods["default/p1"])
    world.ingest(_pod("p1", "g-u1", cpu="200m"))
    kept = _kept(history, world)
    assert kept == _afresh(world)
    assert kept.order == [("a", "u1"), ("a", "u2"), ("a", "u3")]


def test_podgroups_whose_pods_all_ended_leave_nothing_behind():
    world, history = _world(), UsageHistory(_Store())
    history._running(world)
    for n in range(20):
        world.ingest(_group(f"g{n}", "a"))
        world.ingest(_pod(f"p{n}", f"g{n}", cpu=1))
        history._running(world)
        world.forget(world.pods[f"default/p{n}"])
        history._running(world)
    totals = history._totals
    assert (totals.charges, totals.by_owner, totals.by_group) == ({}, {}, {})


def test_a_running_pod_without_podgroup_is_charged_to_its_queue_annotation():
    world, history = _world(), UsageHistory(_Store())
    bare = pod("bare").annotation("scheduling.volcano.sh/queue-name", "b").requests(cpu=2).on("n1").manifest()
    bare["status"]["startTime"] = START
    world.ingest(Pod.model_validate(bare))
    assert _kept(history, world) == _afresh(world) == {("b", "-"): {"cpu": 2.0}}
