"""The server's control loop in-process, without HTTP: where a submitted job's CPU goes.

    python bench/loop.py --jobs 3000
    python bench/loop.py --jobs 3000 --profile 2>profile.txt
    python bench/loop.py --jobs 6000 --save running.pkl   # then: bench/pair.py running.pkl --variants ...
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT python bench/loop.py --jobs 1500 --callgrind

Builds an ``ApiService`` over a fresh SQLite file in a temporary folder and a ``ControlLoop`` on
a virtual clock, enough nodes for every pod, then submits one-pod vcjobs through the service
(admission, store, audit: what a request does after HTTP) in rounds of ``--per-tick`` with one
tick of the loop after each round, until every pod is bound. Prints one JSON line: CPU
milliseconds per job spent in submits and in ticks (and how much of the ticks' CPU the
scheduling cycles took: the part that grows with the jobs already running, as each tick's
cycle looks at all of them), store writes per job, how many pods were
bound, and the CPU of a tick with nothing new once all are running (median of 5): as the
server runs it (``quiet_tick_cpu_ms``: the cycle is not run again when nothing changed since one
that decided nothing) and running its cycle (``idle_tick_cpu_ms``: the part of every busy tick
that grows with the cluster), with that cycle in its three parts (open the session, the actions,
close it). Unlike ``api.py`` nothing else shares the process, so the figures move little
between runs: the one to compare before and after a change to the loop or the store.
"""

from __future__ import annotations

import json
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

from callgrind import instruments
from options import count, new_file, parser as bench_parser
from lahar.scheduler.actions import ACTIONS
from lahar.scheduler.cycle import close_session, open_session
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.heap import HeapCollector
from lahar.server.loop import ControlLoop
from lahar.server.service import ApiService
from lahar.store import open_store

NODE_PODS = 110


def job(name: str) -> dict:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [container]}}}]},
    }


class CycleTimedLoop(ControlLoop):
    """The server's loop, counting the CPU seconds its scheduling cycles take (``cycle_cpu``)."""

    cycle_cpu = 0.0

    def _run_cycle(self, now: float):
        started = time.process_time()
        try:
            return super()._run_cycle(now)
        finally:
            self.cycle_cpu += time.process_time() - started


def service_with_nodes(folder: Path, jobs: int) -> ApiService:
    """An ``ApiService`` over a fresh SQLite file in ``folder``, with nodes enough for ``jobs``
    one-pod jobs (``NODE_PODS`` a node)."""
    service = ApiService(open_store(f"sqlite:///{folder / 'lahar.db'}"))
    for n in range(jobs // NODE_PODS + 1):
        allocatable = {"cpu": str(NODE_PODS), "memory": "440Gi", "pods": str(NODE_PODS)}
        service.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}, "status": {"allocatable": allocatable}})
    return service


def run(jobs: int, per_tick: int, folder: Path, plain_gc: bool = False, save: str | None = None, callgrind: bool = False) -> dict:
    service = service_with_nodes(folder, jobs)
    store = service.store
    heap = None if plain_gc else HeapCollector()  # as ``lahar server`` runs its loop
    loop = CycleTimedLoop(service, load_config(default_config_text()), 1.0, clock=iter(range(10, 10**9)).__next__, heap=heap)
    first = store.current_version()
    submit = tick = 0.0
    for start in range(0, jobs, per_tick):
        c0 = time.process_time()
        for k in range(start, min(start + per_tick, jobs)):
            service.create(job(f"job-{k}"))
        c1 = time.process_time()
        if callgrind:
            instruments("on")
        loop.tick()
        if callgrind:
            instruments("off")
        submit, tick = submit + c1 - c0, tick + time.process_time() - c1
    cycles = loop.cycle_cpu  # the cycles of the ticks counted in ``tick``
    loop.tick()
    writes = store.current_version() - first
    loop.tick()  # the podgroups' last phases are written; from the next tick on nothing changes
    quiet = _tick_times(loop, 5)  # nothing new: the cycle is not run again
    loop.skip_quiet_cycles = False
    idle = _tick_times(loop, 5)  # the same ticks running their cycle: what it costs for the jobs already running
    parts = session_parts(loop)
    if save:  # the cluster with every job running, for bench/pair.py
        sys.setrecursionlimit(100_000)  # pickling the cluster's object graph goes deep
        with open(save, "wb") as out:
            pickle.dump((loop.world.cache, loop.conf), out, protocol=pickle.HIGHEST_PROTOCOL)
    bound = sum(1 for pod in store.list("Pod")[0] if pod["spec"].get("nodeName"))
    store.close()
    return {
        "bench": "loop",
        "jobs": jobs,
        "per_tick": per_tick,
        "pods_bound": bound,
        "submit_cpu_ms_per_job": round(1000 * submit / jobs, 3),
        "tick_cpu_ms_per_job": round(1000 * tick / jobs, 3),
        "cycle_cpu_ms_per_job": round(1000 * cycles / jobs, 3),
        "store_writes_per_job": round(writes / jobs, 2),
        "idle_tick_cpu_ms": round(1000 * statistics.median(idle), 1),
        "quiet_tick_cpu_ms": round(1000 * statistics.median(quiet), 1),
        **parts,
        "gc": "python" if plain_gc else "heap-collector",
    }


def _tick_times(loop: ControlLoop, ticks: int) -> list[float]:
    times = []
    for _ in range(ticks):
        c0 = time.process_time()
        loop.tick()
        times.append(time.process_time() - c0)
    return times


def session_parts(loop: ControlLoop, sessions: int = 5) -> dict:
    """The idle tick's scheduling cycle in its three parts, CPU ms, medians of ``sessions``
    cycles over the loop's cluster (nothing applied: each starts from the same state)."""
    times: dict[str, list[float]] = {"open": [], "actions": [], "close": []}
    for n in range(sessions):
        c0 = time.process_time()
        ssn = open_session(loop.world.cache, loop.conf, 10**8, uid=f"bench-{n}")
        c1 = time.process_time()
        for action in loop.conf.actions:
            ACTIONS[action](ssn)
        c2 = time.process_time()
        close_session(ssn)
        c3 = time.process_time()
        for part, seconds in zip(times, (c1 - c0, c2 - c1, c3 - c2)):
            times[part].append(seconds)
    return {f"idle_cycle_{part}_cpu_ms": round(1000 * statistics.median(v), 1) for part, v in times.items()}


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--jobs", type=count(1), default=3000, help="one-pod vcjobs to submit (default: %(default)s)")
    parser.add_argument("--per-tick", type=count(1), default=150, help="jobs submitted between two ticks (default: %(default)s)")
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile on stderr")
    parser.add_argument("--plain-gc", action="store_true", help="Python's own garbage collection instead of the server's HeapCollector")
    parser.add_argument("--save", type=new_file, metavar="FILE", help="pickle the cluster (every job running) to FILE for bench/pair.py")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind --tool=callgrind --instr-atstart=no: the instruments on around the busy ticks only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.002)
            profiler.start()
        result = run(args.jobs, args.per_tick, Path(folder), args.plain_gc, args.save, args.callgrind)
        if args.profile:
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False), file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
