"""An A/B of two versions of some scheduler functions, in one process, over the same replay cycles.

    python bench/pair.py backlog.pkl --cycles 200                          # A/A: the harness's own noise
    python bench/pair.py backlog.pkl --cycles 200 --variants my_variants   # old against new
    python bench/pair.py running.pkl --cycles 30 --variants my_variants    # a cluster saved by loop.py --save

On a shared machine whole runs move by 10 to 30% from one minute to the next, more than most
changes worth making. Here both versions run in the same process at the same time: two copies of
a replay saved by ``checkpoint.py save`` are stepped in lockstep, one cycle of each copy per
step, the old functions on one copy and the new on the other. Both versions must decide the same
(check with ``checkpoint.py run``: same digest), so a copy may run either version: the versions
trade copies every cycle and take turns going first, which cancels what one copy costs more than
the other (measured: 13% between the first and the second copy loaded).

A file saved by ``bench/loop.py --save`` holds a cluster instead (the control loop's, every job
running): the same cycle is then run on it ``--cycles`` times per version, alternately and taking
turns going first (nothing is applied, so every cycle meets the same cluster), and the medians
of the two versions' CPU per cycle are printed with their ratio. That is the part of every busy
server tick that grows with the running jobs.

It replaces functions, so it needs the core as plain Python (an editable install, or
``LAHAR_PURE_PYTHON=1 pip install .``): compiled, the core calls its own functions directly.

``--variants MODULE`` names an importable module (``PYTHONPATH``) defining ``OLD`` and ``NEW``,
two tuples of functions, and ``use(functions)``, which installs one tuple (assigns class
attributes or module globals). Without it both sides run the code as it is: the ratio printed is
then the harness's own noise (0.99 to 1.01 here). Prints one JSON line: CPU seconds per version
over the same cycles, and their ratio. A variants module, for a change to ``Session.allocatable``::

    from lahar.scheduler.framework.session import Session

    def old_allocatable(self, queue, task):
        return all(fn(queue, task) for _, _, fn in self._enabled("allocatable"))

    OLD, NEW = (old_allocatable,), (Session.allocatable,)

    def use(functions):
        (Session.allocatable,) = functions
"""

from __future__ import annotations

import gc
import importlib
import json
import pickle
import statistics
import sys
import time
from types import SimpleNamespace

import lahar.scheduler.api
from lahar.scheduler.cache import ClusterState
from options import count, existing_file, parser as bench_parser
from lahar.scheduler.cycle import paused_gc, run_cycle

sys.setrecursionlimit(100_000)  # unpickling the cluster's object graph goes deep


def _same_code() -> SimpleNamespace:
    return SimpleNamespace(OLD=(), NEW=(), use=lambda functions: None)


def pair(path: str, cycles: int, variants: SimpleNamespace) -> dict:
    copies = []
    for _ in range(2):
        with open(path, "rb") as source:
            copies.append(pickle.load(source))
    cpu = {"old": 0.0, "new": 0.0}
    with paused_gc():
        for step in range(cycles):
            sides = (("old", 0), ("new", 1)) if step % 2 == 0 else (("old", 1), ("new", 0))
            for version, copy in sides if (step // 2) % 2 == 0 else sides[::-1]:
                variants.use(variants.OLD if version == "old" else variants.NEW)
                sim, position = copies[copy]
                started = time.process_time()
                record = sim.step(position.now)
                position.advance(sim, record)
                cpu[version] += time.process_time() - started
            if step % 64 == 63:
                gc.collect(1)
    variants.use(variants.NEW)
    same = copies[0][1].now == copies[1][1].now and copies[0][0].cycle_count == copies[1][0].cycle_count
    return {
        "bench": "pair",
        "cycles": cycles,
        "old_cpu_seconds": round(cpu["old"], 4),
        "new_cpu_seconds": round(cpu["new"], 4),
        "ratio_new_to_old": round(cpu["new"] / cpu["old"], 3) if cpu["old"] else None,
        "copies_in_step": same,
    }


def pair_cluster(saved: tuple, cycles: int, variants: SimpleNamespace) -> dict:
    """The same cycle on one saved cluster, old and new alternately: medians of CPU ms."""
    state, conf = saved
    times: dict[str, list[float]] = {"old": [], "new": []}
    with paused_gc():
        for step in range(cycles):
            for version in ("old", "new") if step % 2 == 0 else ("new", "old"):
                variants.use(variants.OLD if version == "old" else variants.NEW)
                started = time.process_time()
                run_cycle(state, conf, 0.0, uid=f"pair-{step}")
                times[version].append(time.process_time() - started)
            if step % 8 == 7:
                gc.collect(1)
    variants.use(variants.NEW)
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    return {
        "bench": "pair-cluster",
        "cycles": cycles,
        "jobs": len(state.jobs),
        "old_cycle_cpu_ms": round(1000 * old, 2),
        "new_cycle_cpu_ms": round(1000 * new, 2),
        "ratio_new_to_old": round(new / old, 3) if old else None,
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("file", type=existing_file, help="a replay saved by checkpoint.py save, or a cluster saved by loop.py --save")
    parser.add_argument("--cycles", type=count(1), default=200, help="cycles each side runs (default: %(default)s)")
    parser.add_argument("--variants", default=None, help="module defining OLD, NEW and use(functions) (default: the code as it is, on both sides)")
    args = parser.parse_args()
    try:
        variants = _same_code() if args.variants is None else importlib.import_module(args.variants)
    except ImportError as exc:
        sys.exit(f"--variants {args.variants}: cannot import it ({exc}); put its folder on PYTHONPATH")
    for name in ("OLD", "NEW", "use"):
        if not hasattr(variants, name):
            sys.exit(f"--variants {args.variants}: the module defines no {name}")
    if args.variants is not None and not lahar.scheduler.api.__file__.endswith(".py"):
        sys.exit("--variants replaces functions inside the scheduling core, which is compiled here and calls its own "
                 "functions directly: run pair.py on a plain-Python install (pip install -e ., or LAHAR_PURE_PYTHON=1 pip install .)")
    with open(args.file, "rb") as source:
        saved = pickle.load(source)
    if isinstance(saved, tuple) and saved and isinstance(saved[0], ClusterState):
        print(json.dumps(pair_cluster(saved, max(args.cycles, 1), variants)))
    else:
        print(json.dumps(pair(args.file, max(args.cycles, 1), variants)))


if __name__ == "__main__":
    main()
