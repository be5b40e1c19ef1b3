"""``lahar_write_lock_seconds_total{holder}``: how long the service's write lock was held, by the
control loop's transactions (``control_loop``) and by the groups of write requests
(``requests``). Writes run one at a time, so these seconds are the part of the wall clock that
no other writer could use: when they add up to most of it, the writes, not the CPU, bound how
many jobs a second the server takes (``bench/api.py`` prints them per job)."""

from __future__ import annotations

import time

import pytest

import lahar.server.loop as loop_module
from builders import queue
from test_api import JOBS, NODES, job, node

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


@pytest.fixture
def server(sqlite_server):
    return sqlite_server


def _held(server, holder: str) -> float:
    prefix = f'lahar_write_lock_seconds_total{{holder="{holder}"}} '
    lines = [line for line in server.client.get("/metrics").text.splitlines() if line.startswith(prefix)]
    assert lines, f"no {prefix.strip()} in /metrics"
    return float(lines[0].split()[-1])


def _slow_cycle(monkeypatch, seconds: float) -> None:
    real_cycle = loop_module.run_cycle

    def cycle(*args, **kwargs):
        time.sleep(seconds)
        return real_cycle(*args, **kwargs)

    monkeypatch.setattr(loop_module, "run_cycle", cycle)


def test_both_holders_are_shown_before_anything_is_written(server):
    assert _held(server, "control_loop") == 0.0 and _held(server, "requests") == 0.0


def test_write_requests_count_as_the_requests_hold(server):
    started = time.perf_counter()
    for n in range(3):
        assert server.client.post(QUEUES, json=queue(f"q-{n}").manifest()).status_code == 201
    elapsed = time.perf_counter() - started
    held = _held(server, "requests")
    assert 0.0 < held <= elapsed
    assert _held(server, "control_loop") == 0.0  # no tick ran


def test_a_ticks_two_transactions_count_and_its_cycle_does_not(server, monkeypatch):
    """The cycle runs between the tick's two transactions, outside the lock: a cycle that takes
    0.3 s leaves the hold far below the tick's wall time."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    _slow_cycle(monkeypatch, 0.3)
    started = time.perf_counter()
    server.loop.tick()
    elapsed = time.perf_counter() - started
    held = _held(server, "control_loop")
    assert elapsed >= 0.3
    assert 0.0 < held < elapsed - 0.25
    assert c.get("/api/v1/namespaces/default/pods/a-main-0").json()["spec"]["nodeName"] == "n1"


def test_a_failed_tick_still_counts_the_time_it_held_the_lock(server, monkeypatch):
    """Other writers waited for it all the same, whether or not its writes were kept."""
    from lahar.server.loop import StoreWorld

    server.client.post(NODES, json=node("n1", cpu="4"))

    def broken(self, now):
        time.sleep(0.1)
        raise RuntimeError("disk full")

    monkeypatch.setattr(StoreWorld, "run_commands", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        server.loop.tick()
    assert _held(server, "control_loop") >= 0.1


def test_a_leaders_whole_fenced_tick_counts_once(server, lone_leader, monkeypatch):
    """Under ``LeaderLoop`` the whole tick, its cycle included, is one fenced transaction under
    the lock: all of it is counted, and the inner loop's own two parts are not counted again."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(JOBS, json=job("a"))
    _slow_cycle(monkeypatch, 0.3)
    started = time.perf_counter()
    lone_leader.tick()
    elapsed = time.perf_counter() - started
    held = _held(server, "control_loop")
    assert 0.3 <= held <= elapsed
