"""``bench/floor.py``: the API benchmark's clients against a web server that only answers. Run
end to end (a uvicorn subprocess on loopback): every request is answered 201 with the document
sent, and the figures come out of real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOOR = ROOT / "bench" / "floor.py"


def _run(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(FLOOR), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("app,client", [("fastapi", "httpx"), ("asgi", "raw")])
def test_every_request_is_answered_and_counted(app, client):
    # 400 requests: the server's CPU is read from /proc in clock ticks (10 ms), and uvicorn alone
    # spends about 0.15 ms a request, so 40 requests often read as none
    figures = _run("--requests", "400", "--clients", "3", "--app", app, "--client", client)
    assert (figures["bench"], figures["app"], figures["client"]) == ("floor", app, client)
    assert figures["requests"] == 400 and figures["failed_requests"] == 0
    assert figures["requests_per_second"] > 0 and 0 < figures["p50_ms"] <= figures["p99_ms"]
    assert figures["server_cpu_ms_per_request"] > 0 and figures["client_cpu_ms_per_request"] > 0


@pytest.mark.parametrize("app", ["fastapi", "asgi"])
def test_the_server_answers_with_the_document_sent(app):
    """What each request costs the floor's server includes reading the whole body back out."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import floor
        from api import job
    finally:
        sys.path.remove(str(ROOT / "bench"))
    document = job("j000001")
    port = floor.free_port()
    server = floor.start(app, port)
    try:
        answer = httpx.post(f"http://127.0.0.1:{port}{floor.API}", json=document, timeout=10)
    finally:
        server.terminate()
        server.wait(15)
    assert answer.status_code == 201 and answer.json() == document


def test_counts_of_zero_are_refused():
    done = subprocess.run([sys.executable, str(FLOOR), "--requests", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "argument --requests: must be at least 1, not 0" in done.stderr
