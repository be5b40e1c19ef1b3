"""``lahar simulate``: manifests in, the scheduler's decisions and the final state out."""

from __future__ import annotations

import json
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest
from lahar.scheduler.framework.config import default_config_text
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from lahar.sim.report import job_rows, queue_rows, simulation_json


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
) -> None:
    """Run the scheduler over manifests on a virtual clock.

    Objects arrive at their `lahar.dev/at` time (default 0); tasks run for their
    `lahar.dev/duration` once bound, then succeed. With neither --cycles nor --until, one cycle runs.
    """
    if print_default_config:
        typer.echo(default_config_text(), nl=False)
        return
    if cycles is not None and until is not None:
        raise BadRequest("give --cycles or --until, not both")
    if output not in ("table", "json"):
        raise BadRequest(f'--output: Unsupported value: "{output}": supported values: "table", "json"')
    try:
        step = parse_duration(period)
        end = parse_duration(until) if until is not None else None
    except DurationError as exc:
        raise BadRequest(f"--period/--until: {exc}") from None
    objects, conf = load_simulation_inputs(files or [], config)
    sim = Simulation(objects, conf, period=step)
    if end is not None:
        sim.run_until(end)
    else:
        sim.run_cycles(cycles or 1)
    if output == "json":
        typer.echo(json.dumps(simulation_json(sim), indent=2, sort_keys=False))
    else:
        _print_tables(sim)


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
