"""``lahar simulate`` as users run it: a real subprocess, JSON on stdout, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAHAR = [sys.executable, "-m", "lahar.cli.main"]


def lahar(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*LAHAR, *args], cwd=ROOT, capture_output=True, text=True, input=stdin, timeout=120)


def test_json_output_has_the_spec_shape_and_is_byte_identical():
    args = ("simulate", "examples/seeds/2-lend-and-reclaim.yaml", "--until", "2m", "-o", "json")
    first, second = lahar(*args), lahar(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    out = json.loads(first.stdout)
    assert set(out) >= {"cycles", "queues", "jobs", "tasks"}
    assert out["cycles"][0] == {
        "time": 0.0,
        "decisions": [
            {"type": "bind", "task": "default/job1-main-0", "node": "node-1"},
            {"type": "bind", "task": "default/job2-main-0", "node": "node-1"},
        ],
    }
    reclaim = next(c for c in out["cycles"] if any(d["type"] == "evict" for d in c["decisions"]))
    assert reclaim["time"] == 20.0
    assert reclaim["decisions"] == [
        {"type": "evict", "task": "default/job2-main-0", "node": "node-1", "reason": "reclaim"},
        {"type": "pipeline", "task": "default/job3-main-0", "node": "node-1"},
    ]
    assert out["queues"]["test"]["deserved"] == {"cpu": 3.0}
    assert out["queues"]["default"]["share"] == 1.0
    assert out["tasks"]["default/job3-main-0"] == {"status": "Running", "node": "node-1"}
    assert out["jobs"]["default/job1"] == {"phase": "Running", "queue": "default", "reason": None}


def test_cycles_mode_runs_exactly_n_cycles():
    out = json.loads(lahar("simulate", "examples/seeds/1-weights-split.yaml", "--cycles", "1", "-o", "json").stdout)
    assert out["time"] == 0.0
    assert [d["type"] for d in out["cycles"][0]["decisions"]] == ["bind", "bind"]


def test_reads_stdin_and_a_scheduler_configuration_document():
    manifest = (ROOT / "examples/seeds/3-capability-cap.yaml").read_text()
    conf = "\n---\napiVersion: lahar.dev/v1alpha1\nkind: SchedulerConfiguration\nactions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
    result = lahar("simulate", "-", "--cycles", "2", "-o", "json", stdin=manifest + conf)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # without enqueue and without a queue plugin, the capability is not enforced: both jobs run
    assert out["jobs"]["default/job2"]["phase"] in ("Inqueue", "Running")
    assert out["tasks"]["default/job2-main-0"]["status"] == "Running"


def test_table_output_and_default_config():
    table = lahar("simulate", "examples/seeds/6-suspend-resume.yaml", "--until", "20s")
    assert table.returncode == 0
    assert "queue test is suspended" in table.stdout
    printed = lahar("simulate", "--print-default-config")
    assert "actions: \"enqueue, allocate, preempt, reclaim, backfill\"" in printed.stdout


def test_errors_are_messages_not_tracebacks():
    missing = lahar("simulate", "no-such-file.yaml")
    assert missing.returncode == 1 and "no-such-file.yaml: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad_until = lahar("simulate", "examples/seeds/1-weights-split.yaml", "--until", "soon")
    assert bad_until.returncode == 1 and "--until" in bad_until.stderr
    bad_config = lahar("simulate", "examples/seeds/1-weights-split.yaml", "--config", "nope")
    assert bad_config.returncode == 1 and 'no bundled scheduler configuration named "nope"' in bad_config.stderr
    bad_doc = lahar("simulate", "-", stdin="kind: Queue\nmetadata: {name: q}\nspec: {weight: heavy}\n")
    assert bad_doc.returncode == 1 and 'spec.weight: Invalid value: "heavy": must be an integer' in bad_doc.stderr
    both = lahar("simulate", "examples/seeds/1-weights-split.yaml", "--cycles", "2", "--until", "1m")
    assert both.returncode == 1 and "not both" in both.stderr


def test_rejected_objects_are_reported():
    out = json.loads(lahar("simulate", "examples/seeds/7-closing-drains.yaml", "--until", "2m", "-o", "json").stdout)
    assert out["rejected"][0]["name"] == "default/job2"
    assert "Closing" in out["rejected"][0]["message"]
    assert out["queues"]["test"]["state"] == "Closed"


ARRIVING = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, annotations: {lahar.dev/at: "AT"}}
spec: {queue: default, tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}]}
"""


def test_an_arrival_time_that_is_not_a_duration_is_named_not_a_traceback():
    for at, rule in (("soon", "must be a duration such as 90s"), ("9" * 400, "must be a finite duration")):
        run = lahar("simulate", "-", "--until", "10s", stdin=ARRIVING.replace("AT", at))
        assert run.returncode == 1, run.stdout
        assert "Traceback" not in run.stderr
        assert f'Job default/j: annotation lahar.dev/at: "{at}" {rule}' in " ".join(run.stderr.split())
    later = lahar("simulate", "-", "--until", "10s", "-o", "json", stdin=ARRIVING.replace("AT", "5s"))
    assert later.returncode == 0, later.stderr
    binds = [(c["time"], d["task"]) for c in json.loads(later.stdout)["cycles"] for d in c["decisions"]]
    assert binds == [(5.0, "default/j-t-0")]
