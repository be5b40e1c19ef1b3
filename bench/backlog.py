"""The server's control loop with a backlog: what each tick writes and costs while jobs wait.

    python bench/backlog.py                        # 2 queues, 1,000 jobs each, 30 ticks
    python bench/backlog.py --jobs 3000 --ticks 60
    python bench/backlog.py --moving-demand        # and a third queue whose demand comes and goes

Builds an ``ApiService`` over a fresh SQLite file in a temporary folder and a ``ControlLoop`` on
a virtual clock (one second per tick), four nodes of 64 CPUs and two queues (weights 1 and 3).
Submits ``--jobs`` one-pod vcjobs to each queue at once (1 to 3 CPUs, running 3 to 9 seconds),
far more than fit, then runs ``--ticks`` ticks: every tick some jobs end, others start, and the
rest wait with a pending reason. Prints one JSON line: per tick after the first three (medians),
store writes, podgroup writes (a waiting job's reason and conditions live on its podgroup), and
the tick's CPU milliseconds; the jobs still waiting at the end, and their reasons by kind. Pods
get random uids, as in a real server: the counts at the end may differ by a job or two between
runs, the per-tick figures hardly.

``--moving-demand`` adds a third queue (weight 2) that gets one short job every other tick, less
than its share: the deserved shares of the other two move as its demand comes and goes, while
their backlogs wait at their shares.

What it watches: a tick should write in proportion to the jobs that started, ended or changed
reason, not to the jobs waiting. A reason whose text carries a figure that moves with every
job admitted or placed is written again for every waiting job of its queue on every such move.
"""

from __future__ import annotations

import collections
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.loop import REASON_ANNOTATION, ControlLoop
from lahar.server.service import ApiService
from lahar.store import open_store
from options import count, parser as bench_parser

QUEUES = {"a": 1, "b": 3}
NODES, NODE_CPUS = 4, 64


def job(name: str, queue: str, cpus: int, seconds: int) -> dict:
    annotations = {"lahar.dev/duration": f"{seconds}s"}
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpus)}}}
    template = {"metadata": {"annotations": annotations}, "spec": {"containers": [container]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"queue": queue, "minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": template}]},
    }


MOVING = "c"  # --moving-demand: the third queue


def run(jobs: int, ticks: int, folder: Path, moving_demand: bool = False) -> dict:
    store = open_store(f"sqlite:///{folder / 'lahar.db'}")
    # creation times one second apart, in submit order (the jobs' age order does not hang on the wall clock)
    service = ApiService(store, clock=itertools.count(1_000_000_000).__next__)
    for n in range(NODES):
        allocatable = {"cpu": str(NODE_CPUS), "memory": "256Gi", "pods": "110"}
        service.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}, "status": {"allocatable": allocatable}})
    queues = {**QUEUES, MOVING: 2} if moving_demand else QUEUES
    for name, weight in queues.items():
        service.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": weight}})
    loop = ControlLoop(service, load_config(default_config_text()), 1.0, clock=iter(range(10, 10**9)).__next__)
    for k in range(jobs):
        for index, name in enumerate(QUEUES):
            service.create(job(f"{name}-{k}", name, 1 + (k + index) % 3, 3 + (k * 7 + index) % 7))
    writes, group_writes, cpu = [], [], []
    for tick in range(ticks):
        if moving_demand and tick % 2 == 0:
            service.create(job(f"{MOVING}-{tick}", MOVING, 4 + tick % 3 * 4, 2))
        version, started = store.current_version(), time.process_time()
        loop.tick()
        cpu.append(time.process_time() - started)
        kinds = collections.Counter(event.kind for event in store.watch(version, None, timeout=0.0))
        writes.append(sum(kinds.values()))
        group_writes.append(kinds["PodGroup"])
    reasons = collections.Counter()
    for group in store.list("PodGroup")[0]:
        text = (group["metadata"].get("annotations") or {}).get(REASON_ANNOTATION)
        if text:
            reasons[json.loads(text)["kind"]] += 1
    store.close()
    steady = slice(3, None)  # the first ticks admit and place the first jobs of the whole backlog
    return {
        "bench": "backlog",
        "jobs": jobs * len(QUEUES),
        "ticks": ticks,
        "store_writes_per_tick": statistics.median(writes[steady]),
        "podgroup_writes_per_tick": statistics.median(group_writes[steady]),
        "tick_cpu_ms": round(1000 * statistics.median(cpu[steady]), 1),
        "waiting_at_end": sum(reasons.values()),
        "reasons": dict(sorted(reasons.items())),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--jobs", type=count(1), default=1000, help="jobs submitted to each of the two queues (default: %(default)s)")
    parser.add_argument("--ticks", type=count(4), default=30, help="ticks of the loop, at least 4: the first three are left out of the figures (default: %(default)s)")
    parser.add_argument("--moving-demand", action="store_true", help="a third queue whose demand comes and goes (the others' deserved shares move)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(run(args.jobs, args.ticks, Path(folder), args.moving_demand)))


if __name__ == "__main__":
    main()
