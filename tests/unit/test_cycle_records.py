"""The records a cycle makes by the thousand (a job's outcome, a decision, why a task fits no
node) write their own ``__init__``: compiled, the one a dataclass generates stays plain Python
and costs about ten times more per object. They must still behave as the dataclasses they were:
the same arguments and defaults, equality and repr, and a round trip through pickle and copy
(checkpoints and replays in other processes carry them)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest

from lahar.scheduler.fit import FitError, FitErrors, StatusCode
from lahar.scheduler.cycle import JobOutcome
from lahar.scheduler.framework.session import Decision
from tests.source import COMPILED

RECORDS = [
    JobOutcome("Inqueue", "q", [{"type": "Unschedulable", "status": "True"}], {"kind": "deserved"}, running=1, succeeded=2, failed=3),
    Decision("bind", "ns/t-0", "node-1", None, "q", "ns/j"),
    FitError("node-1", [(StatusCode.UNSCHEDULABLE, "Insufficient cpu")]),
    FitErrors({"node-1": FitError("node-1", [])}, "", {"Insufficient cpu": 3}, 4),
]


def test_arguments_by_name_and_defaults_as_before():
    outcome = JobOutcome(phase="Running", queue="q")
    assert (outcome.conditions, outcome.reason, outcome.running, outcome.succeeded, outcome.failed) == ([], None, 0, 0, 0)
    assert JobOutcome("Running", "q").conditions is not outcome.conditions  # a list of its own, as default_factory gave
    decision = Decision("evict", "ns/t-1")
    assert (decision.node, decision.reason, decision.queue, decision.job) == (None, None, None, None)
    errors = FitErrors(total=5)
    assert (errors.nodes, errors.err, errors.counts, errors.total) == ({}, "", {}, 5)
    assert FitErrors().nodes is not errors.nodes


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_equality_repr_pickle_copy_and_replace(record):
    twin = copy.deepcopy(record)
    assert twin == record and twin is not record
    assert repr(twin) == repr(record) and repr(record).startswith(type(record).__name__ + "(")
    assert pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)) == record
    assert copy.copy(record) == record
    name = "err" if isinstance(record, FitErrors) else dataclasses.fields(record)[0].name
    changed = dataclasses.replace(record, **{name: "other"})
    assert getattr(changed, name) == "other" and changed != record


def test_compiled_records_have_a_compiled_init():
    """What the change is for: a compiled core builds these without calling into Python code."""
    for cls in (JobOutcome, Decision, FitError, FitErrors):
        assert inspect.isfunction(cls.__init__) is not COMPILED, cls
