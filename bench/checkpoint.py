"""Pause the whole Philly replay at a cycle, then resume it from there: the deep backlog in seconds.

    python bench/checkpoint.py save 21700 backlog.pkl           # replay to cycle 21,700 (minutes)
    python bench/checkpoint.py run backlog.pkl --cycles 200      # the next 200 cycles (seconds)
    python bench/checkpoint.py run backlog.pkl --cycles 200 --warm 5   # the same, clock from the 6th
    python bench/checkpoint.py run backlog.pkl --cycles 1495 --warm 5 --no-digest   # the cycles' CPU alone
    python bench/checkpoint.py run backlog.pkl --cycles 200 --warm 5 --intern   # texts interned as a live replay holds them
    python bench/checkpoint.py repeat backlog.pkl --times 30     # the next cycle 30 times: median CPU ms
    python bench/checkpoint.py finish backlog.pkl --save-every 20000 --out later.pkl   # to the end
    python bench/checkpoint.py shapes backlog.pkl --times 15      # what a cycle costs per waiting job

``finish`` resumes the file and replays to the end of the trace (hours for the whole Philly
trace: it can be stopped and resumed again from ``--out``, which is saved every
``--save-every`` cycles). A line on stderr every ``--progress`` cycles; at the end one JSON line
as ``bench/trace.py`` prints it: cycles, simulated seconds, the CPU seconds of this part (plus
``--cpu-before``, the CPU the replay took to reach the file, when given) and the metrics'
headline figures.

``shapes`` measures how much of a backlog's cycle its look-alike waiting jobs cost: it counts the
waiting jobs and their shapes (queue, priority, minAvailable and the pending tasks' requests),
times the cycle at the saved position (median of ``--times``), then drops every waiting job but
the first of each shape from the cluster and times the cycle again. The second cluster is not
the same problem (its queues ask for less), so its cycle decides differently: the figure is
what a cycle costs without the look-alikes, the most that handling each shape once could save,
not a result of the replay.

``save`` replays the whole trace as ``bench/trace.py philly`` does (same cluster, configuration
and metrics) up to the given cycle and pickles the simulation with its replay position. ``run``
loads it, runs the next cycles and prints one JSON line: CPU seconds, milliseconds per cycle, a
digest of every cycle's decisions, podgroup phases, reasons and conditions and, with
``--reason-changes`` (which costs time of its own), how many jobs' pending reasons differ from
the cycle before (a server writes each such podgroup again). Two
versions of the code that print the same digest decided the same. The digest reads every job's
outcome each cycle, which in a deep backlog costs more than a cycle that hides its look-alikes:
``--no-digest`` leaves it out, for timings.

The first cycle after a load pays for what the file does not keep: each job's facts (validity,
starving, its kind of look-alike, the counts kept with them) are worked out again, every waiting
job's kind described again (at cycle 58,000 that first cycle cost 158 CPU ms, the next ones 11
to 16). ``--warm N`` runs N cycles before the clock starts (they count in the digest: ``--cycles
200 --warm 5`` prints the digest of ``--cycles 205``), so that the figure is of cycles as the
replay runs them. Under callgrind, ``--instr-atstart=no`` with ``--callgrind`` turns the
instruments on after the warm cycles (``callgrind_control -i on``), which leaves them out of
the profile too, and off after the measured ones (the interpreter's teardown of the loaded
replay at exit would otherwise count: most of a 25-cycle profile of the deep backlog).

An unpickled text is a new object: the file's job phases and queue names are not the interned
texts a live replay holds (``JobInfo`` and ``QueueInfo`` intern them when made), so a check that
tells them by identity misses on every job the replay has not made again since the load.
``--intern`` interns them again after the load, as ``bench/idle.py`` does; the decisions and the
digest are the same either way, only the cost moves. Without it the figures compare with the
rounds before 2026-11-29 (afternoon), which ran without it.

To compare two versions, run ``run`` alternately with each (``PYTHONPATH=OTHER/src``) on the same
file. The file holds the simulation's objects as pickled by the code that saved it: save with the
older version, and check that the newer one loads it (a class that gained an attribute the
resumed cycles need will not work). A compiled core (the installed form, see bench/README.md)
resumes what a compiled core saved: for compiled A/B runs, save once with each version (the
digests say whether they decided the same), or compare the plain-Python forms on one file.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import pickle
import statistics
import sys
import time

from lahar.scheduler.api import TaskStatus
from lahar.scheduler.cycle import paused_gc, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay_position, run_replay
from lahar.sim.engine import Simulation
from lahar.sim.metrics import MetricsCollector
from lahar.sim.traces import build_workload
from callgrind import instruments
from idle import intern_texts
from options import count, existing_file, new_file, parser as bench_parser, spent_seconds
from trace import trace_path

sys.setrecursionlimit(100_000)  # pickling the cluster's object graph goes deep


def save(cycle: int, path: str, traces: str | None) -> None:
    workload = build_workload(f"philly:{trace_path('philly', traces)}")
    objects, _ = workload.objects(None)
    sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=[MetricsCollector()])
    sim.keep_cycles = False
    position = replay_position(objects, Clock(1.0, None, None))
    started = time.process_time()
    with paused_gc():
        run_replay(sim, position, cycles=cycle)
    with open(path, "wb") as out:
        pickle.dump((sim, position), out, protocol=pickle.HIGHEST_PROTOCOL)
    print(json.dumps({"bench": "checkpoint", "saved": path, "cycles": sim.cycle_count, "sim_seconds": position.now, "cpu_seconds": round(time.process_time() - started, 1)}))


def run(path: str, cycles: int, count_reasons: bool = False, warm: int = 0, callgrind: bool = False, digesting: bool = True, intern: bool = False) -> None:
    with open(path, "rb") as source:
        sim, position = pickle.load(source)
    if intern:  # as a live replay holds them (``idle.intern_texts``)
        intern_texts(sim.world.cache)
    digest = hashlib.sha256()
    reasons: dict = {}
    moved = [0]  # pending reasons that differ from the cycle before: a server writes each one

    def fingerprint(_sim: Simulation, record) -> None:
        digest.update(repr([(d.type, d.task, d.node) for d in record.result.decisions]).encode())
        jobs = sorted((uid, o.phase, repr(o.reason), repr(o.conditions)) for uid, o in record.result.jobs.items())
        digest.update(repr(jobs).encode())
        if not count_reasons:
            return
        now = {uid: o.reason for uid, o in record.result.jobs.items()}
        moved[0] += sum(1 for uid, reason in now.items() if uid in reasons and reasons[uid] != reason)
        reasons.clear()
        reasons.update(now)

    if digesting:
        sim.observers.append(fingerprint)
    with paused_gc():
        run_replay(sim, position, cycles=warm)
    if callgrind:  # the instruments on from here (valgrind --tool=callgrind --instr-atstart=no)
        instruments("on")
    first = sim.cycle_count
    started = time.process_time()
    with paused_gc():
        run_replay(sim, position, cycles=cycles)
    cpu = time.process_time() - started
    if callgrind:  # off again: the teardown of the loaded replay at exit is not the cycles' work
        instruments("off")
    done = sim.cycle_count - first
    print(json.dumps({"bench": "checkpoint", "from_cycle": first, "warm_cycles": warm, "cycles": done, "cpu_seconds": round(cpu, 2), "ms_per_cycle": round(1000 * cpu / max(done, 1), 2), "digest": digest.hexdigest()[:16] if digesting else None, **({"reason_changes": moved[0]} if count_reasons else {}), **({"interned": True} if intern else {})}))


def finish(path: str, out: str | None, save_every: int, progress: int, cpu_before: float) -> None:
    """Resume ``path`` and replay to the end of the trace, saving to ``out`` every ``save_every`` cycles."""
    with open(path, "rb") as source:
        sim, position = pickle.load(source)
    first, started = sim.cycle_count, time.process_time()

    def report(s: Simulation, _record) -> None:
        if progress and s.cycle_count % progress == 0:
            waiting = sum(1 for job in s.world.cache.jobs.values() if TaskStatus.PENDING in job.status_index)
            line = {"cycles": s.cycle_count, "sim_seconds": round(s.now), "objects_arrived": bisect.bisect_right(position.arrivals, s.now), "jobs_waiting": waiting, "cpu_seconds": round(cpu_before + time.process_time() - started, 1)}
            print(json.dumps(line), file=sys.stderr, flush=True)

    with paused_gc():
        while True:
            sim.observers.append(report)
            going = run_replay(sim, position, cycles=save_every)
            sim.observers.remove(report)  # a closure does not pickle
            if not going:
                break
            if out:
                with open(out + ".part", "wb") as target:
                    pickle.dump((sim, position), target, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(out + ".part", out)  # a stop while saving leaves the last whole file
    cpu = time.process_time() - started
    collector = next((o for o in sim.observers if isinstance(o, MetricsCollector)), None)
    summary = collector.result(sim)["summary"] if collector is not None else {}
    line = {"bench": "checkpoint-finish", "from_cycle": first, "cycles": sim.cycle_count, "sim_seconds": round(sim.now, 1), "cpu_seconds": round(cpu, 1), "cpu_seconds_in_all": round(cpu_before + cpu, 1)}
    line.update({key: summary.get(key) for key in ("wait_p50", "wait_mean", "never_started")})
    print(json.dumps(line))


def _shape(job) -> tuple | None:
    """What tells a waiting job apart for this estimate (None: not waiting, or holding tasks)."""
    pending = job.status_index.get(TaskStatus.PENDING)
    if not pending or len(pending) != len(job.tasks):
        return None
    requests = tuple(sorted((t.resreq.milli_cpu, t.resreq.memory, tuple(sorted((t.resreq.scalars or {}).items()))) for t in pending.values()))
    return job.queue, job.priority, job.min_available, requests


def _median_cycle_ms(sim: Simulation, now: float, times: int) -> tuple[float, int]:
    spent = []
    with paused_gc():
        for n in range(times):
            started = time.process_time()
            result = run_cycle(sim.world.cache, sim.conf, now, uid=f"shapes-{n}")
            spent.append(1000 * (time.process_time() - started))
    return statistics.median(spent), len(result.decisions)


def shapes(path: str, times: int) -> None:
    """The cycle at the saved position with every waiting job, then with one waiting job per shape."""
    with open(path, "rb") as source:
        sim, position = pickle.load(source)
    cache = sim.world.cache
    jobs = len(cache.jobs)
    cohorts: dict[tuple, list[str]] = {}
    for uid, job in cache.jobs.items():
        shape = _shape(job)
        if shape is not None:
            cohorts.setdefault(shape, []).append(uid)
    waiting = sum(len(uids) for uids in cohorts.values())
    full_ms, full_decisions = _median_cycle_ms(sim, position.now, times)
    for uids in cohorts.values():
        for uid in uids[1:]:
            cache.forget_job(uid)
    fewer_ms, fewer_decisions = _median_cycle_ms(sim, position.now, times)
    line = {
        "bench": "checkpoint-shapes", "cycle": sim.cycle_count, "jobs": jobs, "waiting": waiting,
        "shapes": len(cohorts), "largest_shape": max((len(u) for u in cohorts.values()), default=0),
        "cycle_ms": round(full_ms, 2), "decisions": full_decisions,
        "one_per_shape_cycle_ms": round(fewer_ms, 2), "one_per_shape_decisions": fewer_decisions,
        "ratio": round(full_ms / fewer_ms, 1) if fewer_ms else None,
    }
    print(json.dumps(line))


def repeat(path: str, times: int) -> None:
    """The cycle at the saved position, ``times`` times on the same cluster (nothing applied: a
    cycle changes only its own session): the median CPU of one cycle of the deep backlog. Run it
    alternately with two versions of the code, a few seconds each, for an A/B that a noisy
    machine moves less than whole replays."""
    with open(path, "rb") as source:
        sim, position = pickle.load(source)
    times_ms = []
    with paused_gc():
        for n in range(times):
            started = time.process_time()
            result = run_cycle(sim.world.cache, sim.conf, position.now, uid=f"repeat-{n}")
            times_ms.append(1000 * (time.process_time() - started))
    print(json.dumps({"bench": "checkpoint-repeat", "cycles": times, "median_ms": round(statistics.median(times_ms), 2), "min_ms": round(min(times_ms), 2), "decisions": len(result.decisions)}))


def main() -> None:
    parser = bench_parser(__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def subcommand(name: str, text: str) -> argparse.ArgumentParser:
        """A subcommand, told the same in the list of them and in its own --help."""
        return commands.add_parser(name, help=text, description=text)

    saving = subcommand("save", "replay the whole trace to CYCLE and pickle it to FILE")
    saving.add_argument("cycle", type=count(1), help="the cycle to stop at")
    saving.add_argument("file", type=new_file, help="where to save the replay")
    saving.add_argument("--traces", default=None, help="the traces folder (default: $LAHAR_TRACES or ../shared/traces)")
    running = subcommand("run", "resume FILE for --cycles cycles; print CPU and a digest of the decisions")
    running.add_argument("file", type=existing_file, help="a replay saved by save")
    running.add_argument("--cycles", type=count(1), default=200, help="cycles measured (default: %(default)s)")
    running.add_argument("--reason-changes", action="store_true", help="also count the pending reasons that differ from the cycle before")
    running.add_argument("--warm", type=count(0), default=0, metavar="N", help="first run N cycles off the clock (in the digest): the first cycle after a load works out every job's facts again (default: %(default)s)")
    running.add_argument("--callgrind", action="store_true", help="under valgrind --tool=callgrind --instr-atstart=no: turn the instruments on after the warm cycles")
    running.add_argument("--intern", action="store_true", help="intern again the texts a live replay holds interned (job phases, queue names), as bench/idle.py does: an unpickled text is a new object, which identity checks miss")
    running.add_argument("--no-digest", action="store_true", help="time the cycles alone: the digest reads every job's outcome each cycle (in a deep backlog, more than a cycle that hides look-alikes costs)")
    repeating = subcommand("repeat", "run the cycle at FILE's position --times times on the same cluster; print the median CPU ms")
    repeating.add_argument("file", type=existing_file, help="a replay saved by save")
    repeating.add_argument("--times", type=count(1), default=30, help="cycles run; the figure is their median (default: %(default)s)")
    finishing = subcommand("finish", "resume FILE and replay to the end of the trace; print the cycles, CPU and metrics")
    finishing.add_argument("file", type=existing_file, help="a replay saved by save (or by --out)")
    finishing.add_argument("--out", type=new_file, default=None, help="save the replay here every --save-every cycles (to resume a stopped run)")
    finishing.add_argument("--save-every", type=count(1), default=20_000, metavar="N", help="with --out: save every N cycles (default: %(default)s)")
    finishing.add_argument("--progress", type=count(0), default=1000, metavar="N", help="a line on stderr every N cycles; 0: none (default: %(default)s)")
    finishing.add_argument("--cpu-before", type=spent_seconds, default=0.0, metavar="S", help="CPU seconds the replay took to reach FILE, added to the total (default: %(default)s)")
    shaping = subcommand("shapes", "time the cycle at FILE's position with every waiting job, then with one per shape")
    shaping.add_argument("file", type=existing_file, help="a replay saved by save")
    shaping.add_argument("--times", type=count(1), default=15, help="cycles run each way; the figures are their medians (default: %(default)s)")
    args = parser.parse_args()
    if args.command == "shapes":
        shapes(args.file, args.times)
    elif args.command == "finish":
        finish(args.file, args.out, args.save_every, args.progress, args.cpu_before)
    elif args.command == "repeat":
        repeat(args.file, args.times)
    elif args.command == "save":
        save(args.cycle, args.file, args.traces)
    else:
        run(args.file, args.cycles, args.reason_changes, args.warm, args.callgrind, not args.no_digest, args.intern)


if __name__ == "__main__":
    main()
