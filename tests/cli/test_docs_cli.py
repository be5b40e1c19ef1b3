"""docs/cli.md covers the real CLI, every command has --help with an example, and shell
completion works: a command or an option added to the CLI and missing from the page fails here
(regenerate the page with ``.venv/bin/python tools/gen_cli_docs.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import shellingham
import typer
from typer.testing import CliRunner

from lahar.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
REGENERATE = "regenerate docs/cli.md with .venv/bin/python tools/gen_cli_docs.py"


def all_commands() -> list[tuple[tuple[str, ...], object]]:
    found, todo = [], [(("lahar",), typer.main.get_command(app))]
    while todo:
        path, command = todo.pop(0)
        found.append((path, command))
        if hasattr(command, "list_commands"):
            context = command.context_class(command)
            todo += [((*path, name), command.get_command(context, name)) for name in command.list_commands(context)]
    return found


COMMANDS = all_commands()
IDS = [" ".join(path) for path, _ in COMMANDS]


def sections() -> dict[str, str]:
    parts = re.split(r"^## (lahar[^\n]*)$", DOC.read_text(encoding="utf-8"), flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_the_cli_has_every_command_of_the_spec():
    names = set(IDS)
    for expected in ("queue create", "queue list", "queue get", "queue update", "queue delete", "queue operate", "queue tree",
                     "job run", "job list", "job view", "job delete", "job why", "apply", "get", "delete", "simulate", "server"):  # fmt: skip
        assert f"lahar {expected}" in names


@pytest.mark.parametrize("path,command", COMMANDS, ids=IDS)
def test_every_command_and_option_is_in_docs_cli_md(path, command):
    documented = sections()
    name = " ".join(path)
    assert name in documented, f"{name} is missing from docs/cli.md: {REGENERATE}"
    for param in getattr(command, "params", []):
        for option in [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]:
            assert option in documented[name], f"{name} {option} is missing from docs/cli.md: {REGENERATE}"


@pytest.mark.parametrize("path,command", [(p, c) for p, c in COMMANDS if len(p) > 1], ids=IDS[1:])
def test_every_command_has_help_with_an_example(path, command):
    assert command.epilog and "lahar " in command.epilog and "Example" in command.epilog, " ".join(path)
    result = CliRunner().invoke(app, [*path[1:], "--help"], prog_name="lahar", env={"TERMINAL_WIDTH": "100"})
    assert result.exit_code == 0 and "Example" in result.stdout


def test_docs_cli_md_lists_no_command_that_is_gone():
    assert set(sections()) <= set(IDS), f"docs/cli.md documents commands the CLI lacks: {REGENERATE}"


def test_shell_completion_script_and_kind_completion(monkeypatch):
    # --show-completion takes no shell: it asks shellingham for the shell the process runs under,
    # which is whatever started the tests (none found: exit 1), so the shell is given here
    monkeypatch.setattr(shellingham, "detect_shell", lambda *args, **kwargs: ("bash", "/bin/bash"))
    script = CliRunner().invoke(app, ["--show-completion"], prog_name="lahar")
    assert script.exit_code == 0 and "_LAHAR_COMPLETE=complete_bash" in script.stdout, (script.output, script.exception)

    def complete(words: str) -> list[str]:
        env = {"_LAHAR_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        return CliRunner().invoke(app, [], prog_name="lahar", env=env).stdout.split()

    assert complete("lahar get p") == ["podgroup", "pod", "priorityclass"]
    assert complete("lahar queue op") == ["operate"]
