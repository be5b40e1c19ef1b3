"""The store alone: CPU per write, each in its own transaction, and per write inside one batch.

    python bench/store.py
    python bench/store.py --db postgresql://user@host/lahar

Opens a fresh SQLite file in a temporary folder (or the given ``--db`` URL) and creates small
objects: ``--writes`` of them one transaction each (what an API request does), then as many in
one batch (what a tick of the control loop does); then deletes as many inside one batch, one
``delete`` each, and as many again in one ``delete_many`` (what the event log's retention does
every second: hundreds at a time on a busy server). Prints one JSON line: CPU microseconds per
write for each, medians of ``--rounds``. CPU time, not wall time: the disk's sync is not in it,
so the figure is the Python and driver work a change to the store can move.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import uuid

from lahar.store import open_store
from options import count, parser as bench_parser


def config_map(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"a": "b"}}


def per_write(store, writes: int, batched: bool) -> float:
    prefix = uuid.uuid4().hex[:8]
    started = time.process_time()
    if batched:
        with store.batch():
            for i in range(writes):
                store.create(config_map(f"{prefix}-{i}"))
    else:
        for i in range(writes):
            store.create(config_map(f"{prefix}-{i}"))
    return 1e6 * (time.process_time() - started) / writes


def per_delete(store, writes: int, many: bool) -> float:
    """CPU microseconds per deletion of ``writes`` objects inside one batch (made beforehand,
    off the clock): each by ``delete``, or all by one ``delete_many``."""
    prefix = uuid.uuid4().hex[:8]
    with store.batch():
        keys = [f"default/{store.create(config_map(f'{prefix}-{i}'))['metadata']['name']}" for i in range(writes)]
    started = time.process_time()
    with store.batch():
        if many:
            store.delete_many("ConfigMap", keys)
        else:
            for key in keys:
                store.delete("ConfigMap", key)
    return 1e6 * (time.process_time() - started) / writes


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--db", default=None, help="store URL (default: a fresh SQLite file in a temporary folder)")
    parser.add_argument("--writes", type=count(1), default=2000, help="objects each way a round: created one transaction each, created in one batch, deleted one by one in a batch, deleted by delete_many (default: %(default)s)")
    parser.add_argument("--rounds", type=count(1), default=5, help="rounds; the figures are their medians (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lahar-bench-") as tmp:
        store = open_store(args.db or f"sqlite:///{tmp}/lahar.db")
        try:
            alone = [per_write(store, args.writes, False) for _ in range(args.rounds)]
            batched = [per_write(store, args.writes, True) for _ in range(args.rounds)]
            deletes = [per_delete(store, args.writes, False) for _ in range(args.rounds)]
            many = [per_delete(store, args.writes, True) for _ in range(args.rounds)]
        finally:
            store.close()
    print(
        json.dumps(
            {
                "bench": "store",
                "store": "sqlite" if args.db is None else args.db.split(":", 1)[0],
                "writes": args.writes,
                "rounds": args.rounds,
                "cpu_us_per_write_alone": round(statistics.median(alone), 1),
                "cpu_us_per_write_in_a_batch": round(statistics.median(batched), 1),
                "cpu_us_per_delete_in_a_batch": round(statistics.median(deletes), 1),
                "cpu_us_per_delete_by_delete_many": round(statistics.median(many), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
