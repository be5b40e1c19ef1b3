"""``lahar job`` against a real server: run (file and quick form), list with positions, view,
why and delete, with their usage and server errors. Names here start with ``jc-``."""

from __future__ import annotations

import json

import pytest
import yaml
from test_queue_cli import eventually, flat, make_cli, rows, shared_server, subprocess_cli

HIGH = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: jc-high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: jc-low}
value: 10
"""

JOB_FILE = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: jc-file}
spec:
  queue: jc-open
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: w, image: busybox, resources: {requests: {cpu: "1"}}}]}}
"""


@pytest.fixture(scope="module")
def live():
    return shared_server()


@pytest.fixture(scope="module")
def cli(live):
    cli = make_cli(live)
    assert cli("queue", "create", "-n", "jc-open").exit_code == 0
    assert cli("queue", "create", "-n", "jc-wait", "--state", "Suspended").exit_code == 0
    assert cli("apply", "-f", "-", input=HIGH).exit_code == 0
    return cli


def pod_phases(cli, job: str) -> list[str]:
    """The phases of the job's pods; a pod not yet bound has no status at all (an empty one is
    not stored) and reads Pending, as it does with a status but no phase."""
    listing = json.loads(cli("get", "pods", "-o", "json").stdout)["items"]
    return [(p.get("status") or {}).get("phase", "Pending") for p in listing if p["metadata"]["labels"].get("volcano.sh/job-name") == job]


# --------------------------------------------------------------------- run


