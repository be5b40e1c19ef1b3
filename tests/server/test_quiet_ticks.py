"""Quiet ticks: when nothing changed since the last cycle looked (not even by that cycle's own
writes), the control loop does not run the same cycle again (an idle server with thousands of
running jobs would otherwise spend a large part of a core every second to learn nothing new).

The cycle is a pure function of the cluster, the configuration and, for plugins that read it,
the time: with the same cluster and no plugin that reads the clock it would decide the same,
and applying its outcome again would change nothing. A plugin that reads the clock (sla) keeps
every cycle running until the time its answers may change (sla: the next job's deadline)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lahar.scheduler.cache import parse_time
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.plugins import PLUGINS, register
from lahar.server.loop import ControlLoop
from lahar.server.service import ApiService
from lahar.store import open_store
from conftest import Clock
from builders import ClockWatcher, sla_config
from test_api import job, node, queue

WATCHED = {"Pod", "PodGroup", "Job", "Queue", "Node"}


@pytest.fixture
def cluster(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    service = ApiService(store)
    yield service
    store.close()


def _loop(service: ApiService, config: str | None = None, clock: Clock | None = None) -> ControlLoop:
    conf = load_config(config or default_config_text())
    return ControlLoop(service, conf, 1.0, clock=clock or _wall_clock())


def _wall_clock() -> Clock:
    """A hand-moved clock starting at the wall time: the store stamps creation times from it."""
    return Clock(time.time())


def _settle(loop: ControlLoop, ticks: int = 4) -> None:
    for _ in range(ticks):
        loop.tick()


def test_a_quiet_tick_runs_no_cycle_and_writes_nothing(cluster):
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("fits"))
    cluster.create(job("too-big", cpu="8"))  # waits for ever: a waiting job does not stop the quiet
    loop = _loop(cluster)
    _settle(loop)
    cycles, quiet, version = loop.cycles, loop.quiet_ticks, cluster.store.current_version()
    for _ in range(3):
        loop.tick()
    assert loop.cycles == cycles
    assert loop.quiet_ticks == quiet + 3
    assert cluster.store.watch(version, WATCHED) == []
    assert cluster.store.get("Pod", "default/fits-main-0")["spec"]["nodeName"] == "n1"


def test_a_change_ends_the_quiet(cluster):
    cluster.create(node("n1", cpu="4"))
    cluster.create(job("first"))
    loop = _loop(cluster)
    _settle(loop)
    quiet_cycles = loop.cycles
    loop.tick()
    assert loop.cycles == quiet_cycles
    cluster.create(job("second"))
    loop.tick()
    assert loop.cycles == quiet_cycles + 1
    assert cluster.store.get("Pod", "default/second-main-0")["spec"]["nodeName"] == "n1"
    loop.tick()  # decides nothing but writes the podgroup's new phase: not quiet yet
    assert cluster.store.get("PodGroup", "default/second")["status"]["phase"] == "Running"
    loop.tick()  # decides nothing and writes nothing: the ticks after it are quiet
    assert loop.cycles == quiet_cycles + 3
    loop.tick()
    assert loop.cycles == quiet_cycles + 3


def test_the_skipped_cycle_would_decide_the_same(cluster):
    cluster.create(queue("capped", capability={"cpu": "1"}))
    cluster.create(node("n1", cpu="3"))
    cluster.create(job("held", queue_name="capped"))
    cluster.create(job("over-cap", queue_name="capped"))
    cluster.create(job("too-big", cpu="8"))
    cluster.create(job("runs", cpu="2"))
    loop = _loop(cluster)
    _settle(loop)
    loop.tick()
    assert loop.quiet_ticks >= 1
    again = run_cycle(loop.world.cache, loop.conf, loop.clock(), uid="again")
    assert again.decisions == [] and loop.last.decisions == []
    assert {uid: (o.phase, o.reason, o.running) for uid, o in again.jobs.items()} == {
        uid: (o.phase, o.reason, o.running) for uid, o in loop.last.jobs.items()
    }
    assert again.queue_allocated == loop.last.queue_allocated
    assert loop.last.jobs["default/over-cap"].reason["kind"] in ("capability", "deserved")


def test_a_gang_that_fits_only_in_part_keeps_its_reservation_through_quiet_ticks(cluster):
    """A reservation (pipeline) is kept in the session, never written: a cycle that only
    reserves leaves the world as it was, and the next would reserve the same."""
    cluster.create(node("n1", cpu="4"))
    cluster.create(node("n2", cpu="2"))
    cluster.create(job("big", cpu="3", replicas=2))  # one task fits on n1, the other nowhere
    loop = _loop(cluster)
    _settle(loop)
    cycles = loop.cycles
    _settle(loop, 3)
    assert loop.cycles == cycles and loop.quiet_ticks >= 3
    reserved = [(d.type, d.task, d.node) for d in loop.last.decisions]
    assert reserved == [("pipeline", "default/big-main-0", "n1")]
    again = run_cycle(loop.world.cache, loop.conf, loop.clock(), uid="again")
    assert [(d.type, d.task, d.node) for d in again.decisions] == reserved
    assert again.jobs["default/big"].reason == loop.last.jobs["default/big"].reason
    cluster.create(node("n3", cpu="4"))  # room for the second task: the quiet ends, both bind
    _settle(loop, 2)
    assert {cluster.store.get("Pod", f"default/big-main-{i}")["spec"].get("nodeName") for i in (0, 1)} == {"n1", "n3"}


SLA_CONFIG = sla_config("30s")


def test_a_plugin_that_reads_the_clock_is_quiet_only_until_its_answers_may_change(cluster):
    """sla lets a job in once it has waited its waiting time, with nothing else changed: the
    ticks before that are quiet, and the first tick past the deadline runs its cycle (a tick
    skipped then would leave the job waiting for ever)."""
    cluster.create(queue("capped", capability={"cpu": "1"}))
    cluster.create(node("n1", cpu="4"))
    cluster.create(job("holder", queue_name="capped"))
    clock = _wall_clock()
    loop = _loop(cluster, SLA_CONFIG, clock)
    _settle(loop)
    cluster.create(job("late", queue_name="capped"))
    _settle(loop)
    created = parse_time(cluster.store.get("PodGroup", "default/late")["metadata"]["creationTimestamp"])
    # the holder's deadline counts too: its podgroup may carry the second before (creation times
    # are whole seconds, and the two podgroups were made some milliseconds apart)
    first = parse_time(cluster.store.get("PodGroup", "default/holder")["metadata"]["creationTimestamp"]) + 30
    assert cluster.store.get("PodGroup", "default/late")["status"]["phase"] == "Pending"
    assert loop.quiet_ticks > 0
    assert first - 0.01 < loop.last.valid_until < first  # the first deadline, a little early
    clock.now = first - 1
    quiet = loop.quiet_ticks
    loop.tick()
    assert loop.quiet_ticks == quiet + 1
    clock.now = created + 30
    loop.tick()
    assert loop.quiet_ticks == quiet + 1
    assert cluster.store.get("PodGroup", "default/late")["status"]["phase"] == "Inqueue"


def test_a_plugin_that_reads_the_clock_without_a_horizon_keeps_every_cycle(cluster):
    register(ClockWatcher)
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("fits"))
    loop = _loop(cluster, default_config_text().replace("  - name: nodeorder", "  - name: nodeorder\n  - name: clock-watcher"))
    assert "clock-watcher" in [option.name for tier in loop.conf.tiers for option in tier.plugins]
    _settle(loop, 6)
    assert loop.cycles == 6 and loop.quiet_ticks == 0


def test_plugins_that_read_the_session_time_say_so():
    import inspect

    src = Path(__file__).resolve().parents[2] / "src"  # Lahar's own plugins: the source, also where they are compiled
    for name, cls in PLUGINS.items():
        own = cls.__module__.startswith("lahar.")
        source = (src / (cls.__module__.replace(".", "/") + ".py")).read_text() if own else inspect.getsource(inspect.getmodule(cls))
        if "ssn.now" in source:
            assert cls.reads_clock, f"plugin {name} reads ssn.now but declares reads_clock = False"
    assert [name for name, cls in PLUGINS.items() if cls.reads_clock and cls.__module__.startswith("lahar.")] == ["sla"]


def test_a_loop_told_not_to_skip_runs_every_cycle(cluster):
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("fits"))
    loop = _loop(cluster)
    loop.skip_quiet_cycles = False
    _settle(loop)
    cycles = loop.cycles
    loop.tick()
    assert loop.cycles == cycles + 1 and loop.quiet_ticks == 0


def test_metrics_count_the_quiet_ticks(tmp_path):
    from fastapi.testclient import TestClient

    from lahar.server.main import build_server

    server = build_server(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"), load_config(default_config_text()), auth=False, home=tmp_path)
    try:
        server.service.create(node("n1"))
        server.service.create(job("a"))
        _settle(server.loop, 6)
        text = TestClient(server.app).get("/metrics").text
        quiet = [line for line in text.splitlines() if line.startswith("lahar_quiet_ticks_total ")]
        assert quiet and float(quiet[0].split()[1]) == server.loop.quiet_ticks > 0
        cycles = [line for line in text.splitlines() if line.startswith("lahar_scheduling_cycle_seconds_count ")]
        assert float(cycles[0].split()[1]) == server.loop.cycles == 6 - server.loop.quiet_ticks
    finally:
        server.loop.stop()
        server.store.close()


def test_metrics_count_the_control_loops_cpu(tmp_path):
    """``lahar_control_loop_cpu_seconds_total``: the CPU of the loop's thread in ticks, so that an
    operator (and ``bench/api.py``) can tell the scheduler's share of the server's CPU."""
    import time

    from fastapi.testclient import TestClient

    from lahar.server.main import build_server

    server = build_server(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"), load_config(default_config_text()), auth=False, home=tmp_path)
    try:
        for n in range(3):
            server.service.create(node(f"n{n}"))
        for n in range(40):
            server.service.create(job(f"j{n}"))
        process_before = time.process_time()
        _settle(server.loop, 3)
        process_spent = time.process_time() - process_before
        text = TestClient(server.app).get("/metrics").text
        lines = [line for line in text.splitlines() if line.startswith("lahar_control_loop_cpu_seconds_total ")]
        spent = float(lines[0].split()[1])
        assert 0 < spent <= process_spent + 0.01  # the ticks ran on this thread: all of it, nothing else
        assert spent >= 0.5 * process_spent
    finally:
        server.loop.stop()
        server.store.close()


def test_usage_keeps_counting_through_quiet_ticks_and_sees_the_next_change(cluster):
    cluster.create(node("n1", cpu="4"))
    cluster.create(job("a", cpu="2"))
    clock = _wall_clock()
    loop = _loop(cluster, clock=clock)
    _settle(loop)

    def cpu_seconds_over(ticks: int) -> float:
        before = sum(bucket.usage.get("cpu", 0.0) for bucket in loop.usage.ledger.buckets.values())
        for _ in range(ticks):
            clock.now += 10
            loop.tick()
        return sum(bucket.usage.get("cpu", 0.0) for bucket in loop.usage.ledger.buckets.values()) - before

    quiet = loop.quiet_ticks
    assert cpu_seconds_over(3) == pytest.approx(2 * 30)
    assert loop.quiet_ticks == quiet + 3
    cluster.create(job("b", cpu="1"))
    cpu_seconds_over(3)  # b is bound, starts, and its podgroup's phase is written
    quiet = loop.quiet_ticks
    assert cpu_seconds_over(3) == pytest.approx(3 * 30)
    assert loop.quiet_ticks == quiet + 3
