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

    def counted(queues, phase_counts):
        calls.append(1)
        return real(queues, phase_counts)

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
        for name in ("a", "b"):
            world.ingest(queue(name).build())
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
            name, state = rng.choice("ab"), rng.choice(("Open", "Closed"))
            for world in (skipping, always):
                world.ingest(world.queues[name].model_copy(update={"spec": world.queues[name].spec.model_copy(update={"state": state})}))
        for _ in range(rng.randrange(1, 3)):  # one or two steps' refreshes, some with nothing new
            skipping.refresh_queues(float(step))
            always._refreshed_at = -1  # never the count: it refreshes every time
            always.refresh_queues(float(step))
        assert {n: q.status for n, q in skipping.queues.items()} == {n: q.status for n, q in always.queues.items()}, step
