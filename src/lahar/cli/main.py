"""``lahar``: the command line. Subcommands live in their own modules; this one wires them.

Exit codes: 0 ok, 1 an error reported by Lahar (message printed as given), 2 usage error,
3 server unreachable.
"""

from __future__ import annotations

import sys

import typer

from lahar import __version__
from lahar.cli import job as job_cli
from lahar.cli import queue as queue_cli
from lahar.cli import resources
from lahar.cli import usage as usage_cli
from lahar.cli import token as token_cli
from lahar.cli.server_cmd import server
from lahar.cli.simulate import simulate
from lahar.errors import LaharError

app = typer.Typer(
    name="lahar",
    help="Lahar: queue-based batch scheduling for shared clusters.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command(
    "simulate",
    help="Run the scheduler over manifests on a virtual clock and report its decisions.",
    epilog="Example: lahar simulate examples/seed-scenarios.yaml --until 10m -o json",
)(simulate)


app.command(
    "server",
    help="Start the API server, controllers and scheduling loop on a durable store.",
    epilog="Example: lahar server --db ./lahar.db --port 8080",
)(server)


app.add_typer(queue_cli.app, name="queue")
app.add_typer(job_cli.app, name="job")
app.add_typer(token_cli.app, name="token")
app.command("apply", epilog=resources.APPLY_EPILOG)(resources.apply)
app.command("get", epilog=resources.GET_EPILOG)(resources.get)
app.command("delete", epilog="Examples:\n\nlahar delete queue test\n\nlahar delete job job1 --namespace team-a")(resources.delete)
app.command("usage", epilog=usage_cli.EPILOG)(usage_cli.usage)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lahar {__version__} (scheduling core: {_core_form()})")
        raise typer.Exit()


def _core_form() -> str:
    """Whether the installed scheduling core is compiled (docs/operations.md) or plain Python."""
    import lahar.scheduler.api as core

    return "plain Python" if (core.__file__ or "").endswith(".py") else "compiled"


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version, and whether the scheduling core is compiled, and exit."),
) -> None:
    """Lahar: queue-based batch scheduling for shared clusters."""


def main() -> None:
    try:
        app()
    except LaharError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
