"""``lahar apply``, ``lahar get`` and ``lahar delete`` against a real server, for every kind and
alias, every output format, and their errors. Names here start with ``rc-``."""

from __future__ import annotations

import json

import pytest
import yaml
from test_queue_cli import closed_port_url, eventually, flat, make_cli, rows, shared_server, subprocess_cli

from lahar.cli.client import ROUTES
from lahar.cli.resources import resolve_kind

MANIFESTS = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: rc-team}
spec: {weight: 2, capability: {cpu: "8"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: rc-urgent}
value: 500
---
apiVersion: v1
kind: Node
metadata: {name: rc-node, labels: {zone: a}}
status: {allocatable: {cpu: "2", memory: 4Gi}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: rc-job}
spec:
  queue: rc-team
  priorityClassName: rc-urgent
  tasks:
  - name: main
    replicas: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""


@pytest.fixture(scope="module")
def live():
    return shared_server()


@pytest.fixture(scope="module")
def cli(live):
    cli = make_cli(live)
    result = cli("apply", "-f", "-", input=MANIFESTS)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["queue/rc-team created", "priorityclass/rc-urgent created", "node/rc-node created", "job/rc-job created"]
    return cli


def test_route_table_matches_the_server():
    from lahar.server.app import RESOURCES

    assert {r.kind: (r.group_version, r.plural, r.namespaced) for r in RESOURCES} == {k: (r.group_version, r.plural, r.namespaced) for k, r in ROUTES.items()}


# --------------------------------------------------------------------- apply


def test_apply_reads_again_when_the_object_changed_between_its_read_and_its_write(cli, live, tmp_path, monkeypatch):
    """The control loop writes a queue's status whenever its jobs move: an apply that read the
    queue just before gets 409 Conflict on its write, reads the queue again and applies."""
    from lahar.cli.client import LaharClient

    path = tmp_path / "q.yaml"
    path.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: rc-raced}\nspec: {weight: 1}\n")
    assert cli("apply", "-f", str(path)).exit_code == 0
    replace, raced = LaharClient.replace, []

    def replace_after_another_write(self, document, namespace=None):
        if not raced:  # another writer changes the queue after this apply read it
            stored = self.get("Queue", "rc-raced")
            stored["metadata"]["labels"] = {"touched": "yes"}
            raced.append(replace(self, stored))
        return replace(self, document, namespace)

    monkeypatch.setattr(LaharClient, "replace", replace_after_another_write)
    path.write_text(path.read_text().replace("weight: 1", "weight: 4"))
    result = cli("apply", "-f", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["queue/rc-raced configured"]
    stored = json.loads(cli("get", "queue", "rc-raced", "-o", "json").stdout)
    assert stored["spec"]["weight"] == 4 and stored["metadata"]["labels"] == {"touched": "yes"}


def test_apply_again_is_unchanged_and_a_change_is_configured(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS)
    again = cli("apply", "-f", str(path))
    assert again.exit_code == 0
    assert again.stdout.splitlines() == ["queue/rc-team unchanged", "priorityclass/rc-urgent unchanged", "node/rc-node unchanged", "job/rc-job unchanged"]
    path.write_text(MANIFESTS.replace("weight: 2", "weight: 5"))
    changed = cli("apply", "-f", str(path))
    assert changed.stdout.splitlines()[0] == "queue/rc-team configured"
    assert changed.stdout.splitlines()[1:] == ["priorityclass/rc-urgent unchanged", "node/rc-node unchanged", "job/rc-job unchanged"]
    spec = json.loads(cli("get", "queue", "rc-team", "-o", "json").stdout)["spec"]
    assert spec["weight"] == 5 and spec["capability"] == {"cpu": "8"}


def test_apply_reports_a_refused_object_and_goes_on(cli):
    text = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: rc-bad}\nspec: {weight: 0}\n---\n"
    text += "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: rc-after}\n"
    result = cli("apply", "-f", "-", input=text)
    assert result.exit_code == 1
    assert "spec.weight: Invalid value: 0: must be in 1..2147483647" in result.stderr
    assert result.stdout.strip() == "queue/rc-after created"


