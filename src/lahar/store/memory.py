"""``MemoryStore``: the store in a dict, the test double and ``--db memory://``.

Why it exists: tests and the simulator need a store that starts in microseconds and leaves no
files, yet behaves like the durable one. The contract suite (``tests/store``) runs the same
checks against this and the SQL store, so code tested against the double holds on SQLite.

It is thread-safe: one re-entrant lock guards every read and write, and a condition variable on
that lock wakes watchers when a write lands. It is not durable: everything is gone with the
process. ``batch()`` has the SQL store's meaning (all the writes inside, or none of them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from lahar.errors import NotFound
from lahar.store.base import (
    DEFAULT_RETENTION,
    ChangeType,
    Keys,
    WatchEvent,
    check_version,
    compaction_horizon,
    copy_json,
    draw_again,
    gone,
    labels_match,
    name_draws,
    new_object,
    object_key,
    replacement,
    stored_namespace,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """Objects by ``(kind, key)``, plus the last ``retention`` changes for watchers."""

    COMMIT_SYNCS = False  # nothing to sync: the server's writer runs each write request alone

    def __init__(
        self, retention: int = DEFAULT_RETENTION, clock: Callable[[], float] = time.time
    ) -> None:
        self.retention, self.clock = max(1, retention), clock
        self._objects: dict[tuple[str, str], dict] = {}
        self._events: list[WatchEvent] = []  # versions compacted+1 .. version, one event each
        self._version = 0
        self._compacted = 0
        self._changed = threading.Condition(threading.RLock())

    # ----------------------------------------------------------------- reads

    def current_version(self) -> int:
        with self._changed:
            return self._version

    def get(self, kind: str, key: str) -> dict:
        with self._changed:
            obj = self._objects.get((kind, key))
            if obj is None:
                raise NotFound(kind, key)
            return copy_json(obj)

    def list(
        self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None
    ) -> tuple[list[dict], int]:
        """Objects of ``kind`` sorted by key, and the version they are current at."""
        with self._changed:
            found = sorted(
                (key, obj)
                for (k, key), obj in self._objects.items()
                if k == kind
                and (namespace is None or stored_namespace(obj) == namespace)
                and labels_match(obj, label_selector)
            )
            return copy_json([obj for _, obj in found]), self._version

    def watch(
        self, since: int, kinds: set[str] | None = None, timeout: float = 0.0
    ) -> list[WatchEvent]:
        """Changes after ``since`` in order; waits up to ``timeout`` seconds for the first one."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._changes_after(since, kinds)
                remaining = deadline - time.monotonic()
                if found or remaining <= 0:
                    return [replace(e, object=copy_json(e.object)) for e in found]
                self._changed.wait(remaining)

    def _changes_after(self, since: int, kinds: set[str] | None) -> list[WatchEvent]:
        if since < self._compacted:
            raise gone(since, self._compacted)
        later = self._events[max(0, since - self._compacted) :]
        return [e for e in later if kinds is None or e.kind in kinds]

    # ----------------------------------------------------------------- writes

    def create(self, obj: dict, owned: bool = False) -> dict:
        draws = name_draws(obj)  # a drawn name found taken is drawn again
        body = new_object(obj, self.clock)  # copied even when owned: the result is a copy anyway
        kind, key = object_key(body)
        with self._changed:
            while (kind, key) in self._objects:
                draws, kind, key = draw_again(body, draws)
            self._write("ADDED", kind, key, body)
            return copy_json(body)

    def update(self, obj: dict, owned: bool = False) -> dict:
        kind, key = object_key(obj)
        with self._changed:  # owned or not, the stored object is at hand: read it
            stored = self._stored(kind, key)
            check_version(
                kind, key, (obj.get("metadata") or {}).get("resourceVersion"), stored, "update"
            )
            body = replacement(obj, stored)
            self._write("MODIFIED", kind, key, body)
            return copy_json(body)

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict:
        with self._changed:
            stored = self._stored(kind, key)
            check_version(kind, key, resource_version, stored, "delete")
            return copy_json(self._remove(kind, key, stored))

    def delete_many(self, kind: str, keys: Iterable[str]) -> Keys:
        """Each key's object deleted as ``delete`` without a version would; missing keys passed over."""
        deleted = []
        with self._changed:
            for key in keys:
                stored = self._objects.get((kind, key))
                if stored is None:
                    continue
                self._remove(kind, key, stored)
                deleted.append(key)
        return deleted

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Writes inside are one unit: an exception undoes all of them. Other threads wait."""
        with self._changed:
            saved = (dict(self._objects), list(self._events), self._version, self._compacted)
            try:
                yield
            except BaseException:
                self._objects, self._events, self._version, self._compacted = saved
                raise

    def close(self) -> None:
        """Nothing to release; the store stays usable (there is no file to let go of)."""

    # ----------------------------------------------------------------- internals

    def _stored(self, kind: str, key: str) -> dict:
        stored = self._objects.get((kind, key))
        if stored is None:
            raise NotFound(kind, key)
        return stored

    def _remove(self, kind: str, key: str, stored: dict) -> dict:
        """Delete the stored object; returns the body its DELETED change carries (a copy of
        the metadata: ``stored`` is shared with the change that wrote it)."""
        body = {**stored, "metadata": dict(stored["metadata"])}
        self._write("DELETED", kind, key, body)
        return body

    def _write(self, change: ChangeType, kind: str, key: str, body: dict) -> None:
        """Give ``body`` the next version, keep it (or drop it), log the change, wake watchers."""
        self._version += 1
        body["metadata"]["resourceVersion"] = str(self._version)
        if change == "DELETED":
            del self._objects[(kind, key)]
        else:
            self._objects[(kind, key)] = body
        self._events.append(WatchEvent(self._version, change, kind, key, body))
        horizon = compaction_horizon(self._version, self._compacted, self.retention)
        if horizon is not None:
            del self._events[: horizon - self._compacted]
            self._compacted = horizon
        self._changed.notify_all()
