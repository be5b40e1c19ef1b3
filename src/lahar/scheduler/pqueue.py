"""A binary heap ordered by a comparator, with Go's ``container/heap`` push and pop steps.

Volcano orders queues, jobs and tasks with heaps whose comparators read *live* session state
(shares change as tasks are placed). Entries are not re-sorted when their keys change; only
push and pop move them. To make the same decisions we keep the same algorithm: ``push`` appends
and sifts up; ``pop`` swaps the root with the last element, sifts the new root down over the
rest, and removes the last. ``heapq`` cannot take a comparator, hence this small class.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Generic, Iterable, TypeVar

T = TypeVar("T")

__all__ = ["PriorityQueue", "KeyedQueue", "pop_order"]


class PriorityQueue(Generic[T]):
    __slots__ = ("_items", "_less")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._items: list[T] = []
        for item in items:
            self.push(item)

    def __len__(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        self._items.append(item)
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        items = self._items
        last = len(items) - 1
        items[0], items[last] = items[last], items[0]
        self._down(0, last)
        return items.pop()

    def peek(self) -> T:
        return self._items[0]

    def entries(self) -> list[T]:
        """Every entry, in no particular order (the queue is left as it is)."""
        return list(self._items)

    def drain(self) -> list[T]:
        """Every entry, popped in order (the queue is left empty)."""
        return [self.pop() for _ in range(len(self._items))]

    def _up(self, j: int) -> None:
        items, less = self._items, self._less
        while j > 0:
            i = (j - 1) // 2
            if i == j or not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        items, less = self._items, self._less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(items[j2], items[j1]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j


class KeyedQueue(Generic[T]):
    """A heap ordered by a key computed when an entry is pushed, with ``PriorityQueue``'s face.

    It pops in the order of a ``PriorityQueue`` whose comparator is ``key(l) < key(r)`` as long
    as no entry's key changes while it is inside (a popped entry pushed back gets its key
    anew), and keys are unique: a heap under a strict total order always pops its smallest
    entry, whatever its layout. The keys are tuples, compared in C (``heapq``); they must never
    be equal, so that the entries themselves are never compared. Each entry is kept as its
    key's values followed by the entry, one flat tuple: a key tuple inside a pair would be
    compared twice per comparison of pairs (first for equality, then for order), every value
    of it up to the first that differs each time.
    """

    __slots__ = ("_items", "_key")

    def __init__(self, key: Callable[[T], tuple], items: Iterable[T] = ()) -> None:
        self._key = key
        self._items: list[tuple] = [key(item) + (item,) for item in items]
        heapq.heapify(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        heapq.heappush(self._items, self._key(item) + (item,))

    def pop(self) -> T:
        return heapq.heappop(self._items)[-1]

    def peek(self) -> T:
        return self._items[0][-1]

    def entries(self) -> list[T]:
        """Every entry, in no particular order (the queue is left as it is)."""
        return [entry[-1] for entry in self._items]

    def drain(self) -> list[T]:
        """Every entry, popped in order (the queue is left empty)."""
        return [self.pop() for _ in range(len(self._items))]


def pop_order(less: Callable[[T, T], bool], items: list[T]) -> list[T]:
    """``items`` in the order a ``PriorityQueue(less, items)`` pops them (no heap for one item)."""
    return PriorityQueue(less, items).drain() if len(items) > 1 else list(items)