@pytest.mark.parametrize(
    "text,message",
    [
        ("kind: Queue\nmetadata: {name: rc-a}\n---\n: : :\n", "not valid YAML"),
        ("kind: Queue\nmetadata: {name: rc-a}\n---\nkind: Nope\n", 'kind: Unsupported value: "Nope"'),
        ("kind: Queue\nmetadata: {name: rc-a}\nspec: {weight: many}\n", "spec.weight"),
        ("apiVersion: lahar.dev/v1alpha1\nkind: SchedulerConfiguration\nactions: allocate\n", "not kept by the server"),
    ],
)
def test_apply_sends_nothing_when_a_document_is_unreadable(cli, text, message):
    result = cli("apply", "-f", "-", input=text)
    assert result.exit_code == 1 and message in result.stderr
    assert cli("get", "queue", "rc-a").exit_code == 1


def test_apply_refuses_to_pretend_a_node_status_changed(cli):
    text = MANIFESTS.split("---")[2].replace('cpu: "2"', 'cpu: "3"')
    result = cli("apply", "-f", "-", input=text)
    assert result.exit_code == 1 and "delete the node and apply it again" in result.stderr


def test_apply_a_command_closes_a_queue(cli):
    cli("queue", "create", "-n", "rc-closeme")
    command = "apiVersion: bus.volcano.sh/v1alpha1\nkind: Command\nmetadata: {name: rc-close}\naction: CloseQueue\n"
    command += "target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: rc-closeme}\n"
    assert cli("apply", "-f", "-", input=command).stdout.strip() == "command/rc-close created"
    eventually(lambda: rows(cli("queue", "get", "-n", "rc-closeme").stdout)["rc-closeme"][2] == "Closed", what="closed by command")


def test_apply_missing_file_and_missing_flag(cli):
    assert cli("apply", "-f", "/nonexistent.yaml").exit_code == 1
    assert cli("apply").exit_code == 2


# --------------------------------------------------------------------- get


@pytest.mark.parametrize(
    "names,kind",
    [
        (("queue", "queues", "q", "Queue"), "Queue"),
        (("podgroup", "pg"), "PodGroup"),
        (("job", "jobs", "vcjob"), "Job"),
        (("pod", "pods", "po"), "Pod"),
        (("node", "nodes", "no"), "Node"),
        (("command", "commands"), "Command"),
        (("priorityclass", "pc"), "PriorityClass"),
        (("event", "events", "ev"), "LaharEvent"),
    ],
)
def test_kind_aliases(names, kind):
    assert {resolve_kind(name) for name in names} == {kind}


