"""The control loop hands its writes to the store without copies and, for an object it holds,
names the version it holds instead of having the store read the object back. What it then
keeps must be what the store holds, and a write must still go through when another writer
changed the object since the loop last read it (the loop's writes win, as they always have)."""

from __future__ import annotations

import pytest

from lahar.model.manifest import KINDS
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.loop import ControlLoop
from lahar.server.service import ApiService
from conftest import Clock
from test_api import job, node


@pytest.fixture
def cluster(each_store_service):
    return each_store_service


def _held_equals_stored(service: ApiService, world) -> int:
    """Every pod, podgroup and vcjob the loop holds is, field for field, the stored one."""
    checked = 0
    for kind, table in (("Pod", world.pods), ("PodGroup", world.podgroups), ("Job", world.jobs)):
        for key, held in table.items():
            assert held == KINDS[kind].model_validate(service.get(kind, key)), (kind, key)
            checked += 1
    return checked


def _one_job_after_a_tick(cluster: ApiService):
    """The world of a loop that ticked once over one node and a one-pod job "a"."""
    cluster.create(node("n1", cpu="4"))
    cluster.create(job("a", cpu="1"))
    loop = ControlLoop(cluster, load_config(default_config_text()), 1.0, clock=Clock(1_000_000.0))
    loop.tick()
    return loop.world


def test_what_the_loop_holds_is_what_the_store_holds(cluster):
    cluster.create(node("n1", cpu="4"))
    for name, cpu in (("a", "1"), ("b", "2"), ("c", "8")):  # c never fits: it waits with a reason
        cluster.create(job(name, cpu=cpu))
    loop = ControlLoop(cluster, load_config(default_config_text()), 1.0, clock=Clock(1_000_000.0))
    for _ in range(3):
        loop.tick()
    assert cluster.get("Pod", "default/a-main-0")["spec"]["nodeName"] == "n1"
    assert _held_equals_stored(cluster, loop.world) == 9  # three pods, podgroups, vcjobs


def test_a_write_over_another_writers_change_goes_through(cluster):
    world = _one_job_after_a_tick(cluster)
    held = world.podgroups["default/a"]
    stored = cluster.get("PodGroup", "default/a")
    stored["metadata"]["labels"] = {"touched": "yes"}
    cluster.update_status(stored)  # another writer, after the loop read the podgroup
    version = cluster.store.current_version()

    changed = held.model_copy(update={"status": held.status.model_copy(update={"phase": "Unknown"})})
    world._store(changed)  # names the version it holds, which is no longer the stored one

    after = cluster.get("PodGroup", "default/a")
    assert int(after["metadata"]["resourceVersion"]) == version + 1
    assert after["status"]["phase"] == "Unknown"
    assert "touched" not in after["metadata"].get("labels", {})  # the loop's write wins, as before
    assert after["metadata"]["uid"] == stored["metadata"]["uid"]
    assert world.podgroups["default/a"] == KINDS["PodGroup"].model_validate(after)


def test_a_write_of_an_object_deleted_meanwhile_creates_it_again(cluster):
    world = _one_job_after_a_tick(cluster)
    held = world.pods["default/a-main-0"]
    cluster.store.delete("Pod", "default/a-main-0")  # behind the loop's back

    world._store(held.model_copy(update={"status": held.status.model_copy(update={"phase": "Failed"})}))

    after = cluster.get("Pod", "default/a-main-0")
    assert after["status"]["phase"] == "Failed"
    assert world.pods["default/a-main-0"] == KINDS["Pod"].model_validate(after)


def test_a_vcjob_is_written_once_it_runs_not_while_it_waits(cluster):
    """Admission stores a new vcjob as Pending with every pod pending, as the loop would write
    it once the job is admitted to its queue: the loop's first write of it is the one that says
    it runs. A job that cannot fit is never written by the loop, however many ticks it waits."""
    cluster.create(node("n1", cpu="4"))
    cluster.create(job("a", cpu="1"))
    cluster.create(job("big", cpu="8"))  # never fits
    assert _status(cluster, "big") == {"state": {"phase": "Pending"}, "pending": 1}
    loop = ControlLoop(cluster, load_config(default_config_text()), 1.0, clock=Clock(1_000_000.0))
    first = cluster.store.current_version()
    for _ in range(4):
        loop.tick()
    written = cluster.store.watch(first, {"Job"}, timeout=0.0)
    assert [(e.object["metadata"]["name"], e.object["status"]["state"]["phase"]) for e in written] == [("a", "Running")]
    assert _status(cluster, "a") == {"state": {"phase": "Running"}, "running": 1}
    assert _status(cluster, "big") == {"state": {"phase": "Pending"}, "pending": 1}


def _status(cluster: ApiService, name: str) -> dict:
    """A stored vcjob's status without its zero counts."""
    return {k: v for k, v in cluster.get("Job", f"default/{name}")["status"].items() if v}
