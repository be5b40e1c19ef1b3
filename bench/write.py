"""One write of the server's control loop against the store's part of it: what leaner writes could save.

    python bench/write.py
    python bench/write.py --podgroups 2000 --rounds 7

Builds a server's control loop over a fresh SQLite file (in-process, as ``loop.py`` does), binds
``--podgroups`` one-pod vcjobs, then writes the status the loop writes after a cycle back and
forth, for each of two kinds: each job's podgroup (its phase ``Inqueue``, then ``Running``) and
each vcjob (its phase ``Pending``, then ``Running``, as its podgroup's moves), in one store
transaction a round, three ways:

- ``loop``: as the loop writes it (``_podgroup_status`` and ``_job_status`` of the server's
  world): model copies of the object and its status, its dump, the store's update at the
  version the world holds, the version stamped on the world's copy, and the written object
  taken back into the world, the scheduler's cache and admission's view;
- ``store``: the store's ``update`` alone, of the very documents the loop wrote last (read
  beforehand, off the clock), at their versions;
- ``document``: the same change made on the stored document (its ``status`` replaced in a
  copy of the dict), then the same ``update``: no model, no dump, nothing taken back in.

Prints one JSON line: for each kind, CPU microseconds per write each way, medians of
``--rounds`` (each round writes every object twice each way), and the loop's share that is not
the store's. The world is brought back in step with the store after the ``document`` writes
(``sync``, off the clock), so every round's ``loop`` writes are made as the loop makes them.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from lahar.scheduler.cycle import JobOutcome
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.loop import ControlLoop
from loop import job, service_with_nodes
from options import count, parser as bench_parser

PHASES = ("Inqueue", "Running")  # the podgroup's; the vcjob's follow (Pending, Running)
KINDS = {"podgroup": "PodGroup", "vcjob": "Job"}


def bound_loop(folder: Path, podgroups: int) -> ControlLoop:
    """A control loop over a fresh SQLite file with ``podgroups`` one-pod vcjobs, every one bound."""
    service = service_with_nodes(folder, podgroups)
    loop = ControlLoop(service, load_config(default_config_text()), 1.0, clock=iter(range(10, 10**9)).__next__)
    for k in range(podgroups):
        service.create(job(f"job-{k}"))
    for _ in range(3):  # podgroups and pods made, bound, then Running
        loop.tick()
    return loop


def loop_writes(loop: ControlLoop, keys: list[str], phase: str, kind: str = "podgroup") -> float:
    """CPU seconds of the loop's own status writes of ``kind`` (the podgroups' or the vcjobs'
    for a podgroup ``phase``), one transaction."""
    world, service = loop.world, loop.service
    write, table = (world._podgroup_status, world.podgroups) if kind == "podgroup" else (world._job_status, world.jobs)
    started = time.process_time()
    with service.lock, service.store.batch():
        for key in keys:
            write(key, table[key], JobOutcome(phase, "default", [], None, 1, 0, 0))
    return time.process_time() - started


def store_writes(loop: ControlLoop, documents: list[dict]) -> float:
    """CPU seconds of the store's ``update`` alone of ``documents``, at their versions."""
    store = loop.service.store
    started = time.process_time()
    with loop.service.lock, store.batch():
        for document in documents:
            store.update(document, owned=True)
    return time.process_time() - started


def document_writes(loop: ControlLoop, documents: list[dict], phase: str, kind: str = "podgroup") -> float:
    """CPU seconds of the phase changed on each stored document (a podgroup's ``phase``, or the
    vcjob's that follows it), then its ``update``."""
    store = loop.service.store
    status = {"phase": phase} if kind == "podgroup" else {"state": {"phase": "Pending" if phase == "Inqueue" else phase}}
    started = time.process_time()
    with loop.service.lock, store.batch():
        for document in documents:
            changed = {**document, "metadata": dict(document["metadata"]), "status": {**document.get("status", {}), **status}}
            store.update(changed, owned=True)
    return time.process_time() - started


def run(podgroups: int, rounds: int, folder: Path) -> dict:
    loop = bound_loop(folder, podgroups)
    keys = sorted(loop.world.podgroups)
    assert len(keys) == podgroups and set(keys) == set(loop.world.jobs), "every vcjob has its podgroup"
    figures = {}
    for kind in KINDS:
        medians = _medians(loop, keys, kind, rounds)
        figures.update({f"{kind}_{way}_us_per_write": round(us, 1) for way, us in medians.items()})
        figures[f"{kind}_loop_share_outside_store"] = round(1 - medians["store"] / medians["loop"], 3)
    loop.service.store.close()
    return {"bench": "write", "podgroups": podgroups, "rounds": rounds, **figures}


def _medians(loop: ControlLoop, keys: list[str], kind: str, rounds: int) -> dict[str, float]:
    """Microseconds per write of ``kind`` each way, medians of ``rounds``."""
    store, stored = loop.service.store, KINDS[kind]
    spent: dict[str, list[float]] = {"loop": [], "store": [], "document": []}
    for _ in range(rounds):
        spent["loop"].append(sum(loop_writes(loop, keys, phase, kind) for phase in PHASES) / (2 * len(keys)))
        two = store_writes(loop, [store.get(stored, key) for key in keys]) + store_writes(loop, [store.get(stored, key) for key in keys])
        spent["store"].append(two / (2 * len(keys)))
        spent["document"].append(sum(document_writes(loop, [store.get(stored, key) for key in keys], phase, kind) for phase in PHASES) / (2 * len(keys)))
        loop.world.sync()  # the world in step with the store again (off the clock)
    return {way: 1e6 * statistics.median(seconds) for way, seconds in spent.items()}


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--podgroups", type=count(1), default=1000, help="one-pod vcjobs bound before the writes: each one's podgroup and vcjob are written (default: %(default)s)")
    parser.add_argument("--rounds", type=count(1), default=5, help="rounds; the figures are their medians (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(run(args.podgroups, args.rounds, Path(folder))))


if __name__ == "__main__":
    main()
