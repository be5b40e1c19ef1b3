"""One contract, every backend: CRUD, compare-and-swap, resource versions, watch, batches,
concurrency; then what only a file can do: reopen, a second process, damaged and foreign files.

The ``store`` fixture runs each contract test on ``MemoryStore``, on ``SqliteStore`` in
``tmp_path`` and on ``PostgresStore`` in an emptied database of a throwaway PostgreSQL server
(skipped where PostgreSQL is not installed, see ``tests/pg.py``); a test that passes on all of
them is what the rest of Lahar may rely on.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import os
import sqlite3
import string
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.errors import AlreadyExists, BadRequest, Conflict, NotFound
from pg import reset_database
from lahar.store import (
    SCHEMA_VERSION,
    MemoryStore,
    PostgresStore,
    SqliteStore,
    SqlStore,
    StoreError,
    StoreGone,
    default_db_path,
    object_key,
    open_store,
)
from lahar.store.base import watch_through

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
BACKENDS = ["memory", "sqlite", "postgresql"]


def make(backend: str, where: Path | str, **options) -> MemoryStore | SqliteStore | PostgresStore:
    """A new, empty store; ``where`` is a directory (SQLite) or a database URL (PostgreSQL)."""
    options.setdefault("clock", lambda: NOW)
    if backend == "memory":
        return MemoryStore(**options)
    if backend == "postgresql":
        return PostgresStore(reset_database(str(where)), **options)
    return SqliteStore(Path(where) / "lahar.db", **options)


def place(request, backend: str, tmp_path: Path) -> Path | str:
    """Where ``make`` puts the backend's database: the module's PostgreSQL database, or tmp_path."""
    return request.getfixturevalue("pg_database") if backend == "postgresql" else tmp_path


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    s = make(request.param, place(request, request.param, tmp_path))
    yield s
    s.close()


def queue(name: str, weight: int = 1, **labels: str) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": {"weight": weight},
    }


def pod(name: str, ns: str | None = "default", **labels: str) -> dict:
    meta: dict = {"name": name, "labels": labels}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}}


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


def names(items: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


# --------------------------------------------------------------------------- create / get / list


def test_create_assigns_identity_and_leaves_the_callers_dict_alone(store):
    mine = queue("a")
    mine["metadata"]["resourceVersion"] = "12345"
    created = store.create(mine)
    meta = created["metadata"]
    assert uuid.UUID(meta["uid"]).version == 4
    assert meta["creationTimestamp"] == "2027-01-15T08:00:00Z"
    assert meta["resourceVersion"] == str(store.current_version())
    assert mine["metadata"] == {"name": "a", "labels": {}, "resourceVersion": "12345"}
    assert store.get("Queue", "a") == created


def test_get_missing_is_not_found(store):
    with pytest.raises(NotFound, match='Queue "nope" not found'):
        store.get("Queue", "nope")


@pytest.mark.parametrize(
    "obj, key",
    [
        (queue("q"), ("Queue", "q")),  # cluster-scoped model kind
        (pod("p", "ns1"), ("Pod", "ns1/p")),
        (pod("p", None), ("Pod", "default/p")),  # namespaced kind without namespace
        ({"kind": "Token", "metadata": {"name": "t"}}, ("Token", "t")),
        ({"kind": "Widget", "metadata": {"name": "w", "namespace": "x"}}, ("Widget", "x/w")),
        ({"kind": "Widget", "metadata": {"name": "w"}}, ("Widget", "w")),
    ],
)
def test_object_keys(obj, key):
    assert object_key(obj) == key


def test_list_filters_and_sorts_by_key(store):
    for name, ns, team in [
        ("b", "ns2", "x"),
        ("c", "ns1", "y"),
        ("a", "ns2", "y"),
        ("a", "ns1", "x"),
    ]:
        store.create(pod(name, ns, team=team))
    store.create(queue("z"))
    cases = [
        ({}, ["ns1/a", "ns1/c", "ns2/a", "ns2/b"]),
        ({"namespace": "ns2"}, ["ns2/a", "ns2/b"]),
        ({"label_selector": {"team": "x"}}, ["ns1/a", "ns2/b"]),
        ({"namespace": "ns1", "label_selector": {"team": "y"}}, ["ns1/c"]),
        ({"label_selector": {"team": "nobody"}}, []),
        ({"namespace": "ns3"}, []),
    ]
    for filters, keys in cases:
        items, version = store.list("Pod", **filters)
        assert [object_key(o)[1] for o in items] == keys, filters
        assert version == store.current_version()
    assert names(store.list("Queue")[0]) == ["z"]
    assert store.list("Queue", namespace="default")[0] == []  # cluster-scoped: in no namespace


def test_generate_name(store):
    made = [
        store.create(
            {"kind": "Command", "metadata": {"generateName": "open-"}, "action": "OpenQueue"}
        )
        for _ in range(3)
    ]
    for obj in made:
        name = obj["metadata"]["name"]
        assert name.startswith("open-") and len(name) == len("open-") + 5
        assert all(c.isdigit() or "a" <= c <= "z" for c in name[5:])
        assert obj["metadata"]["namespace"] == "default"
    assert len({o["metadata"]["name"] for o in made}) == 3


@pytest.mark.parametrize("owned", [False, True])
def test_a_generated_name_already_taken_is_drawn_again(store, monkeypatch, owned):
    """Names drawn from ``generateName`` collide once in a while (10,000 events of one queue
    share one stem: a new one takes a used name about once in 6,000). As Kubernetes' API server
    does, the store draws again instead of refusing the create; a name the caller gave is
    refused as before, and so is a stem whose draws keep colliding."""
    import lahar.store.base as base

    draws = iter(["aaaaa", "aaaaa", "aaaaa", "bbbbb"])
    monkeypatch.setattr(base, "_name_suffix", lambda: next(draws))
    first = store.create({"kind": "Command", "metadata": {"generateName": "open-"}, "action": "OpenQueue"}, owned=owned)
    start = store.current_version()
    second = store.create({"kind": "Command", "metadata": {"generateName": "open-"}, "action": "OpenQueue"}, owned=owned)
    assert (first["metadata"]["name"], second["metadata"]["name"]) == ("open-aaaaa", "open-bbbbb")
    assert rv(second) == start + 1 and [e.key for e in store.watch(start)] == ["default/open-bbbbb"]
    with pytest.raises(AlreadyExists):
        store.create({"kind": "Command", "metadata": {"name": "open-aaaaa"}, "action": "OpenQueue"}, owned=owned)
    monkeypatch.setattr(base, "_name_suffix", lambda: "aaaaa")
    with pytest.raises(AlreadyExists):
        store.create({"kind": "Command", "metadata": {"generateName": "open-"}, "action": "OpenQueue"}, owned=owned)
    assert store.current_version() == start + 1


def test_generated_names_use_every_character_in_every_place():
    """The five characters of a generated name are drawn uniformly from [a-z0-9], each place
    on its own (collisions stay as rare as 36**5 names allow)."""
    from lahar.store.base import _name_suffix

    suffixes = [_name_suffix() for _ in range(3600)]
    alphabet = set(string.ascii_lowercase + string.digits)
    for place in range(5):
        counts = collections.Counter(s[place] for s in suffixes)
        assert set(counts) == alphabet
        assert max(counts.values()) < 3 * 100  # about 100 each: none is favoured


def test_create_existing_key_is_already_exists(store):
    store.create(pod("p", "ns1"))
    store.create(pod("p", "ns2"))  # same name, other namespace: another key
    with pytest.raises(AlreadyExists, match='Pod "ns1/p" already exists'):
        store.create(pod("p", "ns1"))


@pytest.mark.parametrize(
    "bad",
    [
        {"metadata": {"name": "x"}},
        {"kind": "Queue", "metadata": {}},
        {"kind": "Queue"},
        {"kind": "Queue", "metadata": {"name": "x"}, "spec": {"at": object()}},
        {"kind": "Queue", "metadata": {"name": "x"}, "spec": {"at": float("nan")}},
        {"kind": "Queue", "metadata": {"name": "x"}, "spec": {"at": [float("-inf")], "other": None}},
    ],
)
def test_unstorable_objects_are_bad_requests(store, bad):
    with pytest.raises(BadRequest):
        store.create(bad)
    assert store.current_version() == 0


# Values JSON holds that a fast encoder may not (integers past 64 bits, lone surrogates), and
# text that looks like what the encoder must not confuse it with
EXACT_VALUES = {
    "big": 2**70,
    "negative big": -(2**70),
    "largest 64-bit": 2**64 - 1,
    "floats": [0.1, 5e-324, 1e300, -0.0, 1e16],
    "text": "é ☃ 😀 \u2028 \x00\x1f \\ \"",
    "lone surrogate": "\ud800",
    "the word null": "null",
    "none": None,
    "nested": [[{}], [], {"a": {"b": [True, False]}}],
}


def test_every_json_value_comes_back_exactly(store):
    body = {**queue("a"), "spec": {"weight": 1, **EXACT_VALUES}}
    created = store.create(body)
    store.update({**created, "spec": {**created["spec"], "weight": 2}})
    for found in (store.get("Queue", "a"), store.list("Queue")[0][0], store.watch(0)[-1].object):
        assert found["spec"] == {"weight": 2, **EXACT_VALUES}
        assert [type(v) for v in found["spec"]["floats"]] == [float] * 5
        assert type(found["spec"]["big"]) is int


def test_returned_objects_are_copies(store):
    created = store.create(queue("a"))
    created["spec"]["weight"] = 99
    store.get("Queue", "a")["spec"]["weight"] = 98
    store.list("Queue")[0][0]["spec"]["weight"] = 97
    store.watch(0)[0].object["spec"]["weight"] = 96
    assert store.get("Queue", "a")["spec"]["weight"] == 1
    assert store.watch(0)[0].object["spec"]["weight"] == 1


# --------------------------------------------------------------------------- update / delete


def test_update_is_compare_and_swap(store):
    first = store.create(queue("a"))
    second = store.update({**first, "spec": {"weight": 2}})
    assert rv(second) > rv(first)
    assert {k: second["metadata"][k] for k in ("uid", "creationTimestamp")} == {
        k: first["metadata"][k] for k in ("uid", "creationTimestamp")
    }
    with pytest.raises(
        Conflict, match=rf'Queue "a".*resourceVersion {rv(first)}.*now at {rv(second)}'
    ):
        store.update({**first, "spec": {"weight": 3}})  # still carries the first version
    assert store.get("Queue", "a")["spec"]["weight"] == 2


def test_update_without_version_is_unconditional_and_keeps_identity(store):
    first = store.create(queue("a"))
    blind = queue("a", weight=4)  # no resourceVersion, no uid
    written = store.update(blind)
    assert written["spec"]["weight"] == 4
    assert written["metadata"]["uid"] == first["metadata"]["uid"]
    assert written["metadata"]["creationTimestamp"] == first["metadata"]["creationTimestamp"]
    with pytest.raises(NotFound):
        store.update(queue("ghost"))


def test_owned_writes_are_the_same_writes(store):
    """``owned``: the store may keep the caller's dict instead of a copy (the control loop's
    writes); what is stored, returned, refused and watched is what a plain write gives."""
    mine = queue("a")
    created = store.create(mine, owned=True)
    assert uuid.UUID(created["metadata"]["uid"]).version == 4
    assert created["metadata"]["resourceVersion"] == str(store.current_version())
    assert store.get("Queue", "a") == created
    first = copy.deepcopy(created)
    with pytest.raises(AlreadyExists):
        store.create(queue("a"), owned=True)

    newer = copy.deepcopy(first)
    newer["spec"]["weight"] = 2
    second = store.update(newer, owned=True)  # at the version read: compared, nothing read back
    assert rv(second) == rv(first) + 1
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert store.get("Queue", "a") == second
    stale = copy.deepcopy(first)
    stale["spec"]["weight"] = 3
    with pytest.raises(Conflict, match=rf"resourceVersion {rv(first)}.*now at {rv(second)}"):
        store.update(stale, owned=True)
    assert store.get("Queue", "a") == second
    with pytest.raises(NotFound):
        store.update({**queue("ghost"), "metadata": {"name": "ghost", "resourceVersion": "1"}}, owned=True)

    blind = store.update(queue("a", weight=4), owned=True)  # no version: over what is stored
    assert blind["metadata"]["uid"] == first["metadata"]["uid"]
    assert blind["metadata"]["creationTimestamp"] == first["metadata"]["creationTimestamp"]
    assert [(e.type, e.object["spec"]["weight"]) for e in store.watch(0)] == [
        ("ADDED", 1), ("MODIFIED", 2), ("MODIFIED", 4)
    ]


def test_delete(store):
    a = store.create(queue("a"))
    store.update(queue("a", weight=2))
    with pytest.raises(Conflict, match="stale|modified"):
        store.delete("Queue", "a", resource_version=a["metadata"]["resourceVersion"])
    current = store.get("Queue", "a")
    deleted = store.delete("Queue", "a", current["metadata"]["resourceVersion"])
    assert deleted["spec"]["weight"] == 2 and rv(deleted) == store.current_version() > rv(current)
    with pytest.raises(NotFound):
        store.get("Queue", "a")
    with pytest.raises(NotFound):
        store.delete("Queue", "a")
    store.create(queue("b"))
    assert store.delete("Queue", "b")["metadata"]["name"] == "b"  # no version: unconditional


def test_delete_many_deletes_in_the_order_given_each_a_change_of_its_own(store):
    """``delete_many``: what ``delete`` without a version does for each key, in the order given,
    in one transaction; a key with no object, or given twice, is passed over. Each deletion
    takes its own version and its own DELETED change carrying the last state."""
    for name in ("a", "b", "c", "d"):
        store.create(queue(name))
    store.update(queue("c", weight=3))
    start = store.current_version()
    assert store.delete_many("Queue", ["c", "missing", "a", "c"]) == ["c", "a"]
    assert names(store.list("Queue")[0]) == ["b", "d"]
    events = store.watch(start)
    assert [(e.resource_version, e.type, e.kind, e.key) for e in events] == [
        (start + 1, "DELETED", "Queue", "c"),
        (start + 2, "DELETED", "Queue", "a"),
    ]
    assert [rv(e.object) for e in events] == [start + 1, start + 2]
    assert events[0].object["spec"]["weight"] == 3 and events[0].object["metadata"]["name"] == "c"
    assert store.current_version() == start + 2
    assert store.delete_many("Queue", []) == [] and store.delete_many("Queue", ["gone"]) == []
    assert store.current_version() == start + 2  # nothing deleted: no version taken
    assert rv(store.create(queue("e"))) == start + 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_delete_many_of_many_keys_matches_deletes_one_by_one(backend, request, tmp_path):
    """More keys than one statement takes (the SQL store reads them in chunks): the same
    objects left and the same history, bodies included, as ``delete`` key by key."""
    stores = [make(backend, place(request, backend, tmp_path)), make("memory", tmp_path)]
    keys = [f"default/p{i:04}" for i in range(0, 1300, 2)] + ["default/nope", "default/p0001"]
    for s in stores:
        with s.batch():
            for i in range(1300):
                s.create(pod(f"p{i:04}", ns="default"))
    start = stores[0].current_version()
    assert stores[0].delete_many("Pod", keys) == [k for k in keys if k != "default/nope"]
    with stores[1].batch():
        for key in keys:
            try:
                stores[1].delete("Pod", key)
            except NotFound:
                pass
    history = [
        [(e.resource_version, e.type, e.key, e.object["metadata"]["name"], rv(e.object)) for e in s.watch(start)]
        for s in stores
    ]
    assert history[0] == history[1] and len(history[0]) == 651
    assert names(stores[0].list("Pod")[0]) == names(stores[1].list("Pod")[0])
    for s in stores:
        s.close()


def test_delete_many_is_undone_with_its_batch(store):
    store.create(queue("a"))
    store.create(queue("b"))
    version = store.current_version()
    with pytest.raises(RuntimeError), store.batch():
        assert store.delete_many("Queue", ["a", "b"]) == ["a", "b"]
        assert names(store.list("Queue")[0]) == []  # the batch reads its own deletes
        raise RuntimeError("the tick failed")
    assert names(store.list("Queue")[0]) == ["a", "b"]
    assert store.watch(version) == [] and store.current_version() == version


@pytest.mark.parametrize("backend", BACKENDS)
def test_delete_many_compacts_the_history_as_single_writes_do(backend, request, tmp_path):
    store = make(backend, place(request, backend, tmp_path), retention=10)
    for i in range(5):
        store.create(pod(f"p{i}"))
    store.delete_many("Pod", [f"default/p{i}" for i in range(5)] * 2)
    for i in range(5, 10):
        store.create(pod(f"p{i}"))
    store.delete_many("Pod", [f"default/p{i}" for i in range(5, 10)])
    with pytest.raises(StoreGone):
        store.watch(5)
    assert [(e.type, e.resource_version) for e in store.watch(15)] == [("DELETED", v) for v in range(16, 21)]
    assert store.list("Pod") == ([], 20)
    store.close()


# --------------------------------------------------------------------------- versions and watch


def test_versions_strictly_increase_across_kinds(store):
    written = [
        store.create(queue("q")),
        store.create(pod("p")),
        store.update(queue("q", weight=2)),
        store.create(pod("r")),
    ]
    written.append(store.delete("Pod", "default/p"))
    assert [rv(o) for o in written] == [1, 2, 3, 4, 5]
    assert store.current_version() == 5


def test_watch_returns_exactly_the_later_changes_in_order(store):
    store.create(queue("before"))
    start = store.current_version()
    store.create(queue("a"))
    store.create(pod("p"))
    store.update(queue("a", weight=2))
    store.delete("Queue", "a")
    events = store.watch(start)
    assert [(e.resource_version, e.type, e.kind, e.key) for e in events] == [
        (start + 1, "ADDED", "Queue", "a"),
        (start + 2, "ADDED", "Pod", "default/p"),
        (start + 3, "MODIFIED", "Queue", "a"),
        (start + 4, "DELETED", "Queue", "a"),
    ]
    assert [rv(e.object) for e in events] == [e.resource_version for e in events]
    assert events[3].object["spec"]["weight"] == 2  # DELETED carries the last state
    assert [e.type for e in store.watch(start + 1, {"Queue"})] == ["MODIFIED", "DELETED"]
    assert [e.key for e in store.watch(start, {"Pod"})] == ["default/p"]
    assert store.watch(store.current_version()) == []


def test_watch_through_reads_other_kinds_once(store):
    """``watch_through``: a reader of a few kinds also learns how far it has read, so changes
    of other kinds are not read again at its next look; a later change of its kinds is not missed."""
    start = store.current_version()
    store.create(queue("a"))
    for n in range(3):
        store.create(pod(f"p{n}"))
    events, seen = watch_through(store, start, {"Queue"})
    assert [(e.kind, e.key) for e in events] == [("Queue", "a")]
    assert seen == store.current_version() == start + 4  # past the pods
    assert watch_through(store, seen, {"Queue"}) == ([], seen)
    store.update(queue("a", weight=2))
    events, later = watch_through(store, seen, {"Queue"})
    assert [(e.type, e.object["spec"]["weight"]) for e in events] == [("MODIFIED", 2)]
    assert later == seen + 1


def test_watch_through_misses_nothing_while_others_write(store):
    """Writers in other threads: each look sees every change of its kind exactly once, in
    order, however the looks and the writes interleave."""
    written: list[int] = []

    def writer() -> None:
        for n in range(60):
            store.create(pod(f"w{n}"))
            if n % 3 == 0:
                written.append(rv(store.create(queue(f"q{n}"))))

    seen_versions: list[int] = []
    version = store.current_version()
    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        events, version = watch_through(store, version, {"Queue"})
        seen_versions.extend(e.resource_version for e in events)
    thread.join()
    events, version = watch_through(store, version, {"Queue"})
    seen_versions.extend(e.resource_version for e in events)
    assert seen_versions == written and version == store.current_version()


def test_watch_times_out_with_nothing(store):
    began = time.monotonic()
    assert store.watch(store.current_version(), timeout=0.1) == []
    assert 0.09 <= time.monotonic() - began < 2.0


def test_watch_wakes_as_soon_as_another_thread_writes(store):
    start = store.current_version()
    written: list[float] = []

    def write_later() -> None:
        time.sleep(0.1)
        store.create(queue("late"))
        written.append(time.monotonic())

    writer = threading.Thread(target=write_later)
    writer.start()
    events = store.watch(start, timeout=10.0)
    woke = time.monotonic()
    writer.join()
    assert [e.key for e in events] == ["late"]
    assert woke - written[0] < 0.5  # woken by the write, not by the 10 s timeout


def test_watch_of_other_kinds_keeps_waiting(store):
    start = store.current_version()
    timer = threading.Timer(0.05, lambda: store.create(pod("noise")))
    timer.start()
    assert store.watch(start, {"Queue"}, timeout=0.3) == []
    timer.join()


@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_from_before_the_retained_history_is_gone(backend, tmp_path, request):
    store = make(backend, place(request, backend, tmp_path), retention=20)
    for i in range(60):
        store.create(pod(f"p{i:02}"))
    with pytest.raises(StoreGone) as gone:
        store.watch(0)
    assert (
        gone.value.http_status == 410
        and gone.value.reason == "Expired"
        and "list again" in gone.value.message
    )
    recent = store.watch(store.current_version() - 20)
    assert [e.key for e in recent] == [f"default/p{i:02}" for i in range(40, 60)]
    store.close()


# ----------------------------------------------------------------- batches and concurrency


def test_batch_is_all_or_nothing(store):
    store.create(queue("kept"))
    version = store.current_version()
    with pytest.raises(RuntimeError), store.batch():
        store.create(queue("lost"))
        store.update(queue("kept", weight=9))
        raise RuntimeError("the control loop failed half-way")
    assert store.current_version() == version
    assert (
        names(store.list("Queue")[0]) == ["kept"]
        and store.get("Queue", "kept")["spec"]["weight"] == 1
    )
    assert store.watch(version) == []


def test_a_refused_write_does_not_spoil_its_batch(store):
    with store.batch():
        store.create(queue("x"))
        with pytest.raises(AlreadyExists):
            store.create(queue("x"))
        store.create(queue("y"))
        assert names(store.list("Queue")[0]) == ["x", "y"]  # a batch reads its own writes
    assert [e.key for e in store.watch(0)] == ["x", "y"]


def test_versions_run_on_without_gaps_past_refusals_and_undone_inner_batches(store):
    """A refused write and an undone inner batch take no version: the next write gets the next
    number, inside the batch and after it, and what the batch wrote is seen inside it."""
    start = store.current_version()
    with store.batch():
        a = store.create(queue("a"))
        with pytest.raises(AlreadyExists):
            store.create(queue("a"))
        stale = queue("a", weight=5)
        stale["metadata"].update(resourceVersion=str(start), uid=a["metadata"]["uid"])
        with pytest.raises(Conflict):
            store.update(stale, owned=True)
        assert stale["metadata"]["resourceVersion"] == str(start)  # the caller's dict as it was
        missing = queue("nope")
        missing["metadata"]["resourceVersion"] = "1"
        with pytest.raises(NotFound):
            store.update(missing, owned=True)
        with pytest.raises(RuntimeError), store.batch():
            store.create(queue("lost"))
            raise RuntimeError("undone")
        assert rv(a) == start + 1
        b = store.update({**a, "metadata": dict(a["metadata"]), "spec": {"weight": 2}}, owned=True)
        assert rv(b) == start + 2
        assert store.current_version() == start + 2 and store.list("Queue")[1] == start + 2
        assert [e.resource_version for e in store.watch(start)] == [start + 1, start + 2]
    assert store.current_version() == start + 2
    assert rv(store.create(queue("c"))) == start + 3
    assert [(e.type, e.key, e.resource_version) for e in store.watch(start)] == [
        ("ADDED", "a", start + 1),
        ("MODIFIED", "a", start + 2),
        ("ADDED", "c", start + 3),
    ]
    assert store.get("Queue", "a")["spec"]["weight"] == 2


def test_a_refused_owned_create_leaves_the_callers_object_as_it_was(store):
    store.create(queue("a"))
    again = queue("a", weight=7)
    with pytest.raises(AlreadyExists):
        store.create(again, owned=True)
    assert "resourceVersion" not in again["metadata"]
    assert store.get("Queue", "a")["spec"]["weight"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_history_is_compacted_inside_a_batch_as_outside(backend, request, tmp_path):
    """A batch that writes past the retention compacts as single writes would: a watch from
    before the horizon is gone, inside the batch and after it, and the counter goes on."""
    store = make(backend, place(request, backend, tmp_path), retention=10)
    with store.batch():
        for i in range(30):
            store.create(pod(f"p{i}"))
        with pytest.raises(StoreGone):
            store.watch(0)
        inside = [e.resource_version for e in store.watch(20)]
    assert inside == list(range(21, 31))
    with pytest.raises(StoreGone):
        store.watch(0)
    assert [e.resource_version for e in store.watch(25)] == list(range(26, 31))
    assert rv(store.create(pod("last"))) == 31
    store.close()


def test_a_failed_inner_batch_is_undone_and_the_outer_goes_on(store):
    """An inner batch is a savepoint: what it wrote before failing is undone, the outer keeps
    its own writes before and after, and watch shows only what was kept."""
    start = store.current_version()
    with store.batch():
        store.create(queue("before"))
        with pytest.raises(RuntimeError), store.batch():
            store.create(queue("undone"))
            store.update(queue("before", weight=7))
            raise RuntimeError("half-way")
        store.create(queue("after"))
    assert names(store.list("Queue")[0]) == ["after", "before"]
    assert store.get("Queue", "before")["spec"]["weight"] == 1
    assert [e.key for e in store.watch(start)] == ["before", "after"]


_REFUSE_BAD_EVENT = {
    "sqlite": [
        "CREATE TRIGGER refuse_bad BEFORE INSERT ON events WHEN NEW.key = 'bad' "
        "BEGIN SELECT RAISE(ABORT, 'disk went away'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_bad() RETURNS trigger AS $$ BEGIN "
        "IF NEW.key = 'bad' THEN RAISE EXCEPTION 'disk went away'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER refuse_bad BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_bad()",
    ],
}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_write_that_fails_part_way_leaves_no_half_write(request, backend, tmp_path):
    """Inside a batch, the database refuses a write's event after its object row was written,
    and the caller carries on. Nothing is kept by halves: the batch is undone as a whole, so
    no object is listed without its event. (The memory store's write is one assignment: it
    cannot stop half-way.)"""
    store = make(backend, place(request, backend, tmp_path))
    with store.engine.begin() as conn:
        for statement in _REFUSE_BAD_EVENT[backend]:
            conn.exec_driver_sql(statement)
    start = store.current_version()
    with pytest.raises(StoreError, match="undone|aborted"):
        with store.batch():
            store.create(queue("x"))
            with pytest.raises(StoreError, match="disk went away"):
                store.create(queue("bad"))
            try:
                store.create(queue("y"))
            except StoreError:
                pass  # PostgreSQL refuses every statement after an error until the rollback
    assert names(store.list("Queue")[0]) == []
    assert store.watch(start) == [] and store.current_version() == start
    store.create(queue("z"))  # the store is usable afterwards
    assert names(store.list("Queue")[0]) == ["z"]
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_delete_many_that_fails_part_way_deletes_nothing(request, backend, tmp_path):
    """The database refuses the DELETED change of one key among many: no key is deleted, the
    batch it ran in is undone, and the store goes on."""
    store = make(backend, place(request, backend, tmp_path))
    for name in ("a", "bad", "c"):
        store.create(queue(name))
    with store.engine.begin() as conn:
        for statement in _REFUSE_BAD_EVENT[backend]:
            conn.exec_driver_sql(statement)
    start = store.current_version()
    with pytest.raises(StoreError, match="disk went away|undone|aborted"):
        with store.batch():
            store.delete_many("Queue", ["a", "bad", "c"])
    assert names(store.list("Queue")[0]) == ["a", "bad", "c"]
    assert store.watch(start) == [] and store.current_version() == start
    assert store.delete_many("Queue", ["a"]) == ["a"]
    store.close()


def test_concurrent_writers_lose_no_update(store):
    """Eight API clients at once: each creates its own pods and bumps shared counters, retrying
    on Conflict as kubectl does. Every acknowledged write must be kept and seen by watch."""
    threads, rounds, counters = 8, 50, ["c0", "c1", "c2"]
    for name in counters:
        store.create(queue(name, weight=0))
    start = store.current_version()
    acknowledged: list[int] = []
    lock = threading.Lock()

    def client(t: int) -> None:
        for i in range(rounds):
            mine = [rv(store.create(pod(f"t{t}-{i:02}")))]
            while True:
                current = store.get("Queue", counters[(t + i) % len(counters)])
                current["spec"]["weight"] += 1
                try:
                    mine.append(rv(store.update(current)))
                    break
                except Conflict:
                    continue
            with lock:
                acknowledged.extend(mine)

    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sum(store.get("Queue", c)["spec"]["weight"] for c in counters) == threads * rounds
    assert len(store.list("Pod")[0]) == threads * rounds
    assert len(set(acknowledged)) == len(acknowledged) == 2 * threads * rounds
    assert sorted(acknowledged) == list(range(start + 1, store.current_version() + 1))
    assert [e.resource_version for e in store.watch(start)] == sorted(acknowledged)


# ----------------------------------------------------------------- the double agrees with SQL

_NAMES = st.sampled_from(["a", "b", "c"])
_VERSIONS = st.sampled_from([None, "stale", "fresh"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), _NAMES, st.integers(1, 3), st.just(None), st.booleans()),
        st.tuples(st.just("update"), _NAMES, st.integers(1, 3), _VERSIONS, st.booleans()),
        st.tuples(st.just("delete"), _NAMES, st.just(0), _VERSIONS, st.just(False)),
    ),
    max_size=15,
)


def _apply(store, op) -> object:
    """One client call; the outcome with the random uid left out. An owned update carries the
    uid and creation time of the object it read, as ``Store.update`` asks of its caller."""
    verb, name, weight, which, owned = op
    try:
        read = store.get("Queue", name)["metadata"]
    except NotFound:
        read = {}
    version = {"stale": "1", "fresh": read.get("resourceVersion")}.get(which)
    try:
        if verb == "create":
            out = store.create(queue(name, weight), owned=owned)
        elif verb == "update":
            body = queue(name, weight)
            body["metadata"]["resourceVersion"] = version
            if owned:
                body["metadata"].update({k: read[k] for k in ("uid", "creationTimestamp") if k in read})
            out = store.update(body, owned=owned)
        else:
            out = store.delete("Queue", name, version)
    except (NotFound, AlreadyExists, Conflict) as exc:
        return type(exc).__name__
    return (out["metadata"]["resourceVersion"], out["spec"])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_memory_and_sql_agree(backend, request, ops):
    with tempfile.TemporaryDirectory() as where:
        memory = make("memory", Path(where))
        sql = make(backend, place(request, backend, Path(where)))
        try:
            for op in ops:
                assert _apply(memory, op) == _apply(sql, op), op
            state = [
                [(e.resource_version, e.type, e.key, e.object["spec"]) for e in s.watch(0)]
                for s in (memory, sql)
            ]
            assert state[0] == state[1]
            assert [(o["metadata"]["name"], o["spec"]) for o in memory.list("Queue")[0]] == [
                (o["metadata"]["name"], o["spec"]) for o in sql.list("Queue")[0]
            ]
        finally:
            sql.close()


# --------------------------------------------------------------------------- SQLite: the file


def test_sqlite_durability_settings(tmp_path):
    store = SqliteStore(tmp_path / "lahar.db")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    store.close()


def test_sqlite_reopen_keeps_objects_counter_and_history(tmp_path):
    path = tmp_path / "deep" / "dir" / "lahar.db"  # the directory is created
    first = SqliteStore(path)
    first.create(queue("a"))
    first.create(pod("p"))
    first.update(queue("a", weight=3))
    first.delete("Pod", "default/p")
    history = [(e.resource_version, e.type, e.key) for e in first.watch(0)]
    first.close()
    with pytest.raises(StoreError, match="closed"):
        first.get("Queue", "a")
    again = SqliteStore(path)
    assert again.get("Queue", "a")["spec"]["weight"] == 3 and again.list("Pod")[0] == []
    assert again.current_version() == 4
    assert [(e.resource_version, e.type, e.key) for e in again.watch(0)] == history
    assert rv(again.create(queue("b"))) == 5
    again.close()


_CHILD = """
import json, sys
from lahar.store import SqliteStore
store = SqliteStore(sys.argv[1])
print("ready", flush=True)
seen = store.watch(int(sys.argv[2]), timeout=20.0)
store.create({"kind": "Queue", "metadata": {"name": "from-child"}, "spec": {}})
print(json.dumps([e.key for e in seen]), flush=True)
store.close()
"""


def test_sqlite_second_process_sees_and_watches_writes(tmp_path):
    """A tool or a second server on the same file: it sees our writes through watch, we its."""
    store = SqliteStore(tmp_path / "lahar.db")
    start = store.current_version()
    command = [sys.executable, "-c", _CHILD, str(tmp_path / "lahar.db"), str(start)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout.readline().strip() == "ready"
            store.create(queue("from-parent"))
            events = store.watch(start + 1, timeout=20.0)
            assert [(e.type, e.key) for e in events] == [("ADDED", "from-child")]
            assert json.loads(child.stdout.readline()) == ["from-parent"]
            assert child.wait(timeout=20) == 0
        finally:
            child.kill()
            store.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sqlite_refuses_a_file_that_is_not_a_database(tmp_path):
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"shopping list: flour, eggs\n" * 400)
    before = _digest(junk)
    with pytest.raises(StoreError, match=r"notes\.db.*not a database") as refused:
        SqliteStore(junk)
    assert refused.value.http_status == 500
    assert _digest(junk) == before


def test_sqlite_refuses_a_damaged_database(tmp_path):
    path = tmp_path / "lahar.db"
    store = SqliteStore(path)
    for i in range(300):
        store.create(pod(f"p{i:03}", note="x" * 200))
    store.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page : 6 * page] = os.urandom(4 * page)  # the first pages after the header page
    path.write_bytes(bytes(data))
    before = _digest(path)
    with pytest.raises(StoreError, match=r"lahar\.db.*(damaged|malformed)"):
        SqliteStore(path)
    assert _digest(path) == before


def test_sqlite_refuses_another_applications_database(tmp_path):
    other = tmp_path / "music.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE songs (title TEXT)")
    con.close()
    with pytest.raises(StoreError, match=r"music\.db.*not a Lahar database.*songs"):
        SqliteStore(other)


def test_sqlite_refuses_a_newer_schema(tmp_path):
    path = tmp_path / "lahar.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET schema_version = ?", (SCHEMA_VERSION + 1,))
    con.close()
    with pytest.raises(
        StoreError, match=rf"lahar\.db.*newer Lahar.*schema version {SCHEMA_VERSION + 1}"
    ):
        SqliteStore(path)


_SCHEMA_V1 = """
CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), schema_version INTEGER NOT NULL,
                   version INTEGER NOT NULL, compacted INTEGER NOT NULL);
