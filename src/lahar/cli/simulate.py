"""``lahar simulate``: manifests or a trace in, the scheduler's decisions and what-if metrics out.

Three modes, one command:

- manifests (``FILE...``): the decisions and final state of SPEC section 7, unchanged;
- a trace (``--trace KIND:PATH``): a real workload replayed on a cluster with a queue
  configuration, ending with a metrics summary (``lahar.sim.traces``, ``lahar.sim.metrics``);
- a comparison (``--compare A B``): the same workload under two configurations, side by side
  (``lahar.sim.compare``).

``--metrics FILE`` and ``--report FILE`` (HTML, ``lahar.sim.htmlreport``) work in every mode.
Warnings (trace keys with no queue, the default cluster chosen) go to stderr, so that
``-o json`` keeps stdout to one JSON document.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

import typer
from rich.console import Console
from rich.table import Table

from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest
from lahar.model.base import ApiObject
from lahar.model.manifest import load_files
from lahar.scheduler.framework.config import SchedulerConf, default_config_text, load_config
from lahar.sim.compare import Clock, compare_json, difference_rows, labelled, read_side, replay, routing_of, run_sides
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs, resolve_config
from lahar.sim.metrics import MetricsCollector, queue_table, summary_rows
from lahar.sim.progress import ProgressSettings, jobs_in, progress_shown
from lahar.sim.report import job_rows, queue_rows, simulation_json
from lahar.sim.traces import QueueFile, Routing, Workload, build_workload, read_queue_file
from lahar.sim.traces.workload import manifest_workload

_TRACE_HELP = "Replay a trace: philly:PATH, alibaba:PATH (pod list or its folder) or csv:PATH (see docs/what-if.md)."


def simulate(
    files: Optional[List[str]] = typer.Argument(None, help="Manifest files (YAML or JSON, many documents each); - for stdin."),
    config: Optional[str] = typer.Option(
        None, "--config", "-c", help="Scheduler configuration: a file, or a bundled name (default, capacity, capacity-hierarchy, volcano)."
    ),
    cycles: Optional[int] = typer.Option(None, "--cycles", min=1, help="Run exactly N cycles, one every --period."),
    until: Optional[str] = typer.Option(None, "--until", help="Run the discrete-event simulation up to this time (e.g. 10m)."),
    period: str = typer.Option("1s", "--period", help="Time between scheduling cycles."),
    output: str = typer.Option("table", "--output", "-o", help="table (for people) or json (for scripts)."),
    print_default_config: bool = typer.Option(False, "--print-default-config", help="Print Lahar's default scheduler configuration and exit."),
    trace: Optional[str] = typer.Option(None, "--trace", help=_TRACE_HELP),
    queues: Optional[str] = typer.Option(None, "--queues", help="Queue manifests (and optionally a SchedulerConfiguration) for the trace's jobs."),
    nodes: Optional[List[str]] = typer.Option(None, "--nodes", help="Node manifests to replay on (repeatable)."),
    cluster: Optional[List[str]] = typer.Option(None, "--cluster", help="Identical nodes: 'N x cpu=64,memory=512Gi,nvidia.com/gpu=8' (repeatable)."),
    speedup: Optional[float] = typer.Option(None, "--speedup", help="Divide the trace's arrival times and durations by X."),
    limit_jobs: Optional[int] = typer.Option(None, "--limit-jobs", help="Replay only the first N jobs of the trace, by arrival."),
    queue_key: Optional[str] = typer.Option(None, "--queue-key", help="Alibaba traces: the column naming the queue, qos (default) or gpu_spec."),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="Write the metrics (waits, usage, utilisation, fairness) as JSON to this file."),
    report: Optional[str] = typer.Option(None, "--report", help="Write a self-contained HTML report with plots to this file."),
    compare: Optional[Tuple[str, str]] = typer.Option(
        None, "--compare", metavar="A B", help="Run two configurations side by side: queue manifests, scheduler configuration files or bundled names."
    ),
    progress: Optional[bool] = typer.Option(
        None,
        "--progress/--no-progress",
        help="Show on stderr where the run stands (cycles, simulated time, jobs arrived and finished, time elapsed) "
        "while it runs. Default: shown when stderr is a terminal.",
    ),
) -> None:
    """Run the scheduler over manifests or a trace on a virtual clock.

    Objects arrive at their `lahar.dev/at` time (default 0); tasks run for their
    `lahar.dev/duration` once bound, then succeed. With neither --cycles nor --until, one cycle
    runs for manifests, and a trace runs until every job is done (or nothing can change).
    """
    if print_default_config:
        typer.echo(default_config_text(), nl=False)
        return
    _check_options(cycles, until, output, trace, compare, (queues, nodes, cluster, speedup, limit_jobs, queue_key))
    clock = _clock(period, until, cycles)
    outputs = _Outputs(output, metrics, report)
    options, shown = _trace_options(nodes, cluster, speedup, limit_jobs, queue_key), _wants_progress(progress)
    if compare:
        _run_compare(files or [], config, trace, queues, compare, clock, outputs, options, shown)
    elif trace:
        _run_trace(files or [], config, trace, queues, clock, outputs, options, shown)
    else:
        _run_manifests(files or [], config, clock, outputs, shown)


def _trace_options(nodes, cluster, speedup, limit_jobs, queue_key) -> dict[str, Any]:
    return {"node_files": nodes or [], "cluster": cluster or [], "speedup": speedup, "limit": limit_jobs, "queue_key": queue_key}


def _stderr_is_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def _wants_progress(asked: bool | None) -> bool:
    """``--progress``/``--no-progress`` as given; neither: shown when stderr is a terminal."""
    return _stderr_is_terminal() if asked is None else asked


def _progress_settings(wanted: bool, total_jobs: int, label: str = "", in_place: bool | None = None) -> ProgressSettings | None:
    """On a terminal one line rewritten twice a second; elsewhere a line every 5 seconds."""
    if not wanted:
        return None
    if in_place is None:
        in_place = _stderr_is_terminal()
    return ProgressSettings(total_jobs, label, in_place, 0.5 if in_place else 5.0)


def _total_jobs(workload: Workload) -> int:
    """The jobs a replay of ``workload`` submits: the trace's, and those of the manifests given with it."""
    return len(workload.jobs) + jobs_in(workload.extras)


