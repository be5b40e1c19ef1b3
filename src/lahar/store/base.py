"""The store protocol: one narrow interface every backend implements, and the rules they share.

Why a module of its own: the API server, the control loop and the simulator talk to "a store",
never to SQLite or a dict, so that a backend can be swapped (memory in tests, SQLite on a laptop,
PostgreSQL for several servers) without touching them. Everything two backends must agree on
lives here, once: what the key of an object is, what a new object gets (uid, creation time,
generated name), when a write is a conflict, and when watch history is compacted.

Objects are JSON-able dicts in Kubernetes shape; the store reads nothing but ``kind``,
``metadata.name`` / ``namespace`` (the key), ``metadata.labels`` (selectors) and
``metadata.resourceVersion`` (compare-and-swap). It is kind-agnostic otherwise.

Resource versions form one global, strictly increasing sequence across every kind, as in etcd:
each write gets the next integer, shown as the decimal string ``metadata.resourceVersion``.
Versions are contiguous: every version is exactly one watch event.
"""

from __future__ import annotations

import json
import os
import secrets
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ContextManager, Literal, Protocol

import orjson

from lahar.errors import AlreadyExists, BadRequest, Conflict, LaharError
from lahar.model.manifest import KINDS

__all__ = [
    "DEFAULT_RETENTION",
    "ChangeType",
    "Store",
    "StoreError",
    "StoreGone",
    "WatchEvent",
    "check_version",
    "compaction_horizon",
    "copy_json",
    "from_json",
    "json_bytes",
    "gone",
    "is_namespaced",
    "labels_match",
    "new_object",
    "object_key",
    "replacement",
    "rfc3339",
    "stored_namespace",
    "to_json",
    "watch_through",
]

DEFAULT_RETENTION = 100_000

# Kinds the server stores that have no model class; all cluster-scoped.
_CLUSTER_SCOPED = frozenset({"LaharEvent", "Token", "UsageRecord"})
_NAME_SUFFIX = string.ascii_lowercase + string.digits

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


# a version 4 UUID's variant digit (RFC 9562: the two high bits 10) from a random hex digit,
# keeping its two low bits, as ``uuid.UUID(..., version=4)`` does
_UUID_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uid_text(raw: bytes) -> str:
    """The text of the version 4 UUID made of 16 random bytes, as ``str(uuid.UUID(bytes=raw,
    version=4))`` writes it, without building the ``UUID`` object (a third of the cost; every
    object created takes one)."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_UUID_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


def new_uid() -> str:
    """A random (version 4) UUID's text, from the system's random source like ``uuid.uuid4``."""
    return uid_text(os.urandom(16))


def _name_suffix(length: int = 5) -> str:
    """``length`` characters drawn uniformly from ``[a-z0-9]``: one draw of a number below
    36**length written in base 36 (one read of the system's random source, not one per
    character: every event and audit record is named this way)."""
    number = secrets.randbelow(len(_NAME_SUFFIX) ** length)
    chars = []
    for _ in range(length):
        number, digit = divmod(number, len(_NAME_SUFFIX))
        chars.append(_NAME_SUFFIX[digit])
    return "".join(chars)


class StoreGone(LaharError):
    """A watch asked for changes older than the retained history: list again, then watch."""

    http_status = 410
    reason = "Expired"


class StoreError(LaharError):
    """The database cannot be used: damaged, not Lahar's, too new, locked, closed. Never reset."""

    http_status = 500
    reason = "StoreError"


@dataclass(frozen=True)
class WatchEvent:
    """One change: the object as written (DELETED: its last state, with the delete's version)."""

    resource_version: int
    type: ChangeType
    kind: str
    key: str
    object: dict


Keys = list[str]  # (``Store`` has a method named ``list``: inside it, ``list`` is that method)


class Store(Protocol):
    """What the server, the control loop and the simulator may ask of a store (docs/store.md)."""

    def get(self, kind: str, key: str) -> dict: ...

    def list(
        self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None
    ) -> tuple[list[dict], int]: ...

    def create(self, obj: dict, owned: bool = False) -> dict:
        """Store a new object. ``owned``: the caller hands ``obj`` over (it keeps no reference
        and will not change it), so the store may stamp and keep it instead of a copy; what it
        returns may then be ``obj`` itself."""
        ...

    def update(self, obj: dict, owned: bool = False) -> dict:
        """Replace a stored object, keeping its uid, creation time and namespace. ``owned`` as
        for ``create``; with a ``resourceVersion`` besides, the caller also vouches that ``obj``
        carries the uid, creation time and namespace of the object stored at that version (it
        read that object), so the store only compares the version: it reads no body."""
        ...

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict: ...

    def delete_many(self, kind: str, keys: Iterable[str]) -> Keys:
        """``delete`` without a version for each key, in the order given, in one transaction (or
        the caller's batch); a key with no object, or given again, is passed over. Each deletion
        takes its own version and its own DELETED change. Returns the keys deleted, in order."""
        ...

    def watch(
        self, since: int, kinds: set[str] | None = None, timeout: float = 0.0
    ) -> list[WatchEvent]: ...

    def current_version(self) -> int: ...

    def batch(self) -> ContextManager[None]:
        """Every write inside is one transaction: all of them are kept, or none."""
        ...

    def close(self) -> None: ...


