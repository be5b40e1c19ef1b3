"""Write docs/cli.md from the CLI's own ``--help``: every command, in the order ``lahar --help``
lists them, with its help text, options and examples exactly as the command prints them.

Run it after changing a command: ``.venv/bin/python tools/gen_cli_docs.py``.
``tests/cli/test_docs_cli.py`` fails when a command or an option is missing from the page.
"""

from __future__ import annotations

import sys
from pathlib import Path

from typing import Any

import typer
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "cli.md"
WIDTH = "100"

HEADER = """# The `lahar` command line

Generated from the commands' own `--help` by `tools/gen_cli_docs.py`; do not edit by hand.
Every client command takes `--server URL` (default `http://127.0.0.1:8080`, or `LAHAR_SERVER`)
and `--token` (or `LAHAR_TOKEN`; by default the token a local server wrote to
`~/.lahar/token`). Exit codes: 0 ok, 1 an error reported by the server (its message, then one
line per field error), 2 a usage error, 3 the server cannot be reached. Shell completion:
`lahar --install-completion`. A walk through the commands: [tutorial.md](tutorial.md).
"""


def walk(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under ``command`` (itself included), depth first, in listing order.
    (Typer may vendor its own copy of click, so groups are recognised by what they do.)"""
    found = [(path, command)]
    if hasattr(command, "list_commands"):
        context = command.context_class(command)
        for name in command.list_commands(context):
            found += walk(command.get_command(context, name), (*path, name))
    return found


def help_text(app: typer.Typer, path: tuple[str, ...]) -> str:
    env = {"TERMINAL_WIDTH": WIDTH, "COLUMNS": WIDTH, "NO_COLOR": "1", "LAHAR_SERVER": None, "LAHAR_TOKEN": None}
    result = CliRunner().invoke(app, [*path[1:], "--help"], prog_name="lahar", env=env)
    if result.exit_code != 0:
        raise SystemExit(f"{' '.join(path)} --help failed: {result.output}")
    return "\n".join(line.rstrip() for line in result.stdout.strip("\n").splitlines())


def render() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from lahar.cli.main import app

    sections = [HEADER]
    for path, _ in walk(typer.main.get_command(app), ("lahar",)):
        sections.append(f"## {' '.join(path)}\n\n```text\n{help_text(app, path)}\n```\n")
    return "\n".join(sections)


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
