"""docs/tutorial.md is played, command by command, against a fresh real server.

The page's format (see its introduction): in each ```console block, a line starting with
``$ `` is a command and the lines under it are what it prints (not compared: ages differ). A
command may end with a comment that this test checks: ``# expect: TEXT`` (TEXT, to the end
of the line, appears in stdout or stderr) and ``# exit: N`` (the exit code; 0 when absent).
The scheduler works in the background, so a command whose check fails is run again until it
passes or 30 s have gone by. ``<<EOF`` feeds the lines up to ``EOF`` to the command's stdin.
``lahar server ... &`` is not run: the test starts the server itself and points every
command at it (``LAHAR_SERVER``, ``LAHAR_HOME``). ``lahar`` commands run in-process.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_queue_cli import make_cli, start_server

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
CHECKS = re.compile(r"\s+#\s*((?:exit|expect):.*)$")


@dataclass
class Step:
    line: int
    command: str
    stdin: str | None = None
    exit_code: int = 0
    expect: str | None = None


def _checks(text: str) -> tuple[int, str | None]:
    exit_match = re.search(r"exit:\s*(\d+)", text)
    expect_match = re.search(r"expect:\s*(.+)$", text)
    return (int(exit_match.group(1)) if exit_match else 0, expect_match.group(1).strip() if expect_match else None)


def parse_steps(text: str) -> list[Step]:
    """Every command of every ```console block, in order, with its stdin and its checks."""
    steps, lines, in_block, i = [], text.splitlines(), False, 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            in_block = line.strip() == "```console"
        elif in_block and line.startswith("$ "):
            command, checks = line[2:], ""
            found = CHECKS.search(command)
            if found:
                command, checks = command[: found.start()], found.group(1)
            step = Step(i + 1, command.strip(), None, *_checks(checks))
            if re.search(r"<<\s*'?EOF'?", step.command):
                step.command = re.sub(r"\s*<<\s*'?EOF'?", "", step.command)
                end = lines.index("EOF", i + 1)
                step.stdin, i = "\n".join(lines[i + 1 : end]) + "\n", end
            steps.append(step)
        i += 1
    return steps


def test_the_page_has_the_scenarios_and_checks():
    steps = parse_steps(TUTORIAL.read_text())
    text = TUTORIAL.read_text()
    for scenario in ("Scenario 1:", "Scenario 3:", "Scenario 6:", "Scenario 7:"):
        assert scenario in text
    assert steps[0].command.startswith("lahar server --db memory://") and steps[0].command.endswith("&")
    assert steps[1].command == "lahar apply -f -" and "kind: Node" in steps[1].stdin
    assert sum(1 for s in steps if s.expect) >= 20 and any(s.exit_code == 1 for s in steps)


@pytest.fixture(scope="module")
def server():
    live = start_server()
    yield live
    live.stop()


def run_step(step: Step, cli, env: dict) -> tuple[int, str]:
    if step.command.startswith("lahar "):
        result = cli(*shlex.split(step.command)[1:], input=step.stdin)
        return result.exit_code, result.stdout + result.stderr
    done = subprocess.run(["bash", "-c", step.command], input=step.stdin, capture_output=True, text=True, env=env, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_tutorial_plays_against_a_real_server(server):
    import os

    cli = make_cli(server)
    env = {**os.environ, **{k: v for k, v in server.env.items() if v is not None}}
    for step in parse_steps(TUTORIAL.read_text()):
        if step.command.startswith("lahar server"):
            continue
        deadline = time.monotonic() + 30
        while True:
            code, output = run_step(step, cli, env)
            ok = code == step.exit_code and (step.expect is None or step.expect in output)
            if ok or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ok, f"docs/tutorial.md:{step.line}: $ {step.command}\nexit {code} (wanted {step.exit_code}), expected {step.expect!r} in:\n{output}"
