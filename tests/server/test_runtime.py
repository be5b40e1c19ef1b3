"""The local runtime: each bound task's command runs as a real process on this machine."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import open_store
from test_api import JOBS, NODES, job, node

PODS = "/api/v1/namespaces/default/pods"


def command_job(name: str, *command: str) -> dict:
    body = job(name)
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"] = list(command)
    return body


@pytest.fixture
def local(tmp_path):
    built = build_server(open_store("memory://"), load_config(default_config_text()), auth=False, home=tmp_path, runtime="local")
    built.loop.runtime.grace = 1.0
    built.client = TestClient(built.app)
    yield built
    built.loop.stop()


def phase(server, pod: str) -> str:
    return server.client.get(f"{PODS}/{pod}").json()["status"].get("phase")


def tick_until(server, done, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        server.loop.tick()
        if done():
            return
        time.sleep(0.1)
    raise AssertionError("not reached in time")


def test_exit_codes_become_phases_and_output_is_kept(local, tmp_path):
    c = local.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=command_job("ok", "sh", "-c", 'echo "hello from $LAHAR_POD on $LAHAR_NODE"; echo warn >&2'))
    c.post(JOBS, json=command_job("bad", "sh", "-c", "exit 3"))
    tick_until(local, lambda: phase(local, "ok-main-0") == "Succeeded" and phase(local, "bad-main-0") == "Failed")
    assert (tmp_path / "logs" / "default" / "ok-main-0.out").read_text() == "hello from ok-main-0 on n1\n"
    assert (tmp_path / "logs" / "default" / "ok-main-0.err").read_text() == "warn\n"
    assert c.get(f"{JOBS}/ok").json()["status"]["succeeded"] == 1
    assert c.get(f"{JOBS}/bad").json()["status"]["failed"] == 1


def test_a_deleted_task_has_its_process_terminated(local):
    c = local.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=command_job("long", "sleep", "60"))
    tick_until(local, lambda: len(local.loop.runtime.processes) == 1)
    process = next(iter(local.loop.runtime.processes.values())).popen
    assert process.poll() is None
    assert c.delete(f"{JOBS}/long").status_code == 200
    tick_until(local, lambda: process.poll() is not None and not local.loop.runtime.processes)
    assert process.returncode != 0  # ended by SIGTERM


def test_a_missing_program_fails_the_task_with_the_reason_in_its_log(local, tmp_path):
    c = local.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=command_job("typo", "no-such-program-here"))
    tick_until(local, lambda: phase(local, "typo-main-0") == "Failed")
    assert "cannot start 'no-such-program-here'" in (tmp_path / "logs" / "default" / "typo-main-0.err").read_text()


def test_terminating_the_server_ends_its_task_processes(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    import httpx
    from loadgen import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "lahar.cli.main", "server", "--db", str(tmp_path / "lahar.db"), "--port", str(port), "--no-auth", "--runtime", "local", "--period", "0.2s"],
        env={**os.environ, "LAHAR_HOME": str(tmp_path)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and server.poll() is None, "server did not start"
                time.sleep(0.2)
        marker = tmp_path / "pid"
        httpx.post(url + NODES, json=node("n1", cpu="4")).raise_for_status()
        httpx.post(url + JOBS, json=command_job("sleeper", "sh", "-c", f"echo $$ > {marker}; exec sleep 120")).raise_for_status()
        while not marker.exists() or not marker.read_text().strip():
            assert time.monotonic() < deadline, "the task did not start"
            time.sleep(0.2)
        task = int(marker.read_text())
        server.send_signal(signal.SIGTERM)
        server.wait(20)
        time.sleep(0.5)
        with pytest.raises(ProcessLookupError):
            os.kill(task, 0)
    finally:
        if server.poll() is None:
            server.kill()
