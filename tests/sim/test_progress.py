"""Where a long replay stands: ``ReplayProgress`` on the head of the Philly trace, and
``lahar simulate --progress`` as users run it (a real subprocess, the progress on stderr)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

from lahar.duration import format_duration
from lahar.sim.compare import run_replay
from lahar.sim.progress import ProgressSettings, ReplayProgress
from trace_slice import SLICE, slice_at_start

ROOT = Path(__file__).resolve().parents[2]
LAHAR = [sys.executable, "-m", "lahar.cli.main"]
CLUSTER = "3 x cpu=64,memory=512Gi,gpu=8"  # too small for the slice: a backlog, one job never runs


class Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def replayed(interval: float, in_place: bool = False, limit: int = 60) -> tuple[ReplayProgress, str, object]:
    sim, position = slice_at_start(CLUSTER, limit)
    stream = io.StringIO()
    shown = ReplayProgress(ProgressSettings(limit, "", in_place, interval), stream, Ticks())
    sim.observers.append(shown)
    run_replay(sim, position)
    shown.finish(sim)
    return shown, stream.getvalue(), sim


def test_the_last_line_says_where_the_replay_ended():
    shown, text, sim = replayed(interval=10**9)
    assert shown.lines == 1  # nothing before the end: the interval never passed
    completed = sum(1 for g in sim.world.podgroups.values() if g.status.phase == "Completed")
    assert 0 < completed < 60  # the backlog on three nodes leaves a job that never runs
    elapsed = format_duration(sim.cycle_count + 1)  # the clock was read at the start, each cycle and at the end
    share = f"{100 * completed / 60:.1f}%"
    expected = f"replay: cycle {sim.cycle_count:,}, simulated {format_duration(sim.now)}; jobs: 60 of 60 arrived, {completed} finished ({share}); {elapsed} elapsed\n"
    assert text == expected


def test_a_line_at_most_every_interval_of_wall_time():
    shown, text, sim = replayed(interval=50)
    lines = text.splitlines()
    # the clock moves a second at each read: one read at the start, one each cycle, one at the end
    assert shown.lines == len(lines) == sim.cycle_count // 50 + 1
    cycles = [int(re.search(r"cycle ([\d,]+),", line).group(1).replace(",", "")) for line in lines[:-1]]
    assert cycles == [50 * k for k in range(1, len(lines))]
    arrived = [int(line.split("jobs: ")[1].split(" of")[0]) for line in lines]
    assert arrived == sorted(arrived) and arrived[-1] == 60


def test_on_a_terminal_one_line_is_rewritten_in_place():
    shown, text, sim = replayed(interval=50, in_place=True)
    assert shown.lines > 2
    assert text.count("\n") == 1 and text.endswith("\x1b[K\n")  # one line, ended once, at the end
    assert text.count("\r") == shown.lines and text.startswith("\rreplay: cycle 50,")


def lahar(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LAHAR, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


TRACE = ("simulate", "--trace", f"philly:{SLICE}", "--limit-jobs", "40", "--cluster", CLUSTER, "-o", "json")


def test_simulate_progress_goes_to_stderr_and_leaves_the_json_alone():
    shown, plain = lahar(*TRACE, "--progress"), lahar(*TRACE)
    assert shown.returncode == 0 and plain.returncode == 0, shown.stderr + plain.stderr
    assert shown.stdout == plain.stdout  # the same replay, the same JSON
    out = json.loads(shown.stdout)
    last = [line for line in shown.stderr.splitlines() if line.startswith("replay: ")][-1]
    assert "jobs: 40 of 40 arrived" in last
    finished = sum(1 for job in out["metrics"]["jobs"].values() if job.get("end") is not None)
    assert f", {finished} finished (" in last


def test_not_on_a_terminal_no_progress_unless_asked():
    assert "replay:" not in lahar(*TRACE).stderr  # stderr is a pipe here
    assert "replay:" not in lahar(*TRACE, "--no-progress").stderr


def test_a_comparison_shows_each_side_on_lines_of_its_own():
    result = lahar(*TRACE, "--compare", "default", "volcano", "--progress")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "replay: " in line]
    assert {line.split(": replay")[0] for line in lines} == {"default", "volcano"}
    assert "\r" not in result.stderr


def test_a_run_of_manifests_shows_its_progress_when_asked():
    result = lahar("simulate", "examples/seeds/2-lend-and-reclaim.yaml", "--until", "2m", "-o", "json", "--progress")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cycles"]  # stdout is the JSON alone
    last = result.stderr.splitlines()[-1]
    assert re.fullmatch(r"replay: cycle \d+, simulated \S+; jobs: 3 of 3 arrived, 0 finished \(0\.0%\); \S+ elapsed", last), last
