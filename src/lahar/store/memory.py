"""``MemoryStore``: the store in a dict, for tests and ``--db memory://``. Thread-safe, not durable."""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from lahar.errors import AlreadyExists, Conflict, NotFound
from lahar.store.base import StoreGone, WatchEvent, object_key, prepare_new

__all__ = ["MemoryStore"]


def _copy(obj: dict) -> dict:
    return json.loads(json.dumps(obj))


def _labels_match(obj: dict, selector: dict[str, str] | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in (selector or {}).items())


class MemoryStore:
    def __init__(self, retention: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        self.retention, self.clock = retention, clock
        self._objects: dict[tuple[str, str], dict] = {}
        self._events: list[WatchEvent] = []
        self._version = 0
        self._compacted = 0
        self._cond = threading.Condition(threading.RLock())

    def current_version(self) -> int:
        with self._cond:
            return self._version

    def get(self, kind: str, key: str) -> dict:
        with self._cond:
            obj = self._objects.get((kind, key))
            if obj is None:
                raise NotFound(kind, key)
            return _copy(obj)

    def list(self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None) -> tuple[list[dict], int]:
        with self._cond:
            items = [
                _copy(obj)
                for (k, key), obj in sorted(self._objects.items())
                if k == kind and (namespace is None or (obj["metadata"].get("namespace") == namespace)) and _labels_match(obj, label_selector)
            ]
            return items, self._version

    def _record(self, kind: str, key: str, kind_of_change: str, obj: dict) -> int:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)
        self._events.append(WatchEvent(self._version, kind_of_change, kind, key, _copy(obj)))
        if len(self._events) > self.retention + self.retention // 10 + 1:
            dropped = len(self._events) - self.retention
            self._compacted = self._events[dropped - 1].resource_version
            del self._events[:dropped]
        self._cond.notify_all()
        return self._version

    def create(self, obj: dict) -> dict:
        with self._cond:
            body = prepare_new(obj, self.clock)
            kind, key = object_key(body)
            if (kind, key) in self._objects:
                raise AlreadyExists(kind, key)
            self._record(kind, key, "ADDED", body)
            self._objects[(kind, key)] = body
            return _copy(body)

    def update(self, obj: dict) -> dict:
        with self._cond:
            kind, key = object_key(obj)
            stored = self._objects.get((kind, key))
            if stored is None:
                raise NotFound(kind, key)
            wanted = (obj.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != stored["metadata"]["resourceVersion"]:
                raise Conflict(f'{kind} "{key}": the object has been modified (resourceVersion {wanted} is stale, current is {stored["metadata"]["resourceVersion"]}); read it again and retry')
            body = _copy(obj)
            body["metadata"]["uid"] = stored["metadata"].get("uid")
            body["metadata"]["creationTimestamp"] = stored["metadata"].get("creationTimestamp")
            if stored["metadata"].get("namespace"):
                body["metadata"]["namespace"] = stored["metadata"]["namespace"]
            self._record(kind, key, "MODIFIED", body)
            self._objects[(kind, key)] = body
            return _copy(body)

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict:
        with self._cond:
            stored = self._objects.get((kind, key))
            if stored is None:
                raise NotFound(kind, key)
            if resource_version and str(resource_version) != stored["metadata"]["resourceVersion"]:
                raise Conflict(f'{kind} "{key}": stale resourceVersion {resource_version} on delete; read it again and retry')
            del self._objects[(kind, key)]
            body = _copy(stored)
            self._record(kind, key, "DELETED", body)
            return body

    def watch(self, since: int, kinds: set[str] | None = None, timeout: float = 0.0) -> list[WatchEvent]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if since < self._compacted:
                    raise StoreGone(f"resourceVersion {since} is too old: history starts after {self._compacted}; list again, then watch")
                found = [e for e in self._events if e.resource_version > since and (kinds is None or e.kind in kinds)]
                remaining = deadline - time.monotonic()
                if found or remaining <= 0:
                    return found
                self._cond.wait(remaining)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Several writes as one unit (here: under one lock)."""
        with self._cond:
            yield

    def close(self) -> None:
        return None
