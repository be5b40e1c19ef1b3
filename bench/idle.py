"""The cycle a busy server runs for the jobs already running, over a cluster saved by ``loop.py --save``.

    python bench/loop.py --jobs 8000 --per-tick 50 --save running.pkl
    python bench/idle.py running.pkl --cycles 15
    PYTHONHASHSEED=0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT python bench/idle.py running.pkl --cycles 5 --callgrind

Loads the cluster (every job running, nothing waiting), runs 3 cycles off the clock, then
``--cycles`` more, each given the last one's outcomes as ``previous`` as the server's loop gives
them. Nothing is applied between cycles, so each meets the same cluster: the part of every busy
tick that grows with the running jobs (``loop.py``'s ``idle_tick_cpu_ms`` runs it without
``previous``). Prints one JSON line: the median CPU milliseconds of a cycle, the jobs, and a
digest of the last cycle's outcomes (the same digest = the same outcomes).

Texts a live server holds interned are interned again after loading (an unpickled text is a new
object, and every pass would then compare the text where it told the same object at once): the
jobs' podgroup phases, the phases their parts were worked out at, and the queue names (those of
the jobs and of the queues) where the code measured interns them (as ``JobInfo`` and
``QueueInfo`` do when made).
``--callgrind``: under valgrind's callgrind with ``--instr-atstart=no``, the instruments on around
the measured cycles only (exact instruction counts, the same run after run).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import statistics
import sys
import time

from callgrind import instruments
from options import count, existing_file, parser as bench_parser
from lahar.scheduler.api import JobInfo
from lahar.scheduler.cycle import run_cycle


def interns_queue_names() -> bool:
    """Whether the code measured interns a job's queue name when it makes the job (two equal
    names made apart give one object back)."""
    first, second = "".join(["queue-", "probe"]), "".join(["queue-", "probe"])
    return JobInfo("p/a", "a", "p", first).queue is JobInfo("p/b", "b", "p", second).queue


def intern_texts(cache) -> None:
    """Phases interned, and queue names where the code measured interns them, as a live
    server's objects hold them (see the module)."""
    queues = interns_queue_names()
    if queues:
        for queue in cache.queues.values():
            queue.uid = queue.name = sys.intern(queue.name)
    for job in cache.jobs.values():
        for held in (job, job.twin):
            if held is None:
                continue
            held.phase = sys.intern(held.phase)
            if queues:
                held.queue = sys.intern(held.queue)
            if isinstance(held.part_phase, str):
                held.part_phase = sys.intern(held.part_phase)


def digest(outcomes: dict) -> str:
    listed = sorted((uid, o.phase, json.dumps(o.reason, sort_keys=True), len(o.conditions), o.running) for uid, o in outcomes.items())
    return hashlib.sha256(repr(listed).encode()).hexdigest()[:16]


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("cluster", type=existing_file, help="a file saved by bench/loop.py --save")
    parser.add_argument("--cycles", type=count(1), default=15, help="cycles measured, after 3 off the clock (default: %(default)s)")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind --tool=callgrind --instr-atstart=no: the instruments on around the measured cycles only")
    args = parser.parse_args()
    sys.setrecursionlimit(100_000)  # the cluster's object graph goes deep
    with open(args.cluster, "rb") as saved:
        cache, conf = pickle.load(saved)
    intern_texts(cache)
    previous = None
    for k in range(3):
        previous = run_cycle(cache, conf, 10**8 + k, uid=f"warm-{k}", previous=previous).jobs
    if args.callgrind:
        instruments("on")
    times = []
    for k in range(args.cycles):
        started = time.process_time()
        result = run_cycle(cache, conf, 10**8 + 10 + k, uid=f"cycle-{k}", previous=previous)
        times.append(time.process_time() - started)
        previous = result.jobs
    if args.callgrind:
        instruments("off")
    print(json.dumps({"bench": "idle", "cycles": args.cycles, "jobs": len(result.jobs), "cycle_cpu_ms": round(1000 * statistics.median(times), 2), "digest": digest(result.jobs)}))


if __name__ == "__main__":
    main()
