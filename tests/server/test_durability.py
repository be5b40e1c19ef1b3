"""A real server process on loopback, killed with SIGKILL under load, then restarted.

Nothing acknowledged may be lost, no pod may be bound twice or to a node without room, and the
restarted server goes on scheduling where the store left off.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from lahar.quantity import parse_quantity

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(db: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lahar.cli.main", "server", "--db", db, "--port", str(port), "--period", "0.1s", "--no-auth"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    _, err = proc.communicate(timeout=10)  # reads the pipe to its end and closes it
    raise AssertionError(f"server did not start: {err.decode()[-2000:]}")


def ended(proc: subprocess.Popen) -> None:
    """Wait for a killed or stopped server and let go of its stderr pipe."""
    proc.wait(10)
    proc.stderr.close()


def job(i: int) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"j{i}"},
        "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }


def submit_all(base: str, count: int) -> set[str]:
    acknowledged: set[str] = set()

    def one(i: int) -> None:
        try:
            response = httpx.post(base + JOBS, json=job(i), timeout=10)
        except httpx.HTTPError:
            return
        if response.status_code == 201:
            acknowledged.add(f"j{i}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(count)))
    return acknowledged


def check_invariants(base: str) -> dict[str, dict]:
    pods = httpx.get(base + "/api/v1/pods", timeout=10).json()["items"]
    names = [p["metadata"]["name"] for p in pods]
    assert len(names) == len(set(names)), "a pod exists twice"
    nodes = {n["metadata"]["name"]: n for n in httpx.get(base + "/api/v1/nodes", timeout=10).json()["items"]}
    used: dict[str, float] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if node and p["status"].get("phase") in ("Running", "Pending"):
            used[node] = used.get(node, 0) + float(parse_quantity(p["spec"]["containers"][0]["resources"]["requests"]["cpu"]))
    for node, cpu in used.items():
        assert cpu <= float(parse_quantity(nodes[node]["status"]["allocatable"]["cpu"])), f"node {node} over-committed: {cpu}"
    return {p["metadata"]["name"]: p for p in pods}


def test_kill_minus_nine_loses_nothing(tmp_path):
    db, port = str(tmp_path / "lahar.db"), free_port()
    base = f"http://127.0.0.1:{port}"
    server = start(db, port)
    try:
        for n in range(3):
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{n}"}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}
            assert httpx.post(base + "/api/v1/nodes", json=node).status_code == 201
        acknowledged = submit_all(base, 60)
        time.sleep(0.3)
        os.kill(server.pid, signal.SIGKILL)
        ended(server)
        server = start(db, port)
        stored = {j["metadata"]["name"] for j in httpx.get(base + JOBS, timeout=10).json()["items"]}
        assert acknowledged <= stored, f"lost acknowledged jobs: {sorted(acknowledged - stored)}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pods = check_invariants(base)
            running = [p for p in pods.values() if p["spec"].get("nodeName")]
            if len(running) == 24:  # 3 nodes x 8 cpu, 1 cpu each
                break
            time.sleep(0.2)
        pods = check_invariants(base)
        assert len([p for p in pods.values() if p["spec"].get("nodeName")]) == 24
        assert len(pods) == len(stored)  # one pod per job, none duplicated by the restart
    finally:
        server.kill()
        ended(server)
