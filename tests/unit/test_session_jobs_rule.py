"""The rule ``Session.listed_jobs`` relies on, checked over whole runs: within a session a job is
only ever added to ``ssn.jobs`` (under a key new to the map), never taken out of it or put under
a key it already has; a changed set of jobs is a new map. A list it keeps is handed out again
while the map has as many keys, so code that broke the rule would have the passes walk a stale
list without any error of their own.

Each call of ``listed_jobs`` is checked here against the map as it is (the same jobs, the very
objects, in its order) while a replay with look-alikes hidden, the seed scenarios and the
server's control loop run; each run also shows that it took the paths that matter (a map listed
again after it grew, lists handed out again). Replaces a method of the core, so where the core is
compiled this runs against the Python source (``tests/test_python_source.py``)."""

from __future__ import annotations


import pytest

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import Session
from bench_programs import bench_program
from lahar.sim.compare import run_replay
from trace_slice import slice_at_start

pytestmark = pytest.mark.python_source

class Tally:
    def __init__(self) -> None:
        self.calls = self.kept = self.grown = 0


@pytest.fixture
def checked(monkeypatch) -> Tally:
    """Every ``listed_jobs`` answer compared with the session's map as it is now."""
    original = Session.listed_jobs
    tally = Tally()

    def listed_jobs(self: Session) -> list:
        jobs = self.jobs
        seen = self.__dict__.setdefault("_rule_seen", {})  # id -> (map, length, list): held, so no id is reused
        before = seen.get(id(jobs))
        listed = original(self)
        assert [id(job) for job in listed] == [id(job) for job in jobs.values()], "listed_jobs handed out a list that is not the map's jobs"
        tally.calls += 1
        if before is not None:
            tally.kept += listed is before[2]
            tally.grown += len(jobs) > before[1]
        seen[id(jobs)] = (jobs, len(jobs), listed)
        return listed

    monkeypatch.setattr(Session, "listed_jobs", listed_jobs)
    return tally


def test_the_guard_finds_a_job_put_under_a_key_the_map_has(checked):
    """What the guard is for: a job replaced under its key leaves the kept list stale."""
    from lahar.scheduler.cycle import open_session
    from tests.builders import node, pod, podgroup, queue
    from lahar.scheduler.cache import ClusterState

    state = ClusterState.from_objects([queue("work").weight(1).build(), node("n1", cpu=4, memory="64Gi", pods=110)])
    for name in ("a", "b"):
        state.upsert(podgroup(name).queue("work").min_member(1).phase("Inqueue").build())
        state.upsert(pod(f"{name}-0").group(name).requests(cpu=1, memory="1Gi").build())
    ssn = open_session(state, load_config(default_config_text()), 0.0)
    ssn.listed_jobs()
    ssn.jobs["default/a"] = ssn.jobs["default/b"]  # against the rule
    with pytest.raises(AssertionError, match="not the map's jobs"):
        ssn.listed_jobs()


def test_a_replay_with_look_alikes_hidden_keeps_the_rule(checked):
    sim, position = slice_at_start("4 x cpu=64,memory=512Gi,gpu=8", limit=120)  # small: jobs wait, look-alikes are hidden
    assert not run_replay(sim, position)  # to the end
    assert sim.cycle_count > 100
    assert checked.calls > 10 * sim.cycle_count and checked.kept > checked.calls // 2
    assert checked.grown > 0  # look-alikes shown on the way: a map listed again after it grew


def test_the_seed_scenarios_keep_the_rule(checked):
    from tests.test_scenarios import _cases, check, run

    cases = list(_cases())
    for case in cases:
        spec, config, mode, point = case.values
        check(run(spec, config, mode, point[mode]), point["expect"])
    assert len(cases) >= 7 and checked.calls > 0 and checked.kept > 0


def test_the_servers_control_loop_keeps_the_rule(checked, tmp_path):
    done = bench_program("loop").run(200, 40, tmp_path)
    assert done["pods_bound"] == 200
    assert checked.calls > 0 and checked.kept > 0
