"""``bench/targets.py`` measures the performance targets as bench/README reports them: each
benchmark run several times in processes of its own, the medians of their figures, the verdict
on the medians against the goal, and the digests the runs printed. Run here at the small sizes
(``--small``: no verdicts), with the verdict's rule checked on its own."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

from bench_programs import BENCH, bench_program


def _targets(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / "targets.py"), *args], capture_output=True, text=True, timeout=300, env=env)


def test_small_runs_give_each_run_the_medians_and_one_digest():
    done = _targets("--small", "--runs", "3", "--only", "cycle,reclaim")
    assert done.returncode == 0, done.stderr
    *targets, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["target"] for line in targets] == ["cycle", "reclaim"]
    assert summary == {"bench": "targets", "small": True, "verdicts": {"cycle": None, "reclaim": None}}
    for line in targets:
        assert line["runs"] == 3 and line["verdict"] is None and line["unclean"] == []
        assert set(line["medians"]) == set(line["figures"])
        for name, values in line["figures"].items():
            assert len(values) == 3 and line["medians"][name] == statistics.median(values)
        assert len(line["digests"]) == 1  # the same cluster decided alike every run
    cycle, reclaim = targets
    assert cycle["command"] == "python bench/cycle.py --nodes 50 --pods 500 --queues 5"
    assert cycle["goal"] == "pods_per_second >= 10000 and peak_rss_mib <= 1024"
    assert set(cycle["figures"]["placed"]) == {cycle["medians"]["placed"]} and cycle["medians"]["placed"] > 0
    assert reclaim["goal"] == "cycle_seconds <= 1" and reclaim["medians"]["evicted"] > 0


CASES = [
    ("cycle", {"pods_per_second": 26_114, "peak_rss_mib": 438.6}, "met"),
    ("cycle", {"pods_per_second": 9_999, "peak_rss_mib": 438.6}, "not met"),
    ("cycle", {"pods_per_second": 26_114, "peak_rss_mib": 1_025}, "not met"),
    ("cycle", {"pods_per_second": 10_000, "peak_rss_mib": 1_024}, "met"),  # on the bound
    ("cycle", {"pods_per_second": 26_114}, "not met"),  # a figure missing
    ("reclaim", {"cycle_seconds": 0.482}, "met"),
    ("reclaim", {"cycle_seconds": 1.2}, "not met"),
    ("api", {"pods_bound_per_second": 376.8}, "not met"),
    ("api", {"pods_bound_per_second": 1_000}, "met"),
    ("api", {"pods_bound_per_second": 1_200, "failed_submits": 1}, "met"),  # the median: see the next test
    ("philly", {"total_seconds": 2_522.4}, "not met"),
    ("philly", {"total_seconds": 59.0}, "met"),
]


@pytest.mark.parametrize("name,medians,expected", CASES)
def test_the_verdict_keeps_every_bound_of_the_medians(name, medians, expected):
    targets = bench_program("targets")
    assert targets.verdict(targets.BY_NAME[name], medians) == expected


def test_a_failed_run_stops_it_with_the_runs_error(tmp_path):
    env = {**os.environ, "LAHAR_TRACES": str(tmp_path)}  # no trace there: the replay cannot start
    done = _targets("--small", "--runs", "1", "--only", "philly", env=env)
    assert done.returncode == 1 and done.stdout == "" and "philly.csv: no such file" in done.stderr
    assert "targets.py: a run failed: philly: python bench/trace.py philly --limit-jobs 200 exited 1 (its error above)" in done.stderr


def test_a_failed_submit_in_any_run_leaves_the_api_target_not_met():
    targets = bench_program("targets")
    assert targets.verdict(targets.BY_NAME["api"], {"pods_bound_per_second": 1_200}, ["failed_submits"]) == "not met"
    assert targets.verdict(targets.BY_NAME["api"], {"pods_bound_per_second": 1_200}, []) == "met"


@pytest.mark.parametrize(
    "only,with_trace,expected",
    [
        (None, False, ("cycle", "reclaim", "api")),
        (None, True, ("cycle", "reclaim", "api", "philly")),
        (("api", "cycle"), False, ("cycle", "api")),  # in the order of the targets
        (("cycle",), True, ("cycle", "philly")),
        (("philly",), False, ("philly",)),
        (("cycle", "cycle"), False, ("cycle",)),  # each once
    ],
)
def test_the_targets_chosen(only, with_trace, expected):
    assert bench_program("targets").chosen(only, with_trace) == expected


def test_a_run_without_a_figure_the_target_reads_stops_it():
    targets = bench_program("targets")
    bogus = targets.Target("bogus", "cycle.py", (), ("--nodes", "5", "--pods", "5", "--queues", "2"), (targets.Limit("no_such_figure", 1, True),))
    with pytest.raises(targets.RunFailed, match="bogus: python bench/cycle.py --nodes 5 --pods 5 --queues 2 printed no figure no_such_figure"):
        targets.measure(bogus, 1, small=True)