EXPECTED_HEADERS = {
    "q": ["Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed"],
    "pg": ["Name", "Queue", "Phase", "MinMember", "Running", "Succeeded", "Age"],
    "vcjob": ["Name", "Queue", "Phase", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Position", "Age"],
    "po": ["Name", "Phase", "Node", "PodGroup", "Age"],
    "no": ["Name", "Status", "CPU", "Memory", "GPU", "Age"],
    "pc": ["Name", "Value", "GlobalDefault", "Age"],
    "events": ["Age", "Type", "Reason", "Object", "Message"],
}


@pytest.mark.parametrize("kind", sorted(EXPECTED_HEADERS))
def test_get_every_kind_in_every_format(cli, kind):
    eventually(lambda: "rc-job" in cli("get", "pg").stdout, what="the podgroup")
    table = cli("get", kind)
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[0].split() == EXPECTED_HEADERS[kind]
    wide = cli("get", kind, "-o", "wide")
    assert wide.exit_code == 0 and len(wide.stdout.splitlines()[0].split()) >= len(EXPECTED_HEADERS[kind])
    document = json.loads(cli("get", kind, "-o", "json").stdout)
    assert document["kind"].endswith("List") and document["items"]
    assert yaml.safe_load(cli("get", kind, "-o", "yaml").stdout)["items"]


def test_get_one_object_and_its_columns(cli):
    eventually(lambda: "rc-job" in cli("get", "pg").stdout, what="the podgroup")
    assert rows(cli("get", "no", "rc-node").stdout)["rc-node"][:5] == ["rc-node", "Ready", "2", "4Gi", "-"]
    assert "zone=a" in cli("get", "node", "rc-node", "-o", "wide").stdout
    assert rows(cli("get", "pc", "rc-urgent").stdout)["rc-urgent"][:3] == ["rc-urgent", "500", "false"]
    assert rows(cli("get", "pg", "rc-job").stdout)["rc-job"][:2] == ["rc-job", "rc-team"]
    assert json.loads(cli("get", "vcjob", "rc-job", "-o", "json").stdout)["spec"]["priorityClassName"] == "rc-urgent"
    assert yaml.safe_load(cli("get", "po", "rc-job-main-0", "-o", "yaml").stdout)["kind"] == "Pod"


def test_get_across_namespaces(cli):
    assert cli("job", "run", "-n", "rc-other", "-q", "rc-team", "--namespace", "rc-ns").exit_code == 0
    eventually(lambda: "rc-other-main-0" in cli("get", "pods", "-A").stdout, what="the pod")
    everywhere = cli("get", "pods", "-A").stdout.splitlines()
    assert everywhere[0].split()[0] == "Namespace"
    assert any(line.split()[:2] == ["rc-ns", "rc-other-main-0"] for line in everywhere)
    assert "rc-other" not in cli("get", "pods").stdout
    assert "rc-other-main-0" in cli("get", "pods", "--namespace", "rc-ns").stdout
    assert cli("get", "pg", "--namespace", "rc-empty").stdout.strip() == "No resources found"


@pytest.mark.parametrize(
    "args,code,message",
    [
        (("get", "widgets"), 2, 'unknown kind "widgets"'),
        (("get",), 2, "Missing argument"),
        (("get", "q", "rc-none"), 1, 'error: Queue "rc-none" not found'),
        (("get", "q", "-o", "table", "--server", "ftp://x"), 2, "is not an http"),
        (("delete", "q"), 2, "Missing argument"),
        (("delete", "widgets", "x"), 2, 'unknown kind "widgets"'),
        (("delete", "node", "rc-none"), 1, 'error: Node "rc-none" not found'),
    ],
)
def test_errors_and_exit_codes(cli, args, code, message):
    result = cli(*args)
    assert result.exit_code == code, result.output
    assert message in flat(result.output)


def test_unreachable_exit_3(cli):
    for args in (("get", "q"), ("apply", "-f", "-"), ("delete", "q", "x")):
        result = cli(*args, "--server", closed_port_url(), input="kind: Queue\nmetadata: {name: rc-x}\n")
        assert result.exit_code == 3, result.output
        assert "cannot reach the Lahar server at http://127.0.0.1:" in result.stderr


# --------------------------------------------------------------------- delete


def test_delete_a_job_with_its_podgroup_and_pods_and_a_closed_queue(cli):
    assert cli("job", "run", "-n", "rc-del", "-q", "rc-team").exit_code == 0
    eventually(lambda: cli("get", "pg", "rc-del").exit_code == 0, what="the podgroup")
    result = cli("delete", "vcjob", "rc-del")
    assert result.exit_code == 0 and result.stdout.strip() == "job/rc-del deleted"
    assert cli("get", "pg", "rc-del").exit_code == 1 and cli("get", "po", "rc-del-main-0").exit_code == 1
    cli("queue", "create", "-n", "rc-q1", "--state", "Closed")
    cli("queue", "create", "-n", "rc-q2", "--state", "Closed")
    both = cli("delete", "q", "rc-q1", "rc-q2")
    assert both.exit_code == 0 and both.stdout.splitlines() == ["queue/rc-q1 deleted", "queue/rc-q2 deleted"]


def test_real_subprocess_apply_get_delete(live):
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: rc-sub}\nvalue: 7\n"
    applied = subprocess_cli(live, "apply", "-f", "-", input=text)
    assert applied.returncode == 0 and applied.stdout.strip() == "priorityclass/rc-sub created", applied.stderr
    got = subprocess_cli(live, "get", "pc", "rc-sub", "-o", "json")
    assert got.returncode == 0 and json.loads(got.stdout)["value"] == 7
    deleted = subprocess_cli(live, "delete", "pc", "rc-sub")
    assert deleted.returncode == 0 and deleted.stdout.strip() == "priorityclass/rc-sub deleted"
    assert subprocess_cli(live, "get", "pc", "rc-sub").returncode == 1
