"""The performance targets, measured as bench/README reports them: medians of several runs.

    python bench/targets.py                          # cycle, reclaim and api: five runs each
    python bench/targets.py --only cycle,reclaim --runs 3
    python bench/targets.py --with-trace             # and the whole Philly replay (one run: about 40 minutes)
    python bench/targets.py --small --runs 1         # each program at a small size: that they run, no verdicts

Runs each target's benchmark ``--runs`` times (the Philly replay ``--trace-runs`` times), one run
after another, each in a process of its own (the same interpreter and environment as this one),
and prints one JSON line per target: its command, each run's figures, their medians, the goal,
the verdict on the medians (``met`` or ``not met``; none with ``--small``, whose sizes are not the
targets'), the figures that must stay 0 and did not in some run (``unclean``: the API's failed
submits, which make it ``not met``) and the digests the runs printed (one digest: every run
decided the same). A last line holds the verdicts together. What a run writes on stderr passes
through (the Philly replay's progress: a line every 20,000 cycles). A run that fails, or prints no
figure the target reads, stops it: exit status 1.

The targets (bench/README, "Where the targets stand"): a cycle at 5,000 nodes, 50,000 pending
pods and 100 queues places >= 10,000 pods a second with a peak RSS <= 1 GiB; a reclaim cycle at
50,000 running pods takes <= 1 s; the API binds >= 1,000 pods a second; the Philly replay takes
<= 60 s of wall time (its CPU seconds are printed too: on a shared machine they are the figure to
compare).
"""

from __future__ import annotations

import json
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from options import count, names, parser as bench_parser

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Limit:
    """A figure of a run's JSON line and the bound its median must keep."""

    figure: str
    goal: float
    at_least: bool  # True: the median must be >= goal; False: <= goal

    def kept(self, median: float) -> bool:
        return median >= self.goal if self.at_least else median <= self.goal

    def describe(self) -> str:
        return f"{self.figure} {'>=' if self.at_least else '<='} {self.goal:g}"


@dataclass(frozen=True)
class Target:
    name: str
    program: str
    arguments: tuple[str, ...]
    small: tuple[str, ...]  # the arguments of --small
    limits: tuple[Limit, ...]
    shown: tuple[str, ...] = ()  # more figures to report, without a bound
    digest: str | None = None  # the figure that tells the decisions apart
    clean: tuple[str, ...] = ()  # figures that must be 0 in every run for the target to be met


TARGETS = (
    Target(
        "cycle", "cycle.py", ("--nodes", "5000", "--pods", "50000", "--queues", "100"), ("--nodes", "50", "--pods", "500", "--queues", "5"),
        (Limit("pods_per_second", 10_000, True), Limit("peak_rss_mib", 1024, False)), ("cycle_seconds", "placed"), "decisions_digest",
    ),
    Target(
        "reclaim", "cycle.py", ("--nodes", "5000", "--pods", "1000", "--running", "50000", "--reclaim"), ("--nodes", "50", "--pods", "50", "--running", "500", "--reclaim"),
        (Limit("cycle_seconds", 1.0, False),), ("evicted", "placed", "peak_rss_mib"), "decisions_digest",
    ),
    Target(
        "api", "api.py", ("--jobs", "10000", "--clients", "16"), ("--jobs", "200", "--clients", "4"),
        (Limit("pods_bound_per_second", 1_000, True),), ("server_cpu_ms_per_job", "loop_cpu_ms_per_job", "submit_p99_ms"), clean=("failed_submits",),
    ),
    Target(
        "philly", "trace.py", ("philly", "--progress", "20000"), ("philly", "--limit-jobs", "200"),
        (Limit("total_seconds", 60.0, False),), ("replay_cpu_seconds", "cycles"), "metrics_digest",
    ),
)
BY_NAME = {target.name: target for target in TARGETS}


