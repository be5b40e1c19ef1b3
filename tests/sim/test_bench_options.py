"""The command lines of the programs under ``bench/``: ``--help`` explains every option and
argument, with its default; a value against an option's rule is refused with a usage error
(exit 2) that names the option and the rule, before any work starts, never a traceback."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import subprocess
import sys
from types import ModuleType

import pytest

from bench_programs import BENCH, bench_program

PROGRAMS = sorted(path.stem for path in BENCH.glob("*.py") if "\ndef main(" in path.read_text() or "\nasync def main(" in path.read_text())


class _Parsed(Exception):
    """Raised in place of parsing: carries the parser a program built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def _run_main(module: ModuleType) -> None:
    called = module.main()
    if inspect.iscoroutine(called):
        asyncio.run(called)


def _parser_of(name: str, monkeypatch) -> argparse.ArgumentParser:
    """The parser ``bench/<name>.py`` builds (it parses nothing: parsing stops the program)."""
    module = bench_program(name)

    def parsed(self, *args, **kwargs):
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
    with pytest.raises(_Parsed) as found:
        _run_main(module)
    return found.value.parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and those of its subcommands."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def _explained(action: argparse.Action) -> list[str]:
    """What is missing from an action's help: its text, or its default."""
    if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
        return []
    if not (action.help or "").strip():
        return ["help"]
    takes_value = action.nargs != 0
    if takes_value and action.default is not None and "%(default)s" not in action.help:
        return ["default"]
    return []


def test_every_program_is_found():
    assert {"api", "cycle", "trace", "loop", "checkpoint", "request", "write"} <= set(PROGRAMS)


@pytest.mark.parametrize("name", PROGRAMS)
def test_help_explains_every_option_and_its_default(name, monkeypatch):
    parser = _parser_of(name, monkeypatch)
    for each in _parsers(parser):
        missing = {"/".join(action.option_strings) or action.dest: gaps for action in each._actions if (gaps := _explained(action))}
        assert not missing, f"{each.prog}: options whose --help lacks these: {missing}"
        text = each.format_help()  # a stray % in a help text fails here
        assert each.description and " ".join(each.description.split()) in " ".join(text.split()), f"{each.prog}: no description"


def _refusal(name: str, argv: list[str], monkeypatch, capsys) -> str:
    """The usage error ``bench/<name>.py argv`` ends with (exit status 2). Arguments that parse
    fail the test at once (the program does not go on to its work)."""
    module = bench_program(name)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    parse = argparse.ArgumentParser.parse_args

    def parse_or_stop(self, *args, **kwargs):
        parse(self, *args, **kwargs)
        raise AssertionError(f"{name} {argv}: the command line was taken")

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_or_stop)
    with pytest.raises(SystemExit) as stopped:
        _run_main(module)
    assert stopped.value.code == 2, f"{name} {argv}: exit {stopped.value.code}"
    return capsys.readouterr().err


