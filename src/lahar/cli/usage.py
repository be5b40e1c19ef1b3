"""``lahar usage``: who used what, per queue and user, like Slurm's ``sacct``.

Reads ``/lahar/v1/usage`` and prints one row per (queue, user): jobs finished, mean and longest
wait, run time, and resource use in people's units (cpu core-hours, memory GiB-hours, other
resources in unit-hours). ``-o csv`` is the CSV the server also answers to ``?format=csv`` (seconds), ``-o json`` its
document.
"""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from lahar.cli.client import ServerOption, TokenOption, connect
from lahar.cli.output import reports_errors, table
from lahar.duration import format_duration

__all__ = ["usage", "usage_table"]

EPILOG = "Examples:\n\nlahar usage\n\nlahar usage --queue team-a --since 30d\n\nlahar usage --since 24h -o csv > usage.csv"


class UsageOutput(str, Enum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


def _hours(resource: str, seconds: float) -> str:
    if resource == "memory":
        return f"{seconds / 3600 / 2**30:.2f}"
    return f"{seconds / 3600:.2f}"


def _column(resource: str) -> str:
    return {"cpu": "CPU-h", "memory": "Mem-GiB-h"}.get(resource, f"{resource}-h")


def usage_table(rows: list[dict]) -> str:
    resources = sorted({name for row in rows for name in row.get("usage", {})})
    headers = ["Queue", "User", "Jobs", "Wait(mean)", "Wait(max)", "Run", *[_column(r) for r in resources]]
    body = [
        [
            row["queue"],
            row["user"],
            row["jobs"],
            format_duration(row.get("waitMean", 0.0)),
            format_duration(row.get("waitMax", 0.0)),
            format_duration(row.get("runSum", 0.0)),
            *[_hours(r, row["usage"].get(r, 0.0)) for r in resources],
        ]
        for row in rows
    ]
    return table(headers, body)


@reports_errors
def usage(
    queue: Optional[str] = typer.Option(None, "--queue", "-q", help="Only this queue."),
    user: Optional[str] = typer.Option(None, "--user", "-u", help="Only this user (non-admins always see only their own)."),
    since: str = typer.Option("7d", "--since", help="How far back: 90m, 24h, 7d, or a Unix time."),
    output: UsageOutput = typer.Option(UsageOutput.TABLE, "--output", "-o", help="table, csv or json."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Usage per queue and user since a time: resource-hours, jobs finished, waits."""
    client = connect(server, token)
    params = {k: v for k, v in {"queue": queue, "user": user, "since": since}.items() if v}
    document = client.request("GET", "/lahar/v1/usage", params=params)
    if output is UsageOutput.CSV:
        from lahar.accounting import rows_csv

        typer.echo(rows_csv(document.get("items", [])), nl=False)
        return
    if output is UsageOutput.JSON:
        import json

        typer.echo(json.dumps(document, indent=2))
        return
    rows = document.get("items", [])
    typer.echo(usage_table(rows) if rows else "No usage recorded in this period")
