"""The store protocol: one narrow interface every backend implements, and what they share.

Objects are JSON-able dicts in Kubernetes shape; the store does not interpret them beyond
``kind``, ``metadata.name`` / ``namespace`` (the key) and ``metadata.resourceVersion``.

Resource versions form one global, strictly increasing sequence (as in etcd): every write gets
the next number, stored as the decimal string ``metadata.resourceVersion``. A write that names
a ``resourceVersion`` other than the stored one fails with ``Conflict`` (compare-and-swap); one
that names none overwrites. ``watch(since)`` returns every change after ``since`` in order; a
version older than the retained history raises ``StoreGone`` (410): re-list and watch again.
"""

from __future__ import annotations

import random
import string
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Protocol

from lahar.errors import LaharError

__all__ = ["Store", "WatchEvent", "StoreGone", "StoreError", "object_key", "is_namespaced", "prepare_new", "now_rfc3339"]

_CLUSTER_SCOPED = {"Queue", "Node", "PriorityClass", "SchedulerConfiguration", "LaharEvent", "Token", "UsageRecord"}


class StoreGone(LaharError):
    """A watch asked for changes older than the store keeps: list again, then watch."""

    http_status = 410
    reason = "Expired"


class StoreError(LaharError):
    """The database cannot be used (corrupted, locked, of a newer version...). Never silently reset."""

    http_status = 500
    reason = "StoreError"


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    type: str  # ADDED, MODIFIED, DELETED
    kind: str
    key: str
    object: dict


def is_namespaced(kind: str) -> bool:
    from lahar.model.manifest import KINDS

    cls = KINDS.get(kind)
    if cls is not None:
        return cls.NAMESPACED
    return kind not in _CLUSTER_SCOPED


def object_key(obj: dict) -> tuple[str, str]:
    """(kind, key): ``namespace/name`` for namespaced kinds, ``name`` otherwise."""
    kind = obj.get("kind") or ""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not kind or not name:
        from lahar.errors import BadRequest

        raise BadRequest("an object needs kind and metadata.name to be stored")
    if is_namespaced(kind):
        return kind, f"{meta.get('namespace') or 'default'}/{name}"
    return kind, name


def now_rfc3339(clock: Callable[[], float]) -> str:
    stamp = datetime.fromtimestamp(clock(), timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def prepare_new(obj: dict, clock: Callable[[], float]) -> dict:
    """A copy ready to create: name from generateName, namespace default, uid and creation time."""
    body = _deep_copy(obj)
    meta = body.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
    if is_namespaced(body.get("kind", "")) and not meta.get("namespace"):
        meta["namespace"] = "default"
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339(clock)
    return body


def _deep_copy(obj: dict) -> dict:
    import json

    return json.loads(json.dumps(obj))


class Store(Protocol):
    def get(self, kind: str, key: str) -> dict: ...

    def list(self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None) -> tuple[list[dict], int]: ...

    def create(self, obj: dict) -> dict: ...

    def update(self, obj: dict) -> dict: ...

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict: ...

    def watch(self, since: int, kinds: set[str] | None = None, timeout: float = 0.0) -> list[WatchEvent]: ...

    def current_version(self) -> int: ...

    def close(self) -> None: ...
