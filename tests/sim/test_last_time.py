"""A simulation's clock stops at the last time Lahar can write, 9999-12-31T23:59:59Z.

Simulated time counts seconds from 1970-01-01, and an arrival, a bind or a start is stamped as
an RFC 3339 time (``creationTimestamp``, ``startTime``). A task that runs for 10^11 days, a job
due in the year 33658 or ``--until 999999999999s`` once ended the run in a traceback (``year
33658 is out of range``) after the work was done. Now a replay ends there as at ``--until``,
what had not happened by then is reported as waiting or not arrived, and ``--cycles`` with a
``--period`` that would cycle past it is refused before anything runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lahar.cli.main import app
from lahar.errors import BadRequest
from lahar.scheduler.cache import format_time
from lahar.sim.engine import LATEST_TIME, Simulation, next_step_time
from lahar.scheduler.framework.config import default_config_text, load_config

JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{lahar.dev/at: "{at}", lahar.dev/duration: "{duration}"}}}}
spec:
  tasks: [{{name: t, replicas: 1, template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}]
"""
NODE = 'apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: "1", pods: "110"}}\n'


def simulate(*args: str):
    result = CliRunner().invoke(app, ["simulate", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_the_last_time_is_the_last_one_rfc3339_can_write():
    assert format_time(LATEST_TIME) == "9999-12-31T23:59:59Z"
    with pytest.raises((ValueError, OverflowError)):
        format_time(LATEST_TIME + 1)


@pytest.mark.parametrize("now, busy, upcoming", [(LATEST_TIME - 0.5, True, None), (0.0, False, LATEST_TIME + 10), (LATEST_TIME, True, None)])
def test_no_step_past_the_last_time(now, busy, upcoming):
    assert next_step_time(now, 1.0, busy, upcoming) is None


def test_a_step_up_to_the_last_time_is_taken():
    assert next_step_time(0.0, 1.0, False, LATEST_TIME) == LATEST_TIME


def test_a_trace_whose_task_outlives_year_9999_ends_there(tmp_path):
    """The first job holds the only CPU for 10^11 days; the second waits for it, and is still
    waiting when the replay ends at the last time."""
    trace = tmp_path / "log.csv"
    trace.write_text("submit,duration,queue,tasks,cpu,name\n0,99999999999d,,1,1,forever\n10,60,,1,1,next\n")
    result = simulate("--trace", f"csv:{trace}", "--cluster", "1 x cpu=1", "-o", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["time"] <= LATEST_TIME
    assert {job: facts["phase"] for job, facts in out["jobs"].items()} == {"default/forever": "Running", "default/next": "Inqueue"}
    summary = out["metrics"]["summary"]
    assert (summary["jobs"], summary["started"], summary["never_started"]) == (2, 1, 1)


def test_manifests_due_after_year_9999_never_arrive(tmp_path):
    manifests = tmp_path / "late.yaml"
    manifests.write_text(NODE + "---\n" + JOB.format(name="soon", at="0s", duration="1m") + "---\n" + JOB.format(name="late", at="999999999999", duration="1m"))
    result = simulate(str(manifests), "--until", "999999999999s", "-o", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert "default/soon" in out["jobs"] and "default/late" not in out["jobs"]


def test_cycles_past_the_last_time_are_refused_before_running():
    conf = load_config(default_config_text())
    with pytest.raises(BadRequest, match="3 cycles 2e\\+11 s apart would run past 9999-12-31T23:59:59Z"):
        Simulation([], conf, period=2e11).run_cycles(3)
