"""Replay a real trace through the discrete-event simulator, as ``lahar simulate --trace`` does.

    python bench/trace.py philly                      # all 82,247 jobs
    python bench/trace.py philly --limit-jobs 5000
    python bench/trace.py philly --profile 2>profile.txt
    python bench/trace.py philly --limit-jobs 5000 --whole-trace-cluster
    python bench/trace.py philly --profile-cycles 21700:21800 2>profile.txt   # a deep backlog
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT python bench/trace.py philly --limit-jobs 1000 --callgrind

The trace is found under ``--traces DIR``, else ``$LAHAR_TRACES``, else ``../shared/traces``
next to the repository (``philly-derived/philly.csv``). The run is the same as
``lahar simulate --trace philly:PATH``: the default cluster sized from the jobs, one queue per
virtual cluster, the default scheduler configuration and the replay that jumps between events
(``lahar.sim.compare.replay``). ``--whole-trace-cluster`` keeps the cluster of the full run while
replaying only the first jobs: the first 5,000 already build the backlog of waiting jobs that
makes the full replay's cycles slow, in minutes rather than hours. ``--profile-cycles A:B``
profiles only cycles A to B (with the jobs waiting at A on stderr) and ends the replay there.
``--callgrind`` (under ``valgrind --tool=callgrind --instr-atstart=no``) turns the instruments on
around the replay only, leaving out loading the trace. Prints one JSON line: simulated jobs per
wall second, total seconds (loading included), replay seconds, cycles, the metrics' headline
figures and ``metrics_digest``, a digest of every metric (each job's times, the queues' figures
and the series): two versions that replay alike print the same.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

from callgrind import instruments
from options import count, parser as bench_parser, window
from lahar.scheduler.api import TaskStatus
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay
from lahar.sim.engine import Simulation
from lahar.sim.metrics import MetricsCollector
from lahar.sim.traces import build_workload

_FILES = {"philly": "philly-derived/philly.csv"}


def trace_path(kind: str, traces: str | None) -> Path:
    root = Path(traces or os.environ.get("LAHAR_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
    path = root / _FILES[kind]
    if not path.exists():
        sys.exit(f"{path}: no such file (give --traces DIR or set LAHAR_TRACES)")
    return path


def _progress(every: int, arrivals: list[float]):
    start = time.process_time()

    def report(sim: Simulation, record) -> None:
        if sim.cycle_count % every == 0:
            arrived = bisect.bisect_right(arrivals, sim.now)
            line = {"cycles": sim.cycle_count, "sim_seconds": round(sim.now), "jobs_arrived": arrived, "cpu_seconds": round(time.process_time() - start, 1)}
            print(json.dumps(line), file=sys.stderr, flush=True)

    return report


class _Window:
    """An observer that profiles cycles ``first`` to ``last`` and then ends the replay."""

    class Done(Exception):
        pass

    def __init__(self, cycles: tuple[int, int]) -> None:
        self.first, self.last = cycles  # 0 < first < last (``options.window``)
        self.profiler = None

    def __call__(self, sim: Simulation, record) -> None:
        if sim.cycle_count == self.first:
            from pyinstrument import Profiler

            waiting = sum(1 for job in sim.world.cache.jobs.values() if job.tasks_in(TaskStatus.PENDING))
            print(json.dumps({"cycle": self.first, "jobs": len(sim.world.cache.jobs), "waiting": waiting}), file=sys.stderr, flush=True)
            self.profiler = Profiler(interval=0.002)
            self.profiler.start()
        elif sim.cycle_count == self.last and self.profiler is not None:
            self.profiler.stop()
            print(self.profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
            raise _Window.Done


class _Lookalikes:
    """Counts the cycles that hid look-alike jobs and those whose try ran the cycle again."""

    def __init__(self) -> None:
        self.hid = self.ran_again = 0

    def __call__(self, sim: Simulation, record) -> None:
        self.hid += bool(record.result.lookalikes_hidden)
        self.ran_again += bool(record.result.lookalikes_ran_again)


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("kind", choices=sorted(_FILES), help="the trace to replay")
    parser.add_argument("--limit-jobs", type=count(1), default=None, metavar="N", help="replay the first N jobs only (default: every job)")
    parser.add_argument("--traces", default=None, help="the traces folder (default: $LAHAR_TRACES or ../shared/traces)")
    parser.add_argument(
        "--whole-trace-cluster",
        action="store_true",
        help="with --limit-jobs: run on the cluster sized for the whole trace (the backlog the full replay meets), not one sized for the jobs kept",
    )
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile of the replay on stderr")
    parser.add_argument("--progress", type=count(0), default=0, metavar="N", help="every N cycles, a line on stderr: cycles, simulated time, jobs arrived, CPU so far; 0: none (default: %(default)s)")
    parser.add_argument("--profile-cycles", type=window, default=None, metavar="A:B", help="pyinstrument profile of cycles A to B only, on stderr; the replay ends at B")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind --tool=callgrind --instr-atstart=no: the instruments on around the replay only")
    args = parser.parse_args()
    path = trace_path(args.kind, args.traces)
    t0 = time.perf_counter()
    workload = build_workload(f"{args.kind}:{path}", limit=args.limit_jobs)
    if args.whole_trace_cluster:
        workload.nodes = build_workload(f"{args.kind}:{path}").nodes
    objects, _ = workload.objects(None)
    collector = MetricsCollector()
    lookalikes = _Lookalikes()
    observers = [collector, lookalikes, _progress(args.progress, sorted(j.arrival for j in workload.jobs))] if args.progress else [collector, lookalikes]
    if args.profile_cycles:
        observers.append(_Window(args.profile_cycles))
    sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=observers)
    sim.keep_cycles = False
    t1, c1 = time.perf_counter(), time.process_time()
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.005)
        profiler.start()
    if args.callgrind:
        instruments("on")
    try:
        replay(sim, objects, Clock(1.0, None, None))
    except _Window.Done:
        pass
    if args.callgrind:
        instruments("off")
    t2, c2 = time.perf_counter(), time.process_time()
    if args.profile:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
    result = collector.result(sim)
    total = time.perf_counter() - t0
    summary = result["summary"]
    print(
        json.dumps(
            {
                "bench": "trace",
                "trace": args.kind,
                "jobs": len(workload.jobs),
                "nodes": len(workload.nodes),
                "cycles": sim.cycle_count,
                "sim_seconds": round(sim.now, 1),
                "jobs_per_second": round(len(workload.jobs) / total, 1),
                "total_seconds": round(total, 2),
                "load_seconds": round(t1 - t0, 2),
                "replay_seconds": round(t2 - t1, 2),
                "replay_cpu_seconds": round(c2 - c1, 2),
                "ms_per_cycle": round(1000 * (t2 - t1) / max(sim.cycle_count, 1), 2),
                "cycles_hiding_lookalikes": lookalikes.hid,
                "cycles_run_again": lookalikes.ran_again,
                "wait_p50": summary.get("wait_p50"),
                "wait_mean": summary.get("wait_mean"),
                "never_started": summary.get("never_started"),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "metrics_digest": hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()[:16],
            }
        )
    )


if __name__ == "__main__":
    main()
