"""One full scheduling cycle at scale, from a cold snapshot.

    python bench/cycle.py --nodes 5000 --pods 50000 --queues 100
    python bench/cycle.py --nodes 5000 --pods 1000 --running 50000 --reclaim

Prints one JSON line: pods placed per second, cycle seconds (wall and CPU: on a busy machine
the CPU figure is the one to compare), peak RSS, ``evicted`` (the victims, with --reclaim), and
a digest of every decision (type, task, node, in order): two versions that decide alike print
the same digest.

Exact instruction counts of the cycle alone, to compare two versions on a noisy machine:

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT python bench/cycle.py --callgrind
"""

from __future__ import annotations

import gc
import hashlib
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from callgrind import instruments  # noqa: E402
from options import count, names, parser as bench_parser  # noqa: E402
from synth import Shape, cluster  # noqa: E402

from lahar.scheduler.actions import ACTIONS  # noqa: E402
from lahar.scheduler.cache import ClusterState  # noqa: E402
from lahar.scheduler.cycle import run_cycle  # noqa: E402
from lahar.scheduler.framework.config import default_config_text, load_config  # noqa: E402


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--nodes", type=count(1), default=5000, help="nodes: every fifth an 8-GPU node, the others CPU nodes (default: %(default)s)")
    parser.add_argument("--pods", type=count(0), default=50000, help="pending pods: gang jobs of 1 to 64 tasks over every queue; with --running, one-task jobs of 6.4 CPU in the last queue (default: %(default)s)")
    parser.add_argument("--queues", type=count(1), default=100, help="queues the jobs go to (leaf queues with --hierarchy) (default: %(default)s)")
    parser.add_argument("--running", type=count(0), default=0, help="pods running before the cycle, in gangs of 4 filling every node's CPU (a whole number a node, at least one), in every queue but the last (default: %(default)s)")
    parser.add_argument("--reclaim", action="store_true", help="run enqueue, allocate, reclaim instead of --actions (with --running: the reclaim target's cycle)")
    parser.add_argument("--hierarchy", action="store_true", help="queues in a 3-level tree (organisations, teams, queues) instead of flat")
    parser.add_argument("--actions", type=names(sorted(ACTIONS), "action"), default="enqueue, allocate, backfill", help="the cycle's actions, in order, comma-separated (without --reclaim) (default: %(default)s)")
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile of the cycle on stderr")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind --tool=callgrind --instr-atstart=no: the instruments on around the cycle only")
    args = parser.parse_args()
    if args.running and not args.hierarchy and args.queues < 2:
        parser.error("argument --queues: must be at least 2 with --running (the last queue's jobs wait for the others' room)")
    shape = Shape(nodes=args.nodes, pods=args.pods, queues=args.queues, running=args.running, hierarchy=args.hierarchy)
    t0 = time.perf_counter()
    objects = cluster(shape)
    state = ClusterState.from_objects(objects)
    build = time.perf_counter() - t0
    conf = load_config(default_config_text())
    conf.actions = ["enqueue", "allocate", "reclaim"] if args.reclaim else list(args.actions)
    gc.collect()
    gc.freeze()  # what a long-running server does once its state is loaded
    if args.callgrind:
        instruments("on")
    t1, c1 = time.perf_counter(), time.process_time()
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler()
        profiler.start()
    result = run_cycle(state, conf)
    seconds, cpu = time.perf_counter() - t1, time.process_time() - c1
    if args.callgrind:
        instruments("off")
    if args.profile:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
    placed = sum(1 for d in result.decisions if d.type in ("bind", "pipeline"))
    print(
        json.dumps(
            {
                "bench": "cycle",
                "nodes": args.nodes,
                "pending_pods": args.pods,
                "queues": args.queues,
                "placed": placed,
                "evicted": sum(1 for d in result.decisions if d.type == "evict"),
                "cycle_seconds": round(seconds, 3),
                "pods_per_second": round(placed / seconds, 1) if seconds else None,
                "cycle_cpu_seconds": round(cpu, 3),
                "pods_per_cpu_second": round(placed / cpu, 1) if cpu else None,
                "build_seconds": round(build, 3),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "decisions_digest": hashlib.sha256(repr([(d.type, d.task, d.node) for d in result.decisions]).encode()).hexdigest()[:16],
            }
        )
    )


if __name__ == "__main__":
    main()
