"""Usage history with a real server process: a job runs, its queue and user are charged, the
history survives a restart, and ``lahar usage`` prints it as a table, CSV and JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from lahar.errors import BadRequest
from lahar.server.usage_routes import since_time
from test_durability import free_port, start

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


def job(name: str, queue: str, cpu: str, replicas: int, duration: str) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": {"lahar.dev/duration": duration}},
        "spec": {"queue": queue, "tasks": [{"name": "t", "replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]},
    }


def wait_for(check, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def phase(base: str, name: str) -> str | None:
    answer = httpx.get(f"{base}{PODGROUPS}/{name}")
    return answer.json()["status"].get("phase") if answer.status_code == 200 else None


def cli(served: "Served", *args: str) -> subprocess.CompletedProcess:
    """The CLI as a person runs it, against the server (authentication off: no token needed)."""
    env = {**os.environ, "LAHAR_SERVER": served.base, "LAHAR_HOME": served.home}
    env.pop("LAHAR_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "lahar.cli.main", *args], capture_output=True, text=True, env=env, timeout=30)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stderr.close()


class Served:
    """A real server on a free loopback port; ``restart`` stops it with SIGTERM, as a service
    manager does, and starts it again on the same database."""

    def __init__(self, db: str, home: str) -> None:
        self.db, self.home, port = db, home, free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.port = port
        self.proc = start(db, port)

    def restart(self) -> None:
        stop(self.proc)
        self.proc = start(self.db, self.port)


@pytest.fixture
def served(tmp_path):
    server = Served(str(tmp_path / "lahar.db"), str(tmp_path / "home"))
    yield server
    stop(server.proc)


def test_usage_is_charged_to_the_queue_and_survives_a_restart(served):
    base = served.base
    httpx.post(base + "/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}).raise_for_status()
    httpx.post(base + "/apis/scheduling.volcano.sh/v1beta1/queues", json={"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team-a"}, "spec": {"weight": 1}}).raise_for_status()
    httpx.post(base + JOBS, json=job("short", "team-a", "2", 2, "1.5s")).raise_for_status()
    wait_for(lambda: phase(base, "short") == "Completed")
    rows = wait_for(lambda: [r for r in httpx.get(base + "/lahar/v1/usage", params={"queue": "team-a"}).json()["items"] if r["jobs"]])
    [row] = rows
    assert row["queue"] == "team-a" and row["user"] == "-" and row["jobs"] == 1
    # two tasks of 2 cpu for about 1.5 s each: about 6 core-seconds (ticks are 0.1 s apart)
    assert 4.5 <= row["usage"]["cpu"] <= 8.0, row
    assert row["runSum"] >= 1.0 and row["waitMax"] < 5.0
    assert httpx.get(base + "/lahar/v1/usage", params={"queue": "default"}).json()["items"] == []
    series = httpx.get(base + "/lahar/v1/usage/series").json()
    assert max(v for _, v in series["resources"]["cpu"]["team-a"]) == 4.0
    assert series["hourly"]["cpu"]["team-a"][0][1] > 0

    table = cli(served, "usage", "--queue", "team-a")
    assert table.returncode == 0, table.stderr
    header, line = table.stdout.splitlines()[:2]
    assert header.split()[:6] == ["Queue", "User", "Jobs", "Wait(mean)", "Wait(max)", "Run"]
    assert line.split()[:3] == ["team-a", "-", "1"]
    csv = cli(served, "usage", "--since", "1h", "-o", "csv")
    assert csv.stdout.splitlines()[0].startswith("queue,user,jobs,wait_mean_s,wait_max_s,run_s,cpu_seconds")
    assert csv.stdout.splitlines()[1].startswith("team-a,-,1,")
    before = json.loads(cli(served, "usage", "-o", "json").stdout)["items"]

    served.restart()
    after = json.loads(cli(served, "usage", "-o", "json").stdout)["items"]
    assert [(r["queue"], r["user"], r["jobs"]) for r in after] == [(r["queue"], r["user"], r["jobs"]) for r in before]
    assert after[0]["usage"]["cpu"] == pytest.approx(before[0]["usage"]["cpu"], abs=0.01)

    bad = cli(served, "usage", "--since", "yesterday")
    assert bad.returncode == 1 and 'since: "yesterday" is not a duration' in bad.stderr


def test_since_is_a_duration_back_or_a_unix_time():
    assert since_time("7d", 1_000_000_000.0 + 7 * 86400) == 1_000_000_000.0
    assert since_time("1700000000", 0.0) == 1_700_000_000.0
    assert since_time(None, 1_000_000.0) == 1_000_000.0 - 7 * 86400


@pytest.mark.parametrize("text", ["INFINITY", "inf", "-inf", "1e400", "nan", "NaN"])
def test_since_that_is_no_time_is_refused(text):
    """A Unix time must be a finite number: ``float`` reads these, and an infinite start once
    made the JSON answer fail (500)."""
    with pytest.raises(BadRequest, match=f'since: "{text}" is not a duration'):
        since_time(text, 1_800_000_000.0)
