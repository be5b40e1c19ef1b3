"""Tests that replace functions inside the scheduling core (``@pytest.mark.python_source``) watch
or change what its modules call. A compiled core calls its own functions directly, past any
replacement, so where the installed core is compiled they are skipped in this run and run here
instead, in a process of their own that imports the Python source (``src/``) the core is built
from. Where the core is plain Python they run in this run, and this test has nothing to do."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from source import COMPILED, ROOT


def test_the_core_is_compiled_where_the_build_must_compile_it():
    if os.environ.get("LAHAR_REQUIRE_COMPILED", "") in ("", "0"):
        pytest.skip("LAHAR_REQUIRE_COMPILED is not set: either form may be under test")
    assert COMPILED, "LAHAR_REQUIRE_COMPILED is set, yet the scheduling core under test is plain Python"


@pytest.mark.skipif(not COMPILED, reason="the core is plain Python here: the python_source tests run in this run")
def test_the_python_source_tests_pass_against_the_python_source():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "pytest", "-q", "-m", "python_source", "-n", "0", "-p", "no:cacheprovider", "tests"]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    tail = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= 20, tail
    assert "skipped" not in run.stdout.splitlines()[-1], tail  # none skipped: they ran against the source


_DIGEST = """
import hashlib, sys
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay
from lahar.sim.engine import Simulation
from lahar.sim.traces import build_workload, parse_cluster
workload = build_workload("philly:" + sys.argv[1], limit=150)
workload.nodes = parse_cluster(["3 x cpu=64,memory=512Gi,gpu=8"])
objects, _ = workload.objects(None)
digest = hashlib.sha256()
def seen(sim, record):
    digest.update(repr([(d.type, d.task, d.node, d.reason) for d in record.result.decisions]).encode())
    digest.update(repr(sorted((uid, o.phase, repr(o.reason), repr(o.conditions)) for uid, o in record.result.jobs.items())).encode())
sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=[seen])
sim.keep_cycles = False
replay(sim, objects, Clock(period=1.0, until=None, cycles=None))
print(sim.cycle_count, digest.hexdigest())
"""


@pytest.mark.skipif(not COMPILED, reason="the core is plain Python here: there is one form to run")
def test_the_compiled_core_decides_as_its_python_source():
    """A backlogged trace slice (waiting jobs, reclaim, preemption tried every cycle) replayed by
    the installed, compiled core and by the Python source it was built from: every cycle's
    decisions, phases, reasons and conditions the same."""
    trace = str(ROOT / "tests" / "data" / "traces" / "philly-head.csv")
    runs = {}
    for form, env in (("compiled", {}), ("source", {"PYTHONPATH": str(ROOT / "src")})):
        run = subprocess.run([sys.executable, "-c", _DIGEST, trace], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        runs[form] = run.stdout.split()
    assert int(runs["compiled"][0]) > 100
    assert runs["compiled"] == runs["source"]


def test_lahar_version_says_which_form_of_the_core_is_installed():
    from typer.testing import CliRunner

    from lahar.cli.main import app

    shown = CliRunner().invoke(app, ["--version"])
    assert shown.exit_code == 0
    assert shown.output.strip().endswith("(scheduling core: compiled)" if COMPILED else "(scheduling core: plain Python)")
