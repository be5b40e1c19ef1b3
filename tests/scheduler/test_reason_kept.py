"""A waiting job's reason that reads as its last one is handed back as the last object. A
deserved reason is made of one part per message, the same object from one session to the
next, so the close tells that the reason reads the same by that part alone, without comparing
the reasons key by key (``reasons._reads_as``), which it still does for any other reason."""

from __future__ import annotations

import pytest

from lahar.scheduler import reasons
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.scheduler.test_refused_by_kind import _cluster

pytestmark = pytest.mark.python_source


def test_a_deserved_reason_made_of_the_same_part_is_kept_without_comparing(monkeypatch):
    conf = load_config(default_config_text())
    state = ClusterState.from_objects(_cluster())
    first = run_cycle(state, conf, 0.0, uid="c0")
    outcome = first.jobs["ns/big0"]
    assert outcome.reason is not None and outcome.reason["kind"] == "deserved"
    compared: list[str] = []
    real = reasons._reads_as

    def counted(last, job, part):
        compared.append(job.uid)
        return real(last, job, part)

    monkeypatch.setattr(reasons, "_reads_as", counted)
    again = run_cycle(state, conf, 1.0, uid="c1", previous=first.jobs)
    kept = again.jobs["ns/big0"]
    assert kept.reason is outcome.reason and kept.reason_part is outcome.reason_part
    waiting = [uid for uid, o in again.jobs.items() if o.reason is not None]
    assert "ns/big0" in waiting and "ns/big0" not in compared
    assert all(again.jobs[uid].reason is first.jobs[uid].reason for uid in waiting)
    # the same reasons, made without the last outcomes
    fresh = run_cycle(state, conf, 2.0, uid="c2")
    assert {uid: o.reason for uid, o in fresh.jobs.items()} == {uid: o.reason for uid, o in again.jobs.items()}


def test_a_part_that_is_not_the_last_one_is_compared(monkeypatch):
    """A last outcome without its part (made elsewhere, or by ``dataclasses.replace``) is
    compared key by key, and kept when it reads the same."""
    conf = load_config(default_config_text())
    state = ClusterState.from_objects(_cluster())
    first = run_cycle(state, conf, 0.0, uid="c0")
    for outcome in first.jobs.values():
        outcome.reason_part = None
    compared: list[str] = []
    real = reasons._reads_as
    monkeypatch.setattr(reasons, "_reads_as", lambda last, job, part: compared.append(job.uid) or real(last, job, part))
    again = run_cycle(state, conf, 1.0, uid="c1", previous=first.jobs)
    assert "ns/big0" in compared and again.jobs["ns/big0"].reason is first.jobs["ns/big0"].reason


def test_a_hidden_look_alike_s_reason_is_made_of_its_first_job_s_part(monkeypatch):
    """A look-alike hidden in one cycle gets its first job's reason but for the job, made of
    the same part; a later cycle that looks at it keeps that reason without comparing."""
    conf = load_config(default_config_text())
    state = ClusterState.from_objects(_cluster())
    hidden = run_cycle(state, conf, 0.0, uid="c0", lookalikes=True)
    assert hidden.lookalikes_hidden > 0 and not hidden.lookalikes_ran_again
    outcome = hidden.jobs["ns/big3"]
    assert outcome.shared_reason is not None and outcome.reason_part is hidden.jobs["ns/big0"].reason_part
    compared: list[str] = []
    real = reasons._reads_as
    monkeypatch.setattr(reasons, "_reads_as", lambda last, job, part: compared.append(job.uid) or real(last, job, part))
    full = run_cycle(state, conf, 1.0, uid="c1", previous=hidden.jobs)
    assert full.jobs["ns/big3"].reason is outcome.reason and "ns/big3" not in compared
    assert {uid: o.reason for uid, o in full.jobs.items()} == {uid: o.reason for uid, o in run_cycle(state, conf, 2.0, uid="c2").jobs.items()}
