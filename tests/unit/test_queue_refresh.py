"""The queue controller's status refresh (``lahar.controller.queue.refresh``) and the podgroup
counts it reads (``LiveView.phase_counts``), case by case."""

import pytest

from lahar.admission.view import LiveView
from lahar.controller.queue import refresh
from lahar.model.queue import Queue
from tests.builders import podgroup, queue

PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")


def counts(**given: int) -> dict[str, int]:
    return {phase: given.get(phase.lower(), 0) for phase in PHASES}


def with_counts(q: Queue, **given: int) -> Queue:
    status = q.status.model_copy(update=given)
    return q.model_copy(update={"status": status})


def run(queues: list[Queue], per_queue: dict[str, dict[str, int]]):
    table = {q.name: q for q in queues}
    before = {name: q.dump() for name, q in table.items()}
    changes = refresh(table, lambda name: per_queue.get(name, counts()))
    assert {name: q.dump() for name, q in table.items()} == before, "refresh changed a queue it was given"
    return changes


# name, queue as stored, its podgroups per phase, expected status fields of the written queue
# (None: nothing written for it), expected event reasons
CASES = [
    ("counts written", queue("a").status("Open").build(), counts(pending=2, inqueue=1, running=3, completed=4),
     {"state": "Open", "pending": 2, "inqueue": 1, "running": 3, "unknown": 0, "completed": 4}, []),
    ("up to date: nothing written", with_counts(queue("a").status("Open").build(), running=3), counts(running=3), None, []),
    ("a count falls to zero", with_counts(queue("a").status("Open").build(), running=3, completed=1), counts(completed=2),
     {"state": "Open", "pending": 0, "inqueue": 0, "running": 0, "unknown": 0, "completed": 2}, []),
    ("closing with nothing unfinished closes", queue("a").state("Closed").status("Closing").build(), counts(completed=5),
     {"state": "Closed", "completed": 5}, ["SyncQueue"]),
    ("closing with a job running stays closing", with_counts(queue("a").state("Closed").status("Closing").build(), running=1),
     counts(running=1), None, []),
    ("desired state closed while busy: closing", queue("a").state("Closed").status("Open").build(), counts(pending=1),
     {"state": "Closing", "pending": 1}, ["CloseQueue"]),
    ("no observed state yet: the desired one", queue("a").build(), counts(), {"state": "Open"}, []),  # unset reads as Open: no move
]


@pytest.mark.parametrize("name,stored,phases,expected,events", CASES, ids=[c[0] for c in CASES])
def test_refresh(name, stored, phases, expected, events):
    changes = run([stored], {"a": phases})
    if expected is None:
        assert "a" not in changes.queues
    else:
        written = changes.queues["a"]
        status = written.status.model_dump()
        assert {field: status[field] for field in expected} == expected
        # everything but the status is the stored queue's (spec.state aside, which a move sets)
        assert written.metadata == stored.metadata
        assert written.spec.model_dump(exclude={"state"}) == stored.spec.model_dump(exclude={"state"})
        assert written.status.allocated == stored.status.allocated
    assert [event.reason for event in changes.events if event.queue == "a"] == events


def test_refresh_leaves_other_fields_and_queues_alone():
    allocated = with_counts(queue("a").weight(3).status("Open").build(), running=1)
    allocated = allocated.model_copy(update={"status": allocated.status.model_copy(update={"allocated": {"cpu": "2"}})})
    quiet = with_counts(queue("b").status("Open").build(), pending=1)
    changes = run([allocated, quiet], {"a": counts(running=2), "b": counts(pending=1)})
    assert set(changes.queues) == {"a"}
    written = changes.queues["a"]
    assert written.status.allocated == {"cpu": "2"} and written.status.running == 2
    assert written.spec.weight == 3
    assert written is not allocated and written.status is not allocated.status
    assert allocated.status.running == 1


def test_phase_counts_names_every_phase_in_order():
    view = LiveView()
    for name, phase in (("g1", "Running"), ("g2", "Running"), ("g3", None), ("g4", "Completed")):
        view.put(podgroup(name).queue("q").phase(phase).build() if phase else podgroup(name).queue("q").build())
    assert view.phase_counts("q") == {"Pending": 1, "Inqueue": 0, "Running": 2, "Unknown": 0, "Completed": 1}
    assert list(view.phase_counts("q")) == list(PHASES)
    assert view.phase_counts("elsewhere") == counts()
    view.remove(podgroup("g1").queue("q").build())
    assert view.phase_counts("q")["Running"] == 1


@pytest.mark.parametrize("phase", PHASES)
def test_any_one_count_moving_alone_is_written(phase):
    """Each count is compared: one phase's count moving alone writes the queue, with that
    count and the others as they were."""
    stored = with_counts(queue("a").status("Open").build(), pending=1, inqueue=2, running=3, unknown=4, completed=5)
    same = counts(pending=1, inqueue=2, running=3, unknown=4, completed=5)
    assert "a" not in run([stored], {"a": same}).queues
    moved = dict(same, **{phase: same[phase] + 10})
    written = run([stored], {"a": moved}).queues["a"].status
    assert {p: getattr(written, p.lower()) for p in PHASES} == moved
