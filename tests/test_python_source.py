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
