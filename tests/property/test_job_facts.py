"""A job's ``JobFacts`` (validity, starving, pending tasks in task order) are kept on its copy
while its tasks stand, across cycles too when the snapshot takes the copy back. Every time a
kept answer is given here, it must be what the plugins answer now: in a backlogged trace slice
(jobs wait for many cycles, are bound, evicted and reclaimed) and in every seed scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle, scheduled_counts
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import JobFacts, Session
from lahar.scheduler.lookalikes import _described
from lahar.scheduler.plugins import PLUGINS, Plugin, register
from lahar.scheduler.plugins.gang import _unschedulable_head, skip_unschedulable_for_releasing
from lahar.scheduler.reasons import _pending_request
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from lahar.sim.traces import build_workload, parse_cluster
from tests.trace_slice import BACKLOG_CLUSTERS, replay_slice

# replaces functions inside the scheduling core (see tests/test_python_source.py)
pytestmark = pytest.mark.python_source

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "tests" / "data" / "traces" / "philly-head.csv"
SCENARIOS = sorted(p for folder in (ROOT / "examples" / "seeds", ROOT / "tests" / "data" / "scenarios") for p in folder.glob("*.yaml"))


def _answers(facts: JobFacts, ssn: Session, job) -> tuple:
    return (facts.valid, facts.valid_message, facts.starving, facts.pending(ssn, job), facts.requesting(job))


def _kept_now(kept: dict, job) -> dict:
    """What session close would work out now for each entry ``kept`` holds (see its users)."""
    fresh = {
        "gang-unschedulable": lambda: "" if skip_unschedulable_for_releasing(job) else _unschedulable_head(job),
        "scheduled": lambda: scheduled_counts(job),
        "pending-request": lambda: _pending_request(job),
    }
    return {name: fresh[name]() for name in kept}


def _same_kept(kept: dict, job) -> bool:
    now = _kept_now(kept, job)
    for name, value in kept.items():
        if name == "pending-request":  # (request, key): the same values and key
            request, key = value
            if (request.milli_cpu, request.memory, request.scalars, key) != (now[name][0].milli_cpu, now[name][0].memory, now[name][0].scalars, now[name][1]):
                return False
        elif value != now[name]:
            return False
    return True


@pytest.fixture
def kept(monkeypatch):
    """Wrap ``Session.job_facts``: every answer kept from before must equal a fresh one."""
    counts = {"kept": 0, "across cycles": 0, "kept entries": 0, "kinds": 0}
    original = Session.job_facts

    def job_facts(self, job):
        before = job.facts
        facts = original(self, job)
        if facts is before:
            counts["kept"] += 1
            counts["across cycles"] += getattr(facts, "_seen_in", self.uid) != self.uid
            assert _answers(facts, self, job) == _answers(JobFacts(self, job), self, job), job.uid
            assert _same_kept(facts.kept, job), job.uid
            if facts.kind_generation >= 0:  # the look-alike kind kept: the job's description now
                described = _described(job)
                assert (facts.kind.description if facts.kind is not None else None) == ((job.queue, job.priority, described) if described else None), job.uid
                counts["kinds"] += 1
            counts["kept entries"] += len(facts.kept)
        facts._seen_in = self.uid
        return facts

    monkeypatch.setattr(Session, "job_facts", job_facts)
    return counts


class _Tagged(JobFacts):
    __slots__ = ("_seen_in",)


@pytest.fixture(autouse=True)
def _taggable(monkeypatch):
    """Facts that can carry the uid of the session that last asked (to count reuse across cycles)."""
    from lahar.scheduler.framework import session

    monkeypatch.setattr(session, "JobFacts", _Tagged)


@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_kept_facts_are_the_plugins_answers_in_a_backlog(kept, nodes):
    replay_slice(nodes)
    assert kept["kept"] > 1000 and kept["across cycles"] > 100 and kept["kept entries"] > 1000 and kept["kinds"] > 1000, kept


def test_kept_facts_are_the_plugins_answers_in_the_seed_scenarios(kept):
    for path in SCENARIOS:
        objects, conf = load_simulation_inputs([str(path)], None)
        Simulation(objects, conf, period=1.0).run_cycles(30)
    assert kept["kept"] > 100 and kept["across cycles"] > 10, kept


class _ClockStarving(Plugin):
    """Starving by the clock: more than the job's tasks, so it declares nothing."""

    name = "clock-starving"

    def on_session_open(self, ssn) -> None:
        ssn.add("job_starving", self.name, lambda job: ssn.now >= 0)


def test_facts_are_not_kept_when_a_plugin_may_read_more_than_the_tasks():
    conf = load_config(default_config_text())
    plain = run_cycle(_backlog_state(), conf, 0.0)
    assert any(job.facts is not None for job in plain.session.jobs.values())  # kept with Lahar's own plugins
    register(_ClockStarving)
    try:
        data = yaml.safe_load(default_config_text())
        data["tiers"][0]["plugins"].append({"name": "clock-starving"})
        watched = run_cycle(_backlog_state(), load_config(data), 0.0)
    finally:
        PLUGINS.pop("clock-starving", None)
    assert all(job.facts is None for job in watched.session.jobs.values())


def _backlog_state() -> ClusterState:
    workload = build_workload(f"philly:{SLICE}", limit=40)
    workload.nodes = parse_cluster(["1 x cpu=64,memory=512Gi,gpu=8"])
    objects, _ = workload.objects(None)
    return ClusterState.from_objects(objects)