REFUSED = [
    ("cycle", ["--nodes", "0"], "--nodes", "must be at least 1, not 0"),
    ("cycle", ["--pods", "-1"], "--pods", "must be at least 0, not -1"),
    ("cycle", ["--queues", "0"], "--queues", "must be at least 1, not 0"),
    ("cycle", ["--running", "many"], "--running", "must be a whole number, not 'many'"),
    ("cycle", ["--actions", "enqueue, elsewhere"], "--actions", 'no action "elsewhere"'),
    ("api", ["--jobs", "0"], "--jobs", "must be at least 1, not 0"),
    ("api", ["--clients", "0"], "--clients", "must be at least 1, not 0"),
    ("api", ["--period", "soon"], "--period", "must be a duration"),
    ("api", ["--timeout", "0"], "--timeout", "must be more than 0 seconds"),
    ("floor", ["--requests", "0"], "--requests", "must be at least 1, not 0"),
    ("floor", ["--clients", "-2"], "--clients", "must be at least 1, not -2"),
    ("loop", ["--jobs", "0"], "--jobs", "must be at least 1, not 0"),
    ("loop", ["--per-tick", "0"], "--per-tick", "must be at least 1, not 0"),
    ("store", ["--writes", "0"], "--writes", "must be at least 1, not 0"),
    ("store", ["--rounds", "0"], "--rounds", "must be at least 1, not 0"),
    ("request", ["--rounds", "0"], "--rounds", "must be at least 1, not 0"),
    ("request", ["--concurrent", "0"], "--concurrent", "must be at least 1, not 0"),
    ("write", ["--podgroups", "0"], "--podgroups", "must be at least 1, not 0"),
    ("targets", ["--runs", "0"], "--runs", "must be at least 1, not 0"),
    ("targets", ["--only", "cycle,elsewhere"], "--only", 'no target "elsewhere"'),
    ("targets", ["--only", "cycle,"], "--only", 'no target ""'),
    ("backlog", ["--ticks", "3"], "--ticks", "must be at least 4, not 3"),
    ("backlog", ["--jobs", "0"], "--jobs", "must be at least 1, not 0"),
    ("trace", ["philly", "--limit-jobs", "0"], "--limit-jobs", "must be at least 1, not 0"),
    ("trace", ["philly", "--progress", "-1"], "--progress", "must be at least 0, not -1"),
    ("trace", ["philly", "--profile-cycles", "5"], "--profile-cycles", "must be A:B"),
    ("trace", ["philly", "--profile-cycles", "9:3"], "--profile-cycles", "0 < A < B"),
    ("trace", ["elsewhere"], "kind", "invalid choice: 'elsewhere'"),
    ("idle", ["{missing}"], "cluster", "no such file"),
    ("idle", ["{folder}"], "cluster", "not a file"),
    ("idle", ["{file}", "--cycles", "0"], "--cycles", "must be at least 1, not 0"),
    ("pair", ["{missing}"], "file", "no such file"),
    ("pair", ["{file}", "--cycles", "0"], "--cycles", "must be at least 1, not 0"),
    ("checkpoint", ["save", "0", "{missing}"], "cycle", "must be at least 1, not 0"),
    ("checkpoint", ["save", "100", "{nowhere}"], "file", "no such folder"),
    ("checkpoint", ["save", "100", "{folder}"], "file", "is a folder, not a file"),
    ("checkpoint", ["finish", "{file}", "--out", "{nowhere}"], "--out", "no such folder"),
    ("checkpoint", ["finish", "{file}", "--cpu-before", "-5"], "--cpu-before", "must be at least 0 seconds, not -5"),
    ("checkpoint", ["finish", "{file}", "--cpu-before", "nan"], "--cpu-before", "must be at least 0 seconds, not nan"),
    ("loop", ["--save", "{nowhere}"], "--save", "no such folder"),
    ("checkpoint", ["run", "{missing}"], "file", "no such file"),
    ("checkpoint", ["run", "{file}", "--warm", "-1"], "--warm", "must be at least 0, not -1"),
    ("checkpoint", ["run", "{file}", "--cycles", "0"], "--cycles", "must be at least 1, not 0"),
    ("checkpoint", ["repeat", "{file}", "--times", "0"], "--times", "must be at least 1, not 0"),
    ("checkpoint", ["shapes", "{missing}"], "file", "no such file"),
    ("checkpoint", ["finish", "{file}", "--save-every", "0"], "--save-every", "must be at least 1, not 0"),
    ("checkpoint", ["finish", "{file}", "--progress", "-1"], "--progress", "must be at least 0, not -1"),
]


@pytest.mark.parametrize("name,argv,option,rule", REFUSED, ids=[f"{n}:{' '.join(a)}" for n, a, _, _ in REFUSED])
def test_a_value_against_its_rule_is_refused_naming_option_and_rule(name, argv, option, rule, tmp_path, monkeypatch, capsys):
    saved = tmp_path / "saved.pkl"
    saved.write_bytes(b"not read: the command line is refused first")
    places = {"{missing}": str(tmp_path / "missing.pkl"), "{folder}": str(tmp_path), "{file}": str(saved), "{nowhere}": str(tmp_path / "absent" / "out.pkl")}
    error = _refusal(name, [places.get(word, word) for word in argv], monkeypatch, capsys)
    last = error.strip().splitlines()[-1]
    assert last.startswith(f"{name}.py") and "error: argument" in last, error
    assert option in last and rule in last, error
    assert "Traceback" not in error


def test_a_reclaim_cluster_needs_two_queues():
    """Checked once the options are read (two options together): the last queue's jobs wait for
    room the others hold."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "cycle.py"), "--nodes", "5", "--pods", "5", "--running", "10", "--queues", "1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cycle.py: error: argument --queues: must be at least 2 with --running" in done.stderr