def watch_through(store: Store, since: int, kinds: set[str], timeout: float = 0.0) -> tuple[list[WatchEvent], int]:
    """``store.watch`` for a reader that follows a few kinds: the changes after ``since``, and
    the version it has now seen everything of those kinds up to.

    That is the store's version as read before looking, or the last change's when later: a
    reader that keeps only the last change's version reads every change of the other kinds
    since its last change of its own kinds again at each look (a request's admission view
    follows queues and podgroups; between two cycles every request writes a vcjob and an audit
    event). Safe because writers commit in version order: every change up to the version read
    is committed, so the look after it sees all of them."""
    head = store.current_version()
    events = store.watch(since, kinds, timeout)
    return events, max(since, head, events[-1].resource_version if events else since)


# --------------------------------------------------------------------------- keys


def is_namespaced(kind: str, metadata: dict | None = None) -> bool:
    """Model kinds say so themselves; an unknown kind is namespaced when it names a namespace."""
    cls = KINDS.get(kind)
    if cls is not None:
        return cls.NAMESPACED
    if kind in _CLUSTER_SCOPED:
        return False
    return bool((metadata or {}).get("namespace"))


def object_key(obj: dict) -> tuple[str, str]:
    """``(kind, key)``: key ``namespace/name`` (namespace ``default`` if unset) or ``name``."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        raise BadRequest("an object needs a kind and a metadata.name to be stored")
    if is_namespaced(kind, meta):
        return kind, f"{meta.get('namespace') or 'default'}/{name}"
    return kind, name


def stored_namespace(obj: dict) -> str | None:
    """The namespace ``list(kind, namespace)`` finds the object in; None if cluster-scoped."""
    meta = obj.get("metadata") or {}
    if is_namespaced(str(obj.get("kind") or ""), meta):
        return meta.get("namespace") or "default"
    return None


# --------------------------------------------------------------------------- writes


# What orjson must leave to the standard library (which refuses them, as before)
_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def json_bytes(obj: Any) -> bytes:
    """``obj`` as compact JSON in UTF-8; ``BadRequest`` when it is not JSON data (NaN and the
    infinities, which JSON cannot hold, included).

    Written by orjson, about ten times as fast as the standard library (every store write and
    every answer of the API pays it), except where orjson would not say exactly what the
    standard library says: integers past 64 bits, keys that are not strings, lone surrogates,
    subclasses, dates (orjson refuses these or writes them its own way) and any output that
    holds a ``null``, since orjson writes NaN and infinities as null where they must be refused.
    Those are written by the standard library (ASCII, as before), which gives the same data.
    Either way the text is one line however a reader splits lines: orjson writes U+2028,
    U+2029 and U+0085 as they are, which ``str.splitlines`` (and httpx's ``iter_lines``) take
    for line ends, so those are escaped. Unlike the standard library, orjson writes a ``UUID``
    as its text and an ``Enum`` member as its value instead of refusing them.
    """
    try:
        text = orjson.dumps(obj, option=_ORJSON_STRICT)
    except TypeError:
        pass
    else:
        # ``find``, not ``in``: a bytes ``in`` first tries its operand as an integer (a byte), which
        # makes and drops a TypeError with its message every time (the four looks: 2.8 us, 1.9 with
        # find). The line ends are not ASCII: text that is all ASCII (most) holds none, and
        # ``isascii`` reads it several times as fast as a ``find``
        if text.find(b"null") < 0:
            if not text.isascii() and (text.find(b"\xe2\x80\xa8") >= 0 or text.find(b"\xe2\x80\xa9") >= 0 or text.find(b"\xc2\x85") >= 0):
                text = _escape_line_ends(text)
            return text
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"the object cannot be stored as JSON: {exc}") from None


def _escape_line_ends(text: bytes) -> bytes:
    """U+2028, U+2029 and U+0085 as ``\\u`` escapes: they can only be inside JSON strings (and in
    UTF-8 each byte sequence below can only be that character)."""
    return (
        text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029").replace(b"\xc2\x85", b"\\u0085")
    )


def to_json(obj: Any) -> str:
    """``json_bytes`` as text (what the store keeps)."""
    return json_bytes(obj).decode()


# Every digit as "0" and everything else as a space: 19 zeros in a row then show where an
# integer past 64 bits may be, which orjson would read as a float (a bytes.translate and a
# find: a fifth of what a regular expression took to look)
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19


def from_json(text: str | bytes, slow: Callable[[Any], Any] = json.loads) -> Any:
    """The data of JSON text: what ``slow`` (``json.loads``) gives, read by orjson (about twice
    as fast) unless the text may hold an integer orjson would not read exactly (19 digits in a
    row anywhere) or orjson refuses it (a lone surrogate written as an escape, which the
    standard library writes and reads; anything that is not JSON: ``slow`` then says why or,
    if it is lenient, reads it). orjson reads nothing the standard library refuses, and reads
    what both read alike."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if raw.translate(_DIGITS_AS_ZEROS).find(_LONG_NUMBER) < 0:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return slow(text)


def copy_json(obj: Any) -> Any:
    """A deep copy that is JSON-able: what any backend gives back after a round trip."""
    return from_json(json_bytes(obj))


def rfc3339(seconds: float) -> str:
    """``2026-11-22T16:27:20Z``: UTC, whole seconds, as Kubernetes writes timestamps.

    The text of the last second written is kept (every object made in that second gets it):
    formatting a time costs a few microseconds, and a busy server stamps thousands of objects
    a second. Only a time well inside its second takes it: ``datetime`` rounds to the
    microsecond, so a time less than half a microsecond before the next second is written
    as the next (those, and times before 1970, are formatted each time)."""
    if seconds >= 0:
        whole = int(seconds)
        if seconds - whole < _WELL_INSIDE:
            last = _last_second
            if last[0] == whole:
                return last[1]
            text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            _remember_second(whole, text)
            return text
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_WELL_INSIDE = 0.999999  # a whole microsecond before the next second: rounds down whatever the float error
_last_second: tuple[int, str] = (-1, "")


def _remember_second(whole: int, text: str) -> None:
    global _last_second
    _last_second = (whole, text)  # one tuple: a reader on another thread sees the old or the new


# How many names a create from ``generateName`` draws before it gives up with AlreadyExists (as
# Kubernetes' API server does): with 10,000 names of one stem taken, 8 draws all fail about
# once in 10**30 creates
NAME_DRAWS = 8


def name_draws(obj: dict) -> int:
    """How many names creating ``obj`` may try: ``NAME_DRAWS`` when its name is drawn from
    ``generateName`` (it gives none of its own), else 1. Ask before ``new_object`` draws it."""
    meta = obj.get("metadata")
    drawn = isinstance(meta, dict) and not meta.get("name") and bool(meta.get("generateName"))
    return NAME_DRAWS if drawn else 1


def draw_again(body: dict, draws: int) -> tuple[int, str, str]:
    """``body``'s name (made by ``new_object``) was found taken, with ``draws`` tries left
    counting that one: raise AlreadyExists when it was the last, else draw another. Returns
    the tries left and ``body``'s new ``(kind, key)``."""
    if draws <= 1:
        raise AlreadyExists(*object_key(body))
    _draw_name(body["metadata"])
    return (draws - 1, *object_key(body))


def _draw_name(meta: dict) -> None:
    meta["name"] = str(meta["generateName"]) + _name_suffix()


def new_object(obj: dict, clock: Callable[[], float], owned: bool = False) -> dict:
    """A copy ready to create: name from ``generateName``, namespace ``default``, uid, time.

    The caller's ``resourceVersion`` is ignored (the store assigns one); its dict is untouched,
    unless ``owned``: then ``obj`` itself is stamped and returned (no copy; it must be JSON data).
    """
    body = obj if owned else copy_json(obj)
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        meta = body["metadata"] = {}
    if not meta.get("name") and meta.get("generateName"):
        _draw_name(meta)
    if is_namespaced(str(body.get("kind") or ""), meta) and not meta.get("namespace"):
        meta["namespace"] = "default"
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = rfc3339(clock())
    meta.pop("resourceVersion", None)
    return body


def replacement(obj: dict, stored: dict) -> dict:
    """A copy of ``obj`` to store over ``stored``, keeping uid, creation time and namespace."""
    body = copy_json(obj)
    meta, old = body["metadata"], stored["metadata"]
    for field in ("uid", "creationTimestamp", "namespace"):
        if old.get(field) is not None:
            meta[field] = old[field]
    return body


def check_version(kind: str, key: str, wanted: object, stored: dict, verb: str) -> None:
    """Compare-and-swap: a set ``resourceVersion`` must be the stored one. Unset means "any"."""
    current = stored["metadata"]["resourceVersion"]
    if wanted not in (None, "") and str(wanted) != current:
        raise Conflict(
            f'cannot {verb} {kind} "{key}": the object has been modified since '
            f"resourceVersion {wanted} "
            f"(it is now at {current}); read it again and apply your change to the latest version"
        )


def labels_match(obj: dict, selector: dict[str, str] | None) -> bool:
    """Equality-based selector: every pair must be among the object's labels."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in (selector or {}).items())


# --------------------------------------------------------------------------- history


def compaction_horizon(version: int, compacted: int, retention: int) -> int | None:
    """After writing ``version``: the version to compact through, or None (not yet).

    History keeps at least ``retention`` events. Compaction runs in batches (a tenth of the
    retention, at most 1000 events) so that most writes delete nothing.
    """
    batch = max(1, min(1000, retention // 10))
    if version - compacted > retention + batch:
        return version - retention
    return None


def gone(since: int, compacted: int) -> StoreGone:
    return StoreGone(
        f"resourceVersion {since} is too old: the store keeps changes after {compacted} only; "
        "list again, then watch from the list's resourceVersion"
    )