def chosen(only: tuple[str, ...] | None, with_trace: bool) -> tuple[str, ...]:
    """The targets to measure, each once, in the order of ``TARGETS``: those ``only`` names (every
    one but philly when it names none), and philly too ``with_trace``."""
    wanted = set(only) if only else {target.name for target in TARGETS if target.name != "philly"}
    if with_trace:
        wanted.add("philly")
    return tuple(target.name for target in TARGETS if target.name in wanted)


def command(target: Target, small: bool) -> list[str]:
    return [sys.executable, str(BENCH / target.program), *(target.small if small else target.arguments)]


def shown(target: Target, small: bool) -> str:
    """The command as bench/README writes it (from the repository root)."""
    return shlex.join(["python", f"bench/{target.program}", *(target.small if small else target.arguments)])


def run_once(target: Target, small: bool) -> dict:
    """One run of the target's benchmark: its JSON line. What the run writes on stderr (its
    progress, its errors) goes on to this program's. A failed run raises ``RunFailed``."""
    done = subprocess.run(command(target, small), stdout=subprocess.PIPE, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RunFailed(f"{target.name}: {shown(target, small)} exited {done.returncode} (its error above)")
    return json.loads(lines[-1])


class RunFailed(Exception):
    pass


def measure(target: Target, runs: int, small: bool) -> dict:
    """The target's runs, their medians and the verdict (None with ``small``)."""
    lines = [run_once(target, small) for _ in range(runs)]
    wanted = [limit.figure for limit in target.limits] + list(target.shown) + list(target.clean)
    for name in wanted:
        if any(not isinstance(line.get(name), (int, float)) for line in lines):
            raise RunFailed(f"{target.name}: {shown(target, small)} printed no figure {name}")
    figures = {name: [line[name] for line in lines] for name in wanted}
    medians = {name: statistics.median(values) for name, values in figures.items()}
    unclean = [name for name in target.clean if any(figures[name])]
    return {
        "target": target.name,
        "command": shown(target, small),
        "runs": runs,
        "figures": figures,
        "medians": medians,
        "goal": " and ".join(limit.describe() for limit in target.limits),
        "verdict": None if small else verdict(target, medians, unclean),
        "unclean": unclean,
        "digests": sorted({line[target.digest] for line in lines}) if target.digest else None,
    }


def verdict(target: Target, medians: dict[str, float], unclean: list[str] | None = None) -> str:
    """``met`` when every limit's median keeps its bound and no run's ``clean`` figure was above 0
    (``unclean`` names those that were), else ``not met``."""
    kept = all(limit.figure in medians and limit.kept(medians[limit.figure]) for limit in target.limits)
    return "met" if kept and not unclean else "not met"


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--runs", type=count(1), default=5, help="runs of each target's benchmark but the Philly replay's (--trace-runs); the verdict reads their medians (default: %(default)s)")
    parser.add_argument("--only", type=names(tuple(BY_NAME), "target"), default=None, metavar="NAMES", help=f"these targets only, comma-separated, of: {', '.join(BY_NAME)} (default: all but philly)")
    parser.add_argument("--with-trace", action="store_true", help="also the Philly replay (about 40 minutes a run), with or without --only")
    parser.add_argument("--trace-runs", type=count(1), default=1, help="runs of the Philly replay, when it is measured (default: %(default)s)")
    parser.add_argument("--small", action="store_true", help="each benchmark at a small size: a check that they run; no verdicts")
    args = parser.parse_args()
    verdicts = {}
    try:
        for name in chosen(args.only, args.with_trace):
            line = measure(BY_NAME[name], args.trace_runs if name == "philly" else args.runs, args.small)
            verdicts[name] = line["verdict"]
            print(json.dumps(line), flush=True)
    except RunFailed as failed:
        print(f"targets.py: a run failed: {failed}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"bench": "targets", "small": args.small, "verdicts": verdicts}))


if __name__ == "__main__":
    main()
