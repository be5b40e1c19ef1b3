"""The control loop remembers which podgroups it found up to date (phase and pod counts, pending
reason), so that every cycle need not read every podgroup again. What it remembers must never
hide a change: another writer's change to a podgroup is put right by the next cycle, and a job
that is deleted leaves nothing behind in those memos (a server that runs for months deletes
millions of jobs)."""

from __future__ import annotations

import pytest

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.loop import REASON_ANNOTATION, ControlLoop
from lahar.server.service import ApiService
from lahar.store import open_store
from conftest import Clock
from test_api import job, node


@pytest.fixture
def cluster(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    yield ApiService(store)
    store.close()


def _loop(service: ApiService) -> ControlLoop:
    loop = ControlLoop(service, load_config(default_config_text()), 1.0, clock=Clock(1_000_000.0))
    loop.skip_quiet_cycles = False  # every tick runs its cycle: the memos, not the quiet, decide
    return loop


def _settle(loop: ControlLoop, ticks: int = 4) -> None:
    for _ in range(ticks):
        loop.tick()


def _rewrite_podgroup(service: ApiService, key: str, change) -> None:
    group = service.get("PodGroup", key)
    change(group)
    group["metadata"].pop("resourceVersion", None)
    service.update_status(group)


def test_a_phase_another_writer_changed_is_written_back(cluster):
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("runs"))
    loop = _loop(cluster)
    _settle(loop)
    assert cluster.get("PodGroup", "default/runs")["status"]["phase"] == "Running"
    _rewrite_podgroup(cluster, "default/runs", lambda g: g["status"].update(phase="Pending", running=0))
    _settle(loop, 2)
    status = cluster.get("PodGroup", "default/runs")["status"]
    assert (status["phase"], status["running"]) == ("Running", 1)


def test_a_reason_another_writer_removed_is_written_back(cluster):
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("waits", cpu="8"))
    loop = _loop(cluster)
    _settle(loop)
    written = cluster.get("PodGroup", "default/waits")["metadata"]["annotations"][REASON_ANNOTATION]
    _rewrite_podgroup(cluster, "default/waits", lambda g: g["metadata"]["annotations"].pop(REASON_ANNOTATION))
    _settle(loop, 2)
    assert cluster.get("PodGroup", "default/waits")["metadata"]["annotations"][REASON_ANNOTATION] == written


def test_a_deleted_job_leaves_nothing_in_the_memos(cluster):
    cluster.create(node("n1", cpu="2"))
    cluster.create(job("runs"))
    cluster.create(job("waits", cpu="8"))
    loop = _loop(cluster)
    _settle(loop)
    memos = (loop.world._statuses_seen, loop.world._phases_seen, loop.world._reasons_seen)
    assert all("default/runs" in memo for memo in memos[:2]) and "default/waits" in memos[2]
    cluster.delete("Job", "default/runs")
    cluster.delete("Job", "default/waits")
    _settle(loop)
    assert not any(key in memo for memo in memos for key in ("default/runs", "default/waits"))