def _check_options(cycles, until, output, trace, compare, trace_only) -> None:
    if cycles is not None and until is not None:
        raise BadRequest("give --cycles or --until, not both")
    if output not in ("table", "json"):
        raise BadRequest(f'--output: Unsupported value: "{output}": supported values: "table", "json"')
    names = ("--queues", "--nodes", "--cluster", "--speedup", "--limit-jobs", "--queue-key")
    given = [name for name, value in zip(names, trace_only) if value]
    if given and not trace and not compare:
        raise BadRequest(f"{', '.join(given)}: only with --trace or --compare")
    if not trace and any(name in given for name in names[3:]):
        raise BadRequest(f"{', '.join(n for n in given if n in names[3:])}: only with --trace")


def _clock(period: str, until: str | None, cycles: int | None) -> Clock:
    try:
        step = parse_duration(period)
        end = parse_duration(until) if until is not None else None
    except DurationError as exc:
        raise BadRequest(f"--period/--until: {exc}") from None
    if step <= 0:
        raise BadRequest("--period: must be a duration > 0")
    return Clock(step, end, cycles)


class _Outputs:
    """Where results go: stdout as a table or JSON, and the optional metrics and report files."""

    def __init__(self, output: str, metrics: str | None, report: str | None) -> None:
        self.json, self.metrics, self.report = output == "json", metrics, report

    @property
    def wants_metrics(self) -> bool:
        return bool(self.metrics or self.report)

    def write(self, option: str, path: str | None, text: str) -> None:
        if path is None:
            return
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise BadRequest(f"{option}: cannot write {path}: {exc.strerror or exc}") from None


def _run(sim: Simulation, clock: Clock, *, default_until: float | None) -> None:
    if clock.cycles is not None:
        sim.run_cycles(clock.cycles)
    elif clock.until is not None or default_until is not None:
        sim.run_until(clock.until if clock.until is not None else default_until)  # type: ignore[arg-type]
    else:
        sim.run_cycles(1)


# ----------------------------------------------------------------- manifests


