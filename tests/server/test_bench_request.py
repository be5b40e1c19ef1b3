"""``bench/request.py``: vcjob creates through the web application in-process. Run as users
run it (a subprocess, a real SQLite file): one request at a time each write is its own group;
with ``--concurrent N`` the writer commits the requests in flight together."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUEST = ROOT / "bench" / "request.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REQUEST), *args], capture_output=True, text=True, timeout=180)


def _figures(*args: str) -> dict:
    done = _run(*args)
    assert done.returncode == 0, done.stderr[-2000:]  # the program exits non-zero on any answer but 201
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_one_request_at_a_time_is_a_group_of_one():
    figures = _figures("--requests", "30", "--rounds", "1")
    assert (figures["bench"], figures["requests"], figures["concurrent"], figures["auth"]) == ("request", 30, 1, False)
    assert figures["writes_per_commit"] == 1.0
    assert figures["through_app_cpu_ms"] > 0 and figures["direct_cpu_ms"] > 0


def test_requests_in_flight_together_commit_together():
    figures = _figures("--requests", "64", "--rounds", "1", "--concurrent", "8")
    assert figures["concurrent"] == 8
    assert 1.0 < figures["writes_per_commit"] <= 8.0


def test_with_authentication_every_request_sends_the_admin_token():
    figures = _figures("--requests", "32", "--rounds", "1", "--concurrent", "8", "--auth")
    assert figures["auth"] is True and figures["through_app_cpu_ms"] > 0  # any answer but 201 exits non-zero


def test_a_concurrency_below_one_is_refused():
    done = _run("--concurrent", "0")
    assert done.returncode == 2 and "--concurrent: must be at least 1, not 0" in done.stderr
