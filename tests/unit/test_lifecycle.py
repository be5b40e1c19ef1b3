"""The queue lifecycle table of SPEC section 3, cell by cell."""

import pytest

from lahar.controller.lifecycle import transition

# from, action, holds unfinished jobs, expected target, ignored?
CELLS = [
    ("Open", "OpenQueue", False, "Open", False),
    ("Open", "CloseQueue", True, "Closing", False),
    ("Open", "CloseQueue", False, "Closed", False),
    ("Open", "SuspendQueue", True, "Suspended", False),
    ("Open", "ResumeQueue", True, "Open", False),
    ("Closing", "OpenQueue", True, "Open", False),
    ("Closing", "CloseQueue", True, "Closing", False),
    ("Closing", "CloseQueue", False, "Closed", False),
    ("Closing", "SuspendQueue", True, "Suspended", False),
    ("Closing", "ResumeQueue", True, "Closing", False),
    ("Closed", "OpenQueue", False, "Open", False),
    ("Closed", "CloseQueue", False, "Closed", False),
    ("Closed", "SuspendQueue", False, "Closed", True),
    ("Closed", "ResumeQueue", False, "Closed", True),
    ("Suspended", "OpenQueue", True, "Open", False),
    ("Suspended", "CloseQueue", True, "Closing", False),
    ("Suspended", "CloseQueue", False, "Closed", False),
    ("Suspended", "SuspendQueue", True, "Suspended", False),
    ("Suspended", "ResumeQueue", True, "Open", False),
    ("Unknown", "OpenQueue", True, "Open", False),
    ("Unknown", "CloseQueue", True, "Closing", False),
    ("Unknown", "CloseQueue", False, "Closed", False),
    ("Unknown", "SuspendQueue", True, "Suspended", False),
    ("Unknown", "ResumeQueue", True, "Unknown", False),
    ("Closing", "SyncQueue", False, "Closed", False),
    ("Closing", "SyncQueue", True, "Closing", False),
    ("Open", "SyncQueue", False, "Open", False),
    ("Open", "NoSuchAction", False, "Open", False),  # unknown actions sync, as in Volcano
    ("", "CloseQueue", False, "Closed", False),  # empty state means Open
]


@pytest.mark.parametrize("source,action,busy,target,ignored", CELLS)
def test_transition(source, action, busy, target, ignored):
    step = transition(source, action, busy)
    assert step.target.value == target
    assert bool(step.ignored) is ignored
    if ignored:
        assert "Closed queue's life has ended" in step.ignored


def test_unknown_state_is_an_error():
    with pytest.raises(ValueError):
        transition("Sleeping", "OpenQueue", False)