def _run_manifests(files: list[str], config: str | None, clock: Clock, outputs: _Outputs, progress: bool = False) -> None:
    objects, conf = load_simulation_inputs(files, config)
    collector = MetricsCollector() if outputs.wants_metrics else None
    sim = Simulation(objects, conf, period=clock.period, observers=[collector] if collector else [])
    with progress_shown(sim, _progress_settings(progress, jobs_in(objects))):
        _run(sim, clock, default_until=None)
    result = collector.result(sim) if collector else None
    if outputs.json:
        typer.echo(json.dumps(simulation_json(sim), indent=2, sort_keys=False))
    else:
        _print_tables(sim)
        if result is not None:
            _print_summary(result)
    _write_metrics(outputs, result, "manifests: " + " ".join(files))


def _write_metrics(outputs: _Outputs, result: dict[str, Any] | None, note: str) -> None:
    if result is None:
        return
    outputs.write("--metrics", outputs.metrics, json.dumps(result, indent=1))
    if outputs.report:
        from lahar.sim.htmlreport import render_report  # matplotlib loads only when a report is asked for

        outputs.write("--report", outputs.report, render_report(result, note=note))


# ----------------------------------------------------------------- traces


def _base_conf(config: str | None, queue_file: QueueFile | None, extras: list[ApiObject]) -> SchedulerConf:
    """--config, else the queues file's SchedulerConfiguration, else one among the manifests, else the default."""
    if not config and queue_file is not None and queue_file.config is not None:
        doc = queue_file.config
        return load_config({"actions": doc.actions, "tiers": doc.tiers, "configurations": doc.configurations})
    return resolve_config(config, extras)


def _load_workload(files: list[str], trace: str | None, queues: str | None, options: dict[str, Any]) -> tuple[Workload, QueueFile | None, list[ApiObject]]:
    extras = load_files(files) if files else []
    queue_file = read_queue_file(queues) if queues else None
    if trace:
        workload = build_workload(trace, extras=extras, **options)
    else:
        workload = manifest_workload(extras, options["node_files"], options["cluster"])
    if workload.cluster_note:
        typer.echo(f"note: no nodes given: replaying on the default cluster {workload.cluster_note} (sized from the trace, see docs/what-if.md)", err=True)
    return workload, queue_file, extras


def _warn(routing: Routing, label: str = "") -> None:
    if routing.unknown:
        where = f"{label}: " if label else ""
        keys = ", ".join(routing.unknown)
        typer.echo(f"warning: {where}trace queue keys with no leaf queue of that name go to queue default: {keys}", err=True)


class _DecisionLog:
    """Keeps only the decisions of each cycle (SPEC's ``cycles``), not the whole cycle record."""

    def __init__(self) -> None:
        self.cycles: list[dict[str, Any]] = []

    def __call__(self, sim: Simulation, record: Any) -> None:
        if record.result.decisions:
            self.cycles.append(record.to_json())


def _run_trace(
    files: list[str], config: str | None, trace: str, queues: str | None, clock: Clock, outputs: _Outputs, options: dict[str, Any], progress: bool = False
) -> None:
    workload, queue_file, extras = _load_workload(files, trace, queues, options)
    conf = _base_conf(config, queue_file, extras)
    objects, routing = workload.objects(queue_file.queues or None if queue_file else None)
    _warn(routing)
    collector, log = MetricsCollector(), _DecisionLog()
    sim = Simulation(objects, conf, period=clock.period, observers=[collector, log] if outputs.json else [collector])
    sim.keep_cycles = False
    with progress_shown(sim, _progress_settings(progress, _total_jobs(workload))):
        replay(sim, objects, clock)
    result = collector.result(sim)
    if outputs.json:
        out = simulation_json(sim)
        out["cycles"] = log.cycles
        out["trace"] = {"source": trace, "jobs": len(workload.jobs), "nodes": len(workload.nodes), "queues": routing.queues, "default_cluster": workload.cluster_note or None}
        out["metrics"] = result
        typer.echo(json.dumps(out, indent=1))
    else:
        _print_summary(result)
    _write_metrics(outputs, result, f"trace {trace}, {len(workload.jobs)} jobs, {len(workload.nodes)} nodes")


# ----------------------------------------------------------------- comparisons