CREATE TABLE objects (kind TEXT NOT NULL, key TEXT NOT NULL, namespace TEXT, labels TEXT,
                      rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, key));
CREATE TABLE events (rv INTEGER PRIMARY KEY, type TEXT NOT NULL, kind TEXT NOT NULL,
                     key TEXT NOT NULL, body TEXT NOT NULL);
"""  # the first SQLite store's tables (commit bda9715)


def test_sqlite_upgrades_a_version_1_database(tmp_path):
    """A database written by the first SQLite store (schema 1) opens with its data and history."""
    path = tmp_path / "lahar.db"
    body = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7"},
        "spec": {},
    }
    with sqlite3.connect(path) as con:
        con.executescript(_SCHEMA_V1 + "INSERT INTO meta VALUES (1, 1, 7, 5);")
        con.execute(
            "INSERT INTO objects VALUES ('Pod', 'ns/p', 'ns', '{}', 7, ?)", (json.dumps(body),)
        )
        for version in (6, 7):
            con.execute(
                "INSERT INTO events VALUES (?, 'MODIFIED', 'Pod', 'ns/p', ?)",
                (version, json.dumps(body)),
            )
    con.close()
    store = SqliteStore(path)
    assert store.get("Pod", "ns/p") == body and names(store.list("Pod", "ns")[0]) == ["p"]
    assert [e.resource_version for e in store.watch(5)] == [6, 7]
    with pytest.raises(StoreGone):
        store.watch(4)
    assert rv(store.create(pod("q", "ns"))) == 8
    store.close()
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT schema_version FROM meta").fetchone() == (SCHEMA_VERSION,)
        assert con.execute("SELECT name FROM objects ORDER BY key").fetchall() == [("p",), ("q",)]
    con.close()


def test_sqlite_locked_database_gives_a_clear_error_after_the_busy_timeout(tmp_path):
    """Another process holds a write transaction: opening and writing wait, then say why."""
    path = tmp_path / "lahar.db"
    store = SqliteStore(path, busy_timeout=0.2)
    store.create(queue("before"))  # the store's write connection is open (it keeps one)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        with pytest.raises(StoreError, match=r"lahar\.db.*cannot open.*locked.*0\.2 s"):
            SqliteStore(path, busy_timeout=0.2)
        assert time.monotonic() - began >= 0.15
        with pytest.raises(StoreError, match=r"lahar\.db.*cannot write.*locked"):
            store.create(queue("a"))
        assert [q["metadata"]["name"] for q in store.list("Queue")[0]] == ["before"]  # reads do not wait (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.create(queue("a"))["metadata"]["resourceVersion"] == "2"  # a failed write leaves the store writable
    store.close()


# --------------------------------------------------------------------------- open_store


def test_open_store_picks_the_backend(tmp_path, monkeypatch):
    assert isinstance(open_store("memory://"), MemoryStore)
    for url in (str(tmp_path / "x.db"), f"sqlite:///{tmp_path}/y.db"):
        opened = open_store(url)
        assert isinstance(opened, SqliteStore) and isinstance(opened, SqlStore)
        opened.close()
    assert (tmp_path / "x.db").exists() and (tmp_path / "y.db").exists()
    closed = _closed_port()
    for scheme in ("postgresql", "postgres"):
        with pytest.raises(StoreError, match="cannot open the database") as refused:
            open_store(f"{scheme}://lahar:s3cret@127.0.0.1:{closed}/lahar")
        assert refused.value.message.startswith(f"{scheme}://lahar@127.0.0.1:{closed}/lahar: ")
        assert "s3cret" not in refused.value.message
    with pytest.raises(StoreError, match="names no database"):
        open_store("postgresql://lahar@127.0.0.1")
    with pytest.raises(StoreError, match="unsupported PostgreSQL URL scheme.*psycopg 3"):
        open_store("postgresql+psycopg2://lahar@127.0.0.1/lahar")
    with pytest.raises(StoreError, match="unsupported database URL"):
        open_store("redis://nope")


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # free, and nobody listens on it once closed


def test_default_database_follows_lahar_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LAHAR_HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / "lahar.db"
    opened = open_store()
    assert (tmp_path / "home" / "lahar.db").exists()
    opened.close()
    monkeypatch.delenv("LAHAR_HOME")
    assert default_db_path() == Path.home() / ".lahar" / "lahar.db"
