"""The server's controllers take the vcjobs and bare pods that came or changed since the last
tick in table order (the order a pass over every object would take them: by first arrival,
an object deleted and made again counting as new), whatever order they were marked in. The
order shows in the store: each vcjob's podgroup and pods are written in it, so it decides
their resource versions."""

from __future__ import annotations

from lahar.server.loop import StoreWorld
from test_api import job


def _podgroup_version(service, name: str) -> int:
    return int(service.get("PodGroup", f"default/{name}")["metadata"]["resourceVersion"])


def _pod(name: str) -> dict:
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"schedulerName": "volcano", "containers": [container]}}


def test_controllers_take_marked_objects_in_table_order(each_store_service):
    service = each_store_service
    world = StoreWorld(service)
    for name in ("x1", "x2", "x3"):
        service.create(job(name))
    world.sync()  # the table: x1, x2, x3
    changed = service.get("Job", "default/x1")
    changed["metadata"]["labels"] = {"touched": "yes"}
    service.update(changed)  # x1 marked again, after the others; its place in the table stays
    service.delete("Job", "default/x2")
    service.create(job("x2"))  # made again: now the last of the table
    service.create(job("a0"))  # first by name, last but one by arrival... after x2
    world.sync()
    with service.store.batch():
        world.reconcile_all()
    versions = {name: _podgroup_version(service, name) for name in ("x1", "x2", "x3", "a0")}
    assert sorted(versions, key=versions.get) == ["x1", "x3", "x2", "a0"]


def test_bare_pods_follow_the_vcjobs_each_in_table_order(each_store_service):
    service = each_store_service
    world = StoreWorld(service)
    service.create(_pod("p2"))
    service.create(_pod("p1"))
    service.create(job("j1"))
    world.sync()
    with service.store.batch():
        world.reconcile_all()
    versions = {name: _podgroup_version(service, name) for name in ("j1", "podgroup-p2", "podgroup-p1")}
    assert sorted(versions, key=versions.get) == ["j1", "podgroup-p2", "podgroup-p1"]
    before = service.store.current_version()
    with service.store.batch():
        world.sync()  # its own writes: nothing new to reconcile
        world.reconcile_all()
    assert service.store.current_version() == before
