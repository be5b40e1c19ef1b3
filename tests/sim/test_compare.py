"""Side-by-side runs and the ``lahar simulate`` trace options, end to end as users run them."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from lahar.errors import BadRequest
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, differences, read_side, replay, replay_position, run_replay
from lahar.sim.engine import Simulation
from lahar.sim.inputs import resolve_config
from lahar.sim.traces import build_workload, parse_cluster

ROOT = Path(__file__).resolve().parents[2]
LAHAR = [sys.executable, "-m", "lahar.cli.main"]
TRACES = Path(os.environ.get("LAHAR_TRACES") or Path(__file__).resolve().parents[3] / "shared" / "traces")
PHILLY = TRACES / "philly-derived" / "philly.csv"
ALIBABA = TRACES / "alibaba-gpu-v2023"
needs_traces = pytest.mark.skipif(not PHILLY.is_file() or not ALIBABA.is_dir(), reason="the shared traces are not on this machine")

JOBS = "submit,duration,queue,tasks,cpu\n0,10,x,1,1\n0,10,x,1,1\n0,10,y,1,1\n5,10,y,1,1\n"
CAPPED = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: x}
spec: {weight: 1, capability: {cpu: "1"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: y}
spec: {weight: 1}
"""
OPEN = CAPPED.replace(', capability: {cpu: "1"}', "")


