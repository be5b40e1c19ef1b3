"""When the server's garbage collector looks at the objects it keeps for the cluster.

A server holds every job, pod and podgroup of the cluster in memory for as long as they exist
(hundreds of thousands of objects at 10,000 jobs), and each tick adds a few. Python's collector
counts those survivors and, every time they have grown by a quarter, walks all of them again
looking for reference cycles. Measured (``bench/loop.py --jobs 10000``): 29 such full
collections took 7.9 of the run's 45 CPU seconds, and found nothing to free; the rest of the
collector's work found a few hundred objects in all.

``HeapCollector.during_tick`` ends each tick moving everything alive out of the collector's
sight (``gc.freeze``), so the collections between ticks only look at what is new. Cycles that
were already garbage when frozen are freed at the next full collection, which it runs when the
memory Python holds has doubled since the last one (``sys.getallocatedblocks``: a look at
its arenas, not at each object, as ``gc.get_freeze_count`` would be), or when ``full_every``
seconds have passed: each object is walked a bounded number of times however large the
cluster grows, and garbage waits at most ``full_every`` seconds.

It also keeps the collector from running by itself while the tick runs, as a scheduling cycle
already does (``lahar.scheduler.cycle.paused_gc``). A busy tick makes thousands of objects
(each write's copies, dumps and rows) and the collector walked the young ones every 700 made,
then again with the older ones every tenth time: 6.3% of a busy tick's instructions
(``bench/loop.py --callgrind``), for garbage that reference counting frees anyway. A reference
cycle a tick made waits for the next full collection like any other frozen one.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable

from lahar.scheduler.cycle import paused_gc

__all__ = ["HeapCollector"]


class HeapCollector:
    def __init__(self, full_every: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.full_every, self.clock = full_every, clock
        self.full_collections = 0
        self._last_full = clock()
        self._blocks_after_full = sys.getallocatedblocks()  # as if collected when made

    @contextmanager
    def during_tick(self) -> Iterator[None]:
        """The tick in the ``with`` runs with no collection by itself; then what is alive is
        frozen, first collecting everything when that is due (see the module), all before the
        collector is on again: else the first object made after would set off a collection of
        everything the tick left. A collector turned off before is not ours to run: it is left
        off, and nothing is frozen or collected."""
        enabled = gc.isenabled()
        with paused_gc():
            try:
                yield
            finally:
                if enabled:
                    if self._full_due():
                        self.collect()
                    gc.freeze()

    def collect(self) -> None:
        """A full collection over every object, frozen or not; what survives is frozen again."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.full_collections += 1
        self._last_full = self.clock()
        self._blocks_after_full = sys.getallocatedblocks()

    def _full_due(self) -> bool:
        if self.clock() - self._last_full >= self.full_every:
            return True
        return sys.getallocatedblocks() > 2 * max(self._blocks_after_full, 200_000)
