"""The server's garbage collection (``server.heap.HeapCollector``): what is alive after a tick is
out of the collector's sight, and a cycle that was garbage then is still freed once a full
collection is due, by time or by growth."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from lahar.server.heap import HeapCollector
from lahar.server.main import build_server
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.store import open_store


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _thawed():
    """Every test starts and ends with nothing frozen, the collector on."""
    gc.unfreeze()
    gc.collect()
    yield
    gc.unfreeze()
    gc.enable()


def _tick(heap: HeapCollector) -> None:
    """A tick with nothing in it: what the collector does around one."""
    with heap.during_tick():
        pass


def _garbage_cycle() -> weakref.ref:
    node = _Node()
    ref = weakref.ref(node)
    del node
    return ref


def test_what_is_garbage_at_a_tick_waits_for_the_next_full_collection():
    clock = _Clock()
    heap = HeapCollector(full_every=300.0, clock=clock)
    cycle = _garbage_cycle()
    _tick(heap)
    assert gc.get_freeze_count() > 0
    gc.collect()  # Python's own collections no longer look at frozen objects
    assert cycle() is not None
    clock.now = 299.0
    _tick(heap)
    assert cycle() is not None and heap.full_collections == 0
    clock.now = 300.0
    _tick(heap)
    assert cycle() is None, "a full collection was due after full_every seconds"
    assert heap.full_collections == 1
    assert gc.get_freeze_count() > 0, "what survived is frozen again"


def test_a_heap_that_doubled_is_collected_before_its_time():
    heap = HeapCollector(full_every=10**9, clock=_Clock())
    heap.collect()
    cycle = _garbage_cycle()
    _tick(heap)
    assert cycle() is not None
    target = 2 * max(sys.getallocatedblocks(), 200_000)
    grown: list[list[object]] = []
    while sys.getallocatedblocks() <= target:
        grown.append([object() for _ in range(100_000)])
    _tick(heap)
    assert cycle() is None
    assert heap.full_collections == 2


def test_with_the_collector_turned_off_nothing_is_frozen_or_collected():
    heap = HeapCollector(full_every=0.0, clock=_Clock())
    cycle = _garbage_cycle()
    gc.disable()
    _tick(heap)
    assert gc.get_freeze_count() == 0 and heap.full_collections == 0
    gc.enable()
    gc.collect()
    assert cycle() is None


def test_the_server_loop_runs_its_ticks_with_the_heap_collector(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    try:
        server = build_server(store, load_config(default_config_text()), auth=False, home=tmp_path)
        assert isinstance(server.loop.heap, HeapCollector)
        server.loop.tick()
        assert gc.get_freeze_count() > 0
    finally:
        store.close()


def test_no_collection_runs_by_itself_during_a_tick():
    heap = HeapCollector(full_every=10**9, clock=_Clock())
    heap.collect()
    before = gc.get_stats()[0]["collections"]
    frozen = gc.get_freeze_count()
    with heap.during_tick():
        assert not gc.isenabled()
        kept = [[] for _ in range(50 * gc.get_threshold()[0])]  # far past the young generation's threshold
        cycle = _garbage_cycle()
    after = [[] for _ in range(gc.get_threshold()[0] // 2)]  # the collector is on again: had the tick's objects been left young, these would set off a collection
    assert gc.get_stats()[0]["collections"] == before, "the tick's objects were not walked, during it or after"
    assert gc.isenabled() and len(kept) > 0 and len(after) > 0
    assert gc.get_freeze_count() >= frozen + len(kept), "what the tick left is frozen"
    assert cycle() is not None, "a cycle made in a tick waits for the next full collection, as any frozen one"
    heap.collect()
    assert cycle() is None


def test_a_collector_turned_off_stays_off_after_a_tick():
    heap = HeapCollector(full_every=10**9, clock=_Clock())
    gc.disable()
    with heap.during_tick():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    try:
        with heap.during_tick():
            raise RuntimeError("a failed tick")
    except RuntimeError:
        pass
    assert gc.isenabled(), "the collector is on again after a tick that failed"