def lahar(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LAHAR, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture()
def files(tmp_path):
    for name, text in {"jobs.csv": JOBS, "capped.yaml": CAPPED, "open.yaml": OPEN}.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_capability_cap_makes_one_queue_wait_and_the_comparison_shows_it(files):
    """Team x caps itself at 1 CPU (A) or not (B) on a 4-CPU node: its second job waits 10 s
    under A and starts at once under B; team y is not affected."""
    result = lahar(
        "simulate", "--trace", f"csv:{files / 'jobs.csv'}", "--cluster", "1 x cpu=4,memory=8Gi",
        "--compare", str(files / "capped.yaml"), str(files / "open.yaml"),
        "-o", "json", "--report", str(files / "cmp.html"), "--metrics", str(files / "cmp.json"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [s["label"] for s in out["sides"]] == ["capped", "open"]
    x, y = out["differences"]["queues"]["x"], out["differences"]["queues"]["y"]
    assert x["wait_p50"] == [5.0, 0.0, -5.0] and x["wait_p90"] == [9.0, 0.0, -9.0]
    assert y["wait_p90"] == [0.0, 0.0, 0.0] and x["evictions"] == [0, 0, 0]
    assert x["usage_share"] == [0.5, 0.5, 0.0]
    assert out["differences"]["summary"]["time"] == [20.0, 15.0, -5.0]
    assert json.loads((files / "cmp.json").read_text()) == out
    page = (files / "cmp.html").read_text()
    assert page.count("<img") == 7 and "capped" in page and "open" in page


def test_compare_table_names_both_sides(files):
    result = lahar("simulate", "--trace", f"csv:{files / 'jobs.csv'}", "--cluster", "1 x cpu=4", "--compare", str(files / "capped.yaml"), str(files / "open.yaml"))
    assert result.returncode == 0, result.stderr
    assert "A: capped" in result.stdout and "B: open" in result.stdout and "Δ p50" in result.stdout


def test_sides_are_queue_files_scheduler_configurations_or_bundled_names(files):
    capped = read_side(str(files / "capped.yaml"))
    assert (capped.label, [q.name for q in capped.queues], capped.conf) == ("capped", ["x", "y"], None)
    with_conf = files / "capacity.yaml"
    with_conf.write_text(CAPPED + "---\napiVersion: lahar.dev/v1alpha1\nkind: SchedulerConfiguration\nactions: allocate\ntiers:\n- plugins:\n  - name: capacity\n")
    assert read_side(str(with_conf)).conf.actions == ["allocate"]
    conf_file = files / "sched.yaml"
    conf_file.write_text("actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n")
    side = read_side(str(conf_file))
    assert side.queues is None and side.conf.actions == ["enqueue", "allocate"]
    assert read_side("capacity").conf is not None
    with pytest.raises(BadRequest, match="--compare: missing.yaml: no such file"):
        read_side("missing.yaml")


def test_differences_are_b_minus_a_with_none_where_undefined():
    def metrics(p50, share):
        return {"summary": {"capacity": {"cpu": 4.0}, "utilisation": {"cpu": 0.5}}, "queues": {"q": {"wait_p50": p50, "usage_share": {"cpu": share}}}}

    diff = differences(metrics(10.0, 0.25), metrics(None, 0.75))
    assert diff["resource"] == "cpu"
    assert diff["queues"]["q"]["wait_p50"] == [10.0, None, None] and diff["queues"]["q"]["usage_share"] == [0.25, 0.75, 0.5]


@needs_traces
def test_replay_skips_repeated_pipelines_and_decides_the_same():
    """A Philly gang that fits only in part keeps re-pipelining one task: the engine's run_until
    steps every second meanwhile, replay jumps to the next event, and every bind and eviction
    is the same."""
    workload = build_workload(f"philly:{PHILLY}", limit=60, cluster=["24 x cpu=64,memory=512Gi,nvidia.com/gpu=8"], speedup=20.0)

    def decisions(run):
        objects, _ = workload.objects(None)
        seen = []
        sim = Simulation(objects, resolve_config(None, []), observers=[lambda s, r: seen.extend((r.time, d.type, d.task) for d in r.result.decisions if d.type != "pipeline")])
        sim.keep_cycles = False
        run(sim, objects)
        return seen, sim.cycle_count

    slow, slow_cycles = decisions(lambda sim, objects: sim.run_until(float("inf")))
    fast, fast_cycles = decisions(lambda sim, objects: replay(sim, objects, Clock(1.0)))
    assert fast == slow and fast_cycles < slow_cycles / 2


@needs_traces
def test_philly_replay_end_to_end_json_metrics_and_report(tmp_path):
    result = lahar(
        "simulate", "--trace", f"philly:{PHILLY}", "--limit-jobs", "40", "--speedup", "10",
        "-o", "json", "--metrics", str(tmp_path / "m.json"), "--report", str(tmp_path / "r.html"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "note: no nodes given: replaying on the default cluster" in result.stderr
    out = json.loads(result.stdout)
    assert set(out) >= {"cycles", "queues", "jobs", "tasks", "metrics", "trace"}
    assert out["trace"]["jobs"] == 40 and out["metrics"]["summary"]["jobs"] == 40
    assert out["metrics"]["summary"]["started"] + out["metrics"]["summary"]["never_started"] == 40
    assert out["cycles"][0]["time"] == 0.0 and out["cycles"][0]["decisions"][0]["type"] == "bind"
    assert json.loads((tmp_path / "m.json").read_text()) == out["metrics"]
    assert (tmp_path / "r.html").read_text().count("data:image/png;base64,") == 3


@needs_traces
def test_alibaba_replay_on_its_own_nodes_with_a_queues_file_missing_a_key(tmp_path):
    queues = tmp_path / "queues.yaml"
    queues.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: ls}\nspec: {weight: 4}\n")
    result = lahar("simulate", "--trace", f"alibaba:{ALIBABA}", "--limit-jobs", "30", "--queues", str(queues), "--speedup", "1000")
    assert result.returncode == 0, result.stderr
    assert "warning: trace queue keys with no leaf queue of that name go to queue default: BE" in result.stderr
    assert "note: no nodes given" not in result.stderr
    assert "What-if summary" in result.stdout and "30 / " in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--trace", "csv:nope.csv"], "nope.csv: no such file"),
        (["--trace", "slurm:x"], '--trace: Invalid value: "slurm:x"'),
        (["examples/seeds/1-weights-split.yaml", "--speedup", "2"], "--speedup: only with --trace"),
        (["examples/seeds/1-weights-split.yaml", "--queues", "q.yaml"], "--queues: only with --trace or --compare"),
        (["--compare", "default", "capacity"], "--compare: give a workload"),
    ],
)
def test_cli_errors_are_messages_not_tracebacks(args, message):
    result = lahar("simulate", *args)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_a_bad_csv_row_is_reported_by_the_cli(files):
    (files / "bad.csv").write_text("submit,duration,queue,tasks,cpu\n0,10,x,1,1\n0,ten,x,1,1\n")
    result = lahar("simulate", "--trace", f"csv:{files / 'bad.csv'}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{files / 'bad.csv'}: line 3, column duration: 'ten' must be a duration" in result.stderr


def test_a_replay_paused_pickled_and_resumed_decides_as_one_run_straight_through():
    """What ``bench/checkpoint.py`` does: the second half, resumed from a pickle, decides as the
    second half of one run straight through."""

    def started() -> tuple:
        workload = build_workload(f"philly:{ROOT / 'tests' / 'data' / 'traces' / 'philly-head.csv'}", limit=120)
        workload.nodes = parse_cluster(["4 x cpu=64,memory=512Gi,gpu=8"])  # small: jobs wait
        objects, _ = workload.objects(None)
        seen: list = []
        sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=[lambda s, r: seen.append((r.time, [(d.type, d.task, d.node) for d in r.result.decisions]))])
        sim.keep_cycles = False
        return sim, replay_position(objects, Clock(1.0, None, None)), seen

    sim, position, straight = started()
    assert not run_replay(sim, position)  # to the end
    sim, position, first = started()
    assert run_replay(sim, position, cycles=len(straight) // 2)
    sim.observers = []  # a lambda does not pickle
    sim, position = pickle.loads(pickle.dumps((sim, position)))
    rest: list = []
    sim.observers = [lambda s, r: rest.append((r.time, [(d.type, d.task, d.node) for d in r.result.decisions]))]
    assert not run_replay(sim, position)
    assert first + rest == straight
    assert any(decisions for _, decisions in straight)


_RESUME = """
import json, pickle, sys
from lahar.resources import request_id
from lahar.sim.compare import run_replay
with open(sys.argv[1], "rb") as source:
    sim, position = pickle.load(source)
# this process numbers the requests it knows in the other order than the process that saved
shapes = {}
for task in sim.world.cache.tasks.values():
    shapes.setdefault((task.resreq.milli_cpu, task.resreq.memory, tuple((task.resreq.scalars or {}).items())), task.resreq)
for resreq in reversed(list(shapes.values())):
    request_id(resreq)
rest = []
sim.observers = [lambda s, r: rest.append((r.time, [[d.type, d.task, d.node] for d in r.result.decisions]))]
run_replay(sim, position)
print(json.dumps(rest))
"""


def test_a_replay_pickled_in_one_process_and_resumed_in_another_decides_as_one_run(tmp_path):
    """``bench/checkpoint.py`` saves in one process and resumes in another, which numbers the
    requests it knows in its own order (``request_id``): the second part decides as in one run.
    (That a pickled task leaves its number behind is checked in tests/unit/test_request_id.py:
    this slice decides the same either way.)"""

    def started() -> tuple:
        workload = build_workload(f"philly:{ROOT / 'tests' / 'data' / 'traces' / 'philly-head.csv'}", limit=120)
        workload.nodes = parse_cluster(["4 x cpu=64,memory=512Gi,gpu=8"])  # small: jobs wait
        objects, _ = workload.objects(None)
        seen: list = []
        sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=[lambda s, r: seen.append((r.time, [[d.type, d.task, d.node] for d in r.result.decisions]))])
        sim.keep_cycles = False
        return sim, replay_position(objects, Clock(1.0, None, None)), seen

    sim, position, straight = started()
    assert not run_replay(sim, position)
    sim, position, first = started()
    assert run_replay(sim, position, cycles=len(straight) // 3)
    sim.observers = []
    saved = tmp_path / "replay.pkl"
    saved.write_bytes(pickle.dumps((sim, position)))
    resumed = subprocess.run([sys.executable, "-c", _RESUME, str(saved)], capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": "1"})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    rest = [tuple(entry) for entry in json.loads(resumed.stdout)]
    assert first + rest == straight