def test_quick_form_builds_the_vcjob_and_the_command_after_dashes(cli):
    result = cli("job", "run", "-n", "jc-quick", "-q", "jc-open", "--replicas", "3", "--min", "2", "--cpu", "500m",
                 "--memory", "1Gi", "--gpu", "1", "-R", "example.com/fpga=1", "--image", "python:3", "--priority-class", "jc-high",
                 "--duration", "1h", "--", "python", "train.py", "--epochs", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "run job jc-quick successfully"
    job = json.loads(cli("job", "view", "-n", "jc-quick", "-o", "json").stdout)
    assert job["spec"]["queue"] == "jc-open" and job["spec"]["minAvailable"] == 2 and job["spec"]["priorityClassName"] == "jc-high"
    assert job["metadata"]["annotations"]["lahar.dev/duration"] == "1h"
    task = job["spec"]["tasks"][0]
    container = task["template"]["spec"]["containers"][0]
    assert task["replicas"] == 3 and container["image"] == "python:3"
    assert container["command"] == ["python", "train.py", "--epochs", "3"]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1", "example.com/fpga": "1"}


def test_run_from_a_vcjob_file_then_it_runs(cli, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB_FILE)
    result = cli("job", "run", "-f", str(path))
    assert result.exit_code == 0 and result.stdout.strip() == "run job jc-file successfully"
    eventually(lambda: rows(cli("job", "list", "-q", "jc-open").stdout)["jc-file"][2] == "Running", what="jc-file running")
    listing = rows(cli("job", "list", "-q", "jc-open").stdout)
    assert listing["jc-file"][1:10] == ["jc-open", "Running", "2", "2", "0", "2", "0", "0", "-"]


@pytest.mark.parametrize(
    "args,code,message",
    [
        (("job", "run", "--cpu", "1"), 2, "job name cannot be left blank"),
        (("job", "run", "-n", "jc-x", "-q", "jc-none"), 1, "jc-none"),
        (("job", "run", "-n", "jc-x", "--replicas", "1", "--min", "3"), 1, "minAvailable"),
        (("job", "run", "-f", "/nonexistent/job.yaml"), 1, "error: /nonexistent/job.yaml: no such file"),
        (("job", "run", "-n", "Bad_Job"), 1, 'error: Job "Bad_Job" is invalid'),
        (("job", "view"), 2, "Missing option"),
        (("job", "view", "-n", "jc-none"), 1, 'error: Job "default/jc-none" not found'),
        (("job", "why", "-n", "jc-none"), 1, "not found"),
        (("job", "delete", "-n", "jc-none"), 1, 'error: Job "default/jc-none" not found'),
        (("job", "list", "-o", "csv"), 2, "Invalid value for '--output'"),
    ],
)
def test_errors_and_exit_codes(cli, args, code, message):
    result = cli(*args)
    assert result.exit_code == code, result.output
    assert message in flat(result.output)


def test_run_file_refuses_other_kinds(cli):
    result = cli("job", "run", "-f", "-", input="apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    assert result.exit_code == 1 and "job run takes vcjobs" in result.stderr


# --------------------------------------------------------------------- list, positions


def test_positions_follow_priority_then_creation(cli):
    for name, extra in (("jc-low-a", ["--priority-class", "jc-low"]), ("jc-high-b", ["--priority-class", "jc-high"]), ("jc-none-c", [])):
        assert cli("job", "run", "-n", name, "-q", "jc-wait", *extra).exit_code == 0
    eventually(lambda: rows(cli("job", "list", "-q", "jc-wait").stdout).get("jc-none-c", [""] * 10)[9] == "3/3", what="positions")
    table = rows(cli("job", "list", "-q", "jc-wait").stdout)
    assert {name: table[name][9] for name in table} == {"jc-high-b": "1/3", "jc-low-a": "2/3", "jc-none-c": "3/3"}
    wide = cli("job", "list", "-q", "jc-wait", "-o", "wide").stdout
    assert wide.splitlines()[0].split()[-2:] == ["Priority", "Reason"]
    assert "queue jc-wait is suspended" in next(line for line in wide.splitlines() if line.startswith("jc-low-a"))


def test_list_namespaces_and_formats(cli):
    assert cli("job", "run", "-n", "jc-elsewhere", "-q", "jc-open", "--namespace", "team-a").exit_code == 0
    assert "jc-elsewhere" not in cli("job", "list").stdout
    assert rows(cli("job", "list", "--namespace", "team-a").stdout)["jc-elsewhere"][1] == "jc-open"
    everywhere = cli("job", "list", "-A").stdout
    assert everywhere.splitlines()[0].split()[:2] == ["Namespace", "Name"]
    assert any(line.split()[:2] == ["team-a", "jc-elsewhere"] for line in everywhere.splitlines())
    assert cli("job", "list", "--namespace", "nobody").stdout.strip() == "No resources found"
    document = json.loads(cli("job", "list", "-q", "jc-open", "-o", "json").stdout)
    assert document["kind"] == "JobList" and all(j["spec"]["queue"] == "jc-open" for j in document["items"])
    assert yaml.safe_load(cli("job", "list", "-A", "-o", "yaml").stdout)["items"]


# --------------------------------------------------------------------- why, view, delete


def test_why_prints_the_structured_reason_and_position(cli):
    assert cli("job", "run", "-n", "jc-why", "-q", "jc-wait").exit_code == 0
    eventually(lambda: "queue-suspended" in cli("job", "why", "-n", "jc-why").stdout, what="a reason")
    text = cli("job", "why", "-n", "jc-why").stdout.splitlines()
    assert text[0].startswith("job default/jc-why (queue jc-wait) is Pending: position ")
    assert text[1:3] == ["reason: queue-suspended", "  queue jc-wait is suspended"]
    document = json.loads(cli("job", "why", "-n", "jc-why", "-o", "json").stdout)
    assert document["reason"]["kind"] == "queue-suspended" and document["position"]["index"] >= 1
    assert document["estimate"]["admitted"] and document["estimate"]["expectedStart"] is None
    assert "estimate: not expected to start within 7d" in "\n".join(text)
    assert yaml.safe_load(cli("job", "why", "-n", "jc-why", "-o", "yaml").stdout)["phase"] == "Pending"


def test_dry_run_submits_nothing_and_answers_admission_and_start(cli, tmp_path):
    result = cli("job", "run", "-n", "jc-dry", "-q", "jc-open", "--cpu", "100m", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "job default/jc-dry: would start now (dry run, nothing submitted)"
    assert cli("job", "view", "-n", "jc-dry").exit_code == 1
    path = tmp_path / "job.yaml"
    path.write_text(JOB_FILE.replace("jc-open", "jc-missing"))
    refused = cli("job", "run", "-f", str(path), "--dry-run")
    assert refused.exit_code == 1
    assert "job default/jc-file: would be refused: " in refused.stdout and "jc-missing" in refused.stdout


def test_why_of_a_running_job_says_it_is_not_waiting(cli):
    assert cli("job", "run", "-n", "jc-runs", "-q", "jc-open").exit_code == 0
    eventually(lambda: "it is not waiting" in cli("job", "why", "-n", "jc-runs").stdout, what="running")
    assert json.loads(cli("job", "why", "-n", "jc-runs", "-o", "json").stdout)["position"] is None


def test_view_describes_tasks_pods_and_events(cli):
    assert cli("job", "run", "-n", "jc-view", "-q", "jc-open", "--replicas", "2", "--cpu", "1").exit_code == 0
    eventually(lambda: "Phase:          Running" in cli("job", "view", "-n", "jc-view").stdout, what="jc-view running")
    text = cli("job", "view", "-N", "jc-view").stdout
    assert "Name:           jc-view" in text and "Queue:          jc-open" in text and "Phase:          Running" in text
    assert "Tasks:" in text and "Pods:" in text and "jc-view-main-1   Running   big" in text
    assert "create Job default/jc-view" in text
    assert yaml.safe_load(cli("job", "view", "-n", "jc-view", "-o", "yaml").stdout)["kind"] == "Job"


def test_delete_removes_the_job_its_podgroup_and_pods(cli):
    assert cli("job", "run", "-n", "jc-gone", "-q", "jc-open", "--replicas", "2").exit_code == 0
    eventually(lambda: len(pod_phases(cli, "jc-gone")) == 2, what="pods")
    result = cli("job", "delete", "-n", "jc-gone")
    assert result.exit_code == 0 and result.stdout.strip() == "delete job jc-gone successfully"
    assert cli("get", "pg", "jc-gone").exit_code == 1
    eventually(lambda: pod_phases(cli, "jc-gone") == [], timeout=5, what="pods deleted")


def test_real_subprocess_run_and_list(live):
    run = subprocess_cli(live, "job", "run", "-n", "jc-sub", "-q", "jc-open", "--", "sleep", "1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "run job jc-sub successfully"
    listing = subprocess_cli(live, "job", "list", "-q", "jc-open")
    assert listing.returncode == 0 and "jc-sub" in listing.stdout
    assert subprocess_cli(live, "job", "why", "-n", "jc-nothing").returncode == 1