def _run_compare(files, config, trace, queues, specs, clock: Clock, outputs: _Outputs, options: dict[str, Any], progress: bool = False) -> None:
    workload, queue_file, extras = _load_workload(files, trace, queues, options)
    if not workload.jobs and not workload.extras:
        raise BadRequest("--compare: give a workload: --trace KIND:PATH or manifest files")
    base = _base_conf(config, queue_file, extras)
    shared = queue_file.queues or None if queue_file else None
    sides = labelled([read_side(spec) for spec in specs])
    for side in sides:
        _warn(routing_of(workload, side, shared), side.label)
    runs = [(side.queues if side.queues is not None else shared, side.conf or base) for side in sides]
    default_until = float("inf") if trace else None
    # the two sides run at once: lines of their own, never one line rewritten
    total = _total_jobs(workload)
    shown = [_progress_settings(True, total, side.label, in_place=False) for side in sides] if progress else None
    result = compare_json(sides, run_sides(workload, runs, _trace_clock(clock, default_until), progress=shown))
    if outputs.json:
        typer.echo(json.dumps(result, indent=1))
    else:
        _print_comparison(result)
    outputs.write("--metrics", outputs.metrics, json.dumps(result, indent=1))
    if outputs.report:
        from lahar.sim.htmlreport import render_comparison

        outputs.write("--report", outputs.report, render_comparison(result, note=f"workload: {trace or ' '.join(files)}"))


def _trace_clock(clock: Clock, default_until: float | None) -> Clock:
    """A comparison runs like a single run: a trace until done, manifests one cycle by default."""
    if clock.cycles is not None or clock.until is not None:
        return clock
    if default_until is None:
        return Clock(clock.period, None, 1)
    return Clock(clock.period, default_until, None)


# ----------------------------------------------------------------- tables


def _print_tables(sim: Simulation) -> None:
    console = Console()
    decisions = Table(title="Decisions", show_lines=False)
    for column in ("time", "decision", "task", "node", "reason"):
        decisions.add_column(column)
    for record in sim.cycles:
        for d in record.result.decisions:
            decisions.add_row(f"{record.time:g}s", d.type, d.task, d.node or "", d.reason or "")
    console.print(decisions)
    queues = Table(title="Queues")
    for column in ("queue", "state", "weight", "deserved", "allocated", "capability", "share"):
        queues.add_column(column)
    for name, row in queue_rows(sim).items():
        queues.add_row(name, row["state"], str(row["weight"]), _res(row["deserved"]), _res(row["allocated"]), _res(row["capability"]), f"{row['share']:.2f}")
    console.print(queues)
    jobs = Table(title="Jobs")
    for column in ("job", "queue", "phase", "why"):
        jobs.add_column(column)
    for key, row in job_rows(sim).items():
        reason = row["reason"]
        jobs.add_row(key, row["queue"], row["phase"], f"[{reason['kind']}] {reason['message']}" if reason else "")
    console.print(jobs)
    for rejection in sim.world.rejections:
        console.print(f"[red]rejected[/red] at {rejection.time:g}s: {rejection.kind} {rejection.name}: {rejection.message}")


def _res(values: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in values.items()) or "-"


def _rich_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, show_header=any(header))
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _console() -> Console:
    """A console for the what-if tables: as wide as the terminal, or 120 columns when piped."""
    return Console() if sys.stdout.isatty() else Console(width=120)


def _print_summary(result: dict[str, Any]) -> None:
    console = _console()
    console.print(_rich_table("What-if summary", ["", ""], summary_rows(result)))
    console.print(_rich_table("Per queue", *queue_table(result)))


def _print_comparison(result: dict[str, Any]) -> None:
    console = _console()
    labels = [f"{letter}: {side['label']}" for letter, side in zip("AB", result["sides"])]
    rows = [summary_rows(side["metrics"]) for side in result["sides"]]
    merged = [[a[0], a[1], b[1]] for a, b in zip(*rows)]
    console.print(_rich_table("Side by side", ["", *labels], merged))
    resource = result["differences"]["resource"]
    title = f"Differences per queue (Δ = B - A; {resource}-h: share of all {resource} hours)"
    console.print(_rich_table(title, *difference_rows(result["differences"])))
