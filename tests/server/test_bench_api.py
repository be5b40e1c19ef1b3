"""``bench/api.py``, the API target's benchmark, run end to end as users run it: a real ``lahar
server`` subprocess on loopback over a fresh SQLite file, clients submitting over HTTP, every
pod bound before the clock stops; and what it prints of the server's CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from api import server_cpu  # noqa: E402


def test_every_job_submitted_is_bound_and_counted():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "api.py"), "--jobs", "60", "--clients", "3", "--timeout", "120"],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["bench"], figures["store"], figures["jobs"], figures["client"]) == ("api", "sqlite", 60, "raw")
    assert figures["failed_submits"] == 0 and figures["pods_bound"] == 60
    assert figures["pods_bound_per_second"] > 0 and 0 < figures["submit_p50_ms"] <= figures["submit_p99_ms"]
    assert figures["writes_per_commit"] >= 1
    share = figures["server_system_cpu_share"]
    assert share is None or 0 <= share <= 1  # None only when the CPU read as no ticks at all


@pytest.mark.parametrize(
    "before,after,expected",
    [
        ((1.0, 0.5), (3.4, 1.1), {"server_cpu_seconds": 3.0, "server_cpu_ms_per_job": 30.0, "server_system_cpu_share": 0.2}),
        ((2.0, 1.0), (2.0, 1.0), {"server_cpu_seconds": 0.0, "server_cpu_ms_per_job": 0.0, "server_system_cpu_share": None}),
        (None, (1.0, 1.0), {"server_cpu_seconds": None, "server_cpu_ms_per_job": None, "server_system_cpu_share": None}),
    ],
)
def test_the_servers_cpu_is_split_into_user_and_kernel_time(before, after, expected):
    assert server_cpu(before, after, jobs=100) == expected
