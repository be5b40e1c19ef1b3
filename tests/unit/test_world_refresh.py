"""The queue controller's refresh is a pure function of the world's queues and their podgroups'
phases. A world that refreshed and found nothing to change does not refresh again until a queue
comes, changes or goes, or a podgroup comes, goes or changes queue or phase (``LiveView.generation``):
a replay step whose writes were pods, vcjobs or podgroups' other fields skips it. Whatever the
sequence of changes, the queues end as a world that refreshes every time leaves them."""

from __future__ import annotations

import random

import pytest

from lahar.sim import world as world_module
from lahar.sim.world import World
from tests.builders import pod, podgroup, queue

PHASES = ("Pending", "Inqueue", "Running", "Completed")


@pytest.fixture
def refreshes(monkeypatch):
    """How many times the queue controller's ``refresh`` ran."""
    calls = []
    real = world_module.refresh

    def counted(queues, phase_counts, only=None):
        calls.append(1)
        return real(queues, phase_counts, only)

    monkeypatch.setattr(world_module, "refresh", counted)
    return calls


def test_a_refresh_that_found_nothing_is_not_run_again_until_the_world_changes(refreshes):
    world = World()
    world.ingest(queue("q").build())
    world.ingest(podgroup("g").queue("q").min_member(1).phase("Pending").build())
    world.refresh_queues(0.0)  # the counts are written: the queue changed
    world.refresh_queues(0.0)  # nothing more to change
    ran = len(refreshes)
    assert world.queues["q"].status.pending == 1
    world.refresh_queues(1.0)
    world.refresh_queues(2.0)
    assert len(refreshes) == ran  # the same world: skipped
    world.ingest(pod("p").group("g").requests(cpu="1").build())  # a pod: not read by the controller
    again = podgroup("g").queue("q").min_member(1).phase("Pending").annotate(note="x").build()
    world.ingest(again)  # the podgroup's phase and queue as they were
    world.refresh_queues(2.5)
    assert len(refreshes) == ran
    world.ingest(podgroup("g").queue("q").min_member(1).phase("Running").build())
    world.refresh_queues(3.0)
    assert len(refreshes) == ran + 1
    assert (world.queues["q"].status.pending, world.queues["q"].status.running) == (0, 1)


def test_a_refresh_that_changed_a_queue_runs_again_next_time(refreshes):
    world = World()
    world.ingest(queue("q").build())
    world.refresh_queues(0.0)  # the queue's state and counts are written
    first = len(refreshes)
    world.refresh_queues(0.0)
    assert len(refreshes) == first + 1  # what the last one wrote is a change to look at
    world.refresh_queues(0.0)
    assert len(refreshes) == first + 1


@pytest.mark.parametrize("seed", range(20))
def test_queues_end_as_with_a_refresh_every_time(seed):
    """Random podgroups come, change phase and go, and a queue is closed or opened; after each
    step the world that skips refreshes holds the same queue statuses as one that never does."""
    rng = random.Random(seed)
    skipping, always = World(), World()
    for world in (skipping, always):
        world.ingest(queue("p").build())  # a parent: closing it closes its children, opening it reopens them
        for name in ("a", "b"):
            world.ingest(queue(name).parent("p").build())
    groups: dict[str, str] = {}
    for step in range(60):
        move = rng.random()
        if move < 0.5 or not groups:
            name = f"g{rng.randrange(8)}"
            groups[name] = groups.get(name) or rng.choice("ab")
            phase = rng.choice(PHASES)
            objects = [podgroup(name).queue(groups[name]).min_member(1).phase(phase).build() for _ in range(2)]
            skipping.ingest(objects[0])
            always.ingest(objects[1])
        elif move < 0.7:
            name = rng.choice(sorted(groups))
            for world in (skipping, always):
                world.forget(world.podgroups[f"default/{name}"])
            del groups[name]
        elif move < 0.8:
            name, state = rng.choice("abp"), rng.choice(("Open", "Closed"))
            for world in (skipping, always):
                world.ingest(world.queues[name].model_copy(update={"spec": world.queues[name].spec.model_copy(update={"state": state})}))
        for _ in range(rng.randrange(1, 3)):  # one or two steps' refreshes, some with nothing new
            skipping.refresh_queues(float(step))
            always._refreshed_at = -1  # never the count: it refreshes every time,
            always._settled.clear()  # every queue
            always.refresh_queues(float(step))
        assert {n: q.status for n, q in skipping.queues.items()} == {n: q.status for n, q in always.queues.items()}, step


def test_a_refresh_looks_only_at_the_queues_that_moved():
    """A queue found up to date is not looked at again (its counts not asked) while neither it
    nor its podgroups' counts moved; one whose podgroup moved, or that was put again, is."""
    world = World()
    for name in ("a", "b"):
        world.ingest(queue(name).build())
    world.ingest(podgroup("g").queue("a").min_member(1).phase("Pending").build())
    world.refresh_queues(0.0)
    world.refresh_queues(0.0)
    asked: list[str] = []
    real = world.live.phase_counts

    def counted(name: str) -> dict[str, int]:
        asked.append(name)
        return real(name)

    world.live.phase_counts = counted
    world.ingest(podgroup("g").queue("a").min_member(1).phase("Running").build())
    world.refresh_queues(1.0)
    assert asked == ["a"]
    assert (world.queues["a"].status.pending, world.queues["a"].status.running) == (0, 1)
    asked.clear()
    world.refresh_queues(1.0)  # the queue just written: looked at once more, found up to date
    assert asked == ["a"]
    asked.clear()
    world.ingest(world.queues["b"].model_copy(update={"spec": world.queues["b"].spec.model_copy(update={"weight": 3})}))
    world.refresh_queues(2.0)
    assert asked == ["b"]


def test_an_action_on_a_queue_looks_at_every_queue():
    """Closing a parent closes its children, which a refresh that looked at the parent alone
    would leave as they were: the children end closed, as with every queue looked at."""
    world = World()
    world.ingest(queue("p").build())
    for name in ("a", "b"):
        world.ingest(queue(name).parent("p").build())
    for _ in range(2):
        world.refresh_queues(0.0)
    parent = world.queues["p"]
    world.ingest(parent.model_copy(update={"spec": parent.spec.model_copy(update={"state": "Closed"})}))
    for _ in range(3):
        world.refresh_queues(1.0)
    assert {name: world.queues[name].status.state for name in ("p", "a", "b")} == {"p": "Closed", "a": "Closed", "b": "Closed"}
