"""``lahar queue`` against a real server on loopback: every verb, its tables and its failures.

The server is a real ``lahar server`` process (memory database, a cycle every 0.2 s, tokens
on), started once per test process and shared by the CLI test modules, which import the
helpers below; each module uses its own queue and job names. Most commands run in-process
through Typer's ``CliRunner`` (fast); each command group also runs once as a real subprocess.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from lahar.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
LAHAR = [sys.executable, "-m", "lahar.cli.main"]
VCCTL_HEADER = "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed"


# --------------------------------------------------------------------- helpers shared by the CLI tests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Live:
    """A running server: its URL, its $LAHAR_HOME (where its admin token is) and its process."""

    url: str
    home: str
    process: subprocess.Popen

    @property
    def env(self) -> dict:
        return {"LAHAR_SERVER": self.url, "LAHAR_HOME": self.home, "LAHAR_TOKEN": None, "COLUMNS": "200"}

    def token(self) -> str:
        return (Path(self.home) / "token").read_text().strip()

    def stop(self, keep_home: bool = False) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if not keep_home:
            shutil.rmtree(self.home, ignore_errors=True)


def start_server(period: str = "0.2s", attempts: int = 3) -> Live:
    """``lahar server --db memory://`` on a free port, with its own $LAHAR_HOME; waits for /healthz.
    Tries again on another port when the process dies early (its port was taken meanwhile)."""
    errors = []
    for _ in range(attempts):
        home, port = tempfile.mkdtemp(prefix="lahar-cli-"), free_port()
        command = [*LAHAR, "server", "--db", "memory://", "--port", str(port), "--period", period]
        log = Path(home) / "server.log"  # a file, not a pipe: a pipe nobody reads can block the server
        with log.open("w") as sink:
            process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "LAHAR_HOME": home}, stdout=sink, stderr=subprocess.STDOUT)
        live = Live(f"http://127.0.0.1:{port}", home, process)
        if _wait_healthy(live, timeout=60):
            return live
        live.stop(keep_home=True)
        errors.append(log.read_text()[-1000:])
        shutil.rmtree(home, ignore_errors=True)
    raise AssertionError("server did not start:\n" + "\n".join(errors))


def _wait_healthy(live: Live, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and live.process.poll() is None:
        try:
            if httpx.get(f"{live.url}/healthz", timeout=1).status_code == 200 and (Path(live.home) / "token").exists():
                return True
        except httpx.HTTPError:
            time.sleep(0.1)
    return False


_SHARED: dict[str, Live] = {}


def shared_server() -> Live:
    """One server per test process for the queue, job and resource tests, with a 64-CPU node."""
    if "live" not in _SHARED:
        live = _SHARED["live"] = start_server()
        atexit.register(live.stop)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"}, "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}
        httpx.post(f"{live.url}/api/v1/nodes", json=node, headers={"Authorization": f"Bearer {live.token()}"}, timeout=30).raise_for_status()
    return _SHARED["live"]


def make_cli(live: Live) -> Callable:
    runner = CliRunner()

    def cli(*args: str, input: str | None = None, env: dict | None = None):
        return runner.invoke(app, list(args), input=input, env={**live.env, **(env or {})}, prog_name="lahar")

    return cli


def subprocess_cli(live: Live, *args: str, input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    merged = {**os.environ, "LAHAR_SERVER": live.url, "LAHAR_HOME": live.home, **(env or {})}
    merged.pop("LAHAR_TOKEN", None)
    return subprocess.run([*LAHAR, *args], cwd=ROOT, env=merged, input=input, capture_output=True, text=True, timeout=60)


def eventually(check: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


# --------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def live() -> Live:
    return shared_server()


@pytest.fixture(scope="session")
def cli(live):
    return make_cli(live)


def flat(text: str) -> str:
    """Output with Rich's error-panel borders removed and whitespace collapsed (panels wrap)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def rows(text: str) -> dict[str, list[str]]:
    """A whitespace-separated table keyed by its first column."""
    return {line.split()[0]: line.split() for line in text.strip().splitlines()[1:]}


# --------------------------------------------------------------------- create, get, list


def test_create_with_every_flag_then_get_as_json_and_yaml(cli):
    result = cli("queue", "create", "-n", "qc-full", "-w", "3", "--capability", "cpu=8,memory=16Gi", "--deserved", "cpu=4",
                 "--guarantee", "cpu=1", "--state", "Open", "--reclaimable", "false", "--priority", "5")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "queue/qc-full created"
    spec = json.loads(cli("queue", "get", "-n", "qc-full", "-o", "json").stdout)["spec"]
    assert spec["weight"] == 3 and spec["capability"] == {"cpu": "8", "memory": "16Gi"}
    assert spec["deserved"] == {"cpu": "4"} and spec["guarantee"] == {"resource": {"cpu": "1"}}
    assert spec["reclaimable"] is False and spec["priority"] == 5 and spec["parent"] == "root"
    as_yaml = yaml.safe_load(cli("queue", "get", "-n", "qc-full", "-o", "yaml").stdout)
    assert as_yaml["metadata"]["name"] == "qc-full" and as_yaml["kind"] == "Queue"


def test_create_under_a_parent_and_in_a_state(cli):
    assert cli("queue", "create", "-n", "qc-parent").exit_code == 0
    assert cli("queue", "create", "-n", "qc-child", "--parent", "qc-parent", "-S", "suspended").exit_code == 0
    table = rows(cli("queue", "get", "-n", "qc-child").stdout)
    assert table["qc-child"][:4] == ["qc-child", "1", "Suspended", "qc-parent"]


def test_list_is_vcctl_table_with_live_podgroup_counts(cli, live):
    cli("queue", "create", "-n", "qc-count", "--state", "Suspended")
    for name in ("qc-count-a", "qc-count-b"):
        assert cli("job", "run", "-n", name, "-q", "qc-count", "--cpu", "1").exit_code == 0
    eventually(lambda: rows(cli("queue", "list").stdout)["qc-count"][5] == "2", what="two pending podgroups")
    listing = cli("queue", "list").stdout
    assert listing.splitlines()[0] == VCCTL_HEADER
    row = next(line for line in listing.splitlines() if line.startswith("qc-count "))
    assert row == "qc-count                 1       Suspended root    0       2       0       0       0       "  # vcctl's %-8d
    assert rows(listing)["root"][3] == "-"


def test_list_wide_adds_deserved_allocated_capability(cli):
    cli("queue", "create", "-n", "qc-wide", "--capability", "cpu=2")
    assert cli("job", "run", "-n", "qc-wide-job", "-q", "qc-wide", "--cpu", "1").exit_code == 0
    eventually(lambda: "cpu=1" in rows(cli("queue", "list", "-o", "wide").stdout)["qc-wide"], what="allocation")
    wide = cli("queue", "list", "-o", "wide").stdout
    assert wide.splitlines()[0].split()[-3:] == ["Deserved", "Allocated", "Capability"]
    assert rows(wide)["qc-wide"][-2:] == ["cpu=1", "cpu=2"]
    get_wide = cli("queue", "get", "-n", "qc-wide", "-o", "wide").stdout
    assert rows(get_wide)["qc-wide"][-1] == "cpu=2"


def test_list_json_and_yaml_parse(cli):
    document = json.loads(cli("queue", "list", "-o", "json").stdout)
    assert document["kind"] == "QueueList" and {"root", "default"} <= {q["metadata"]["name"] for q in document["items"]}
    assert yaml.safe_load(cli("queue", "list", "-o", "yaml").stdout)["kind"] == "QueueList"


# --------------------------------------------------------------------- errors


def test_every_field_error_on_its_own_line_exit_1(cli):
    result = cli("queue", "create", "-n", "Bad_Name", "-w", "0", "--capability", "cpu=x")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith('error: Queue "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name"')
    assert lines[1].startswith('  metadata.name: Invalid value: "Bad_Name"')
    assert lines[2] == "  spec.weight: Invalid value: 0: must be in 1..2147483647"
    assert lines[3].startswith('  spec.capability.cpu: Invalid value: "x"')


@pytest.mark.parametrize(
    "args,message",
    [
        (("queue", "get", "-n", "qc-none"), 'error: Queue "qc-none" not found'),
        (("queue", "create", "-n", "default"), 'error: Queue "default" already exists'),
        (("queue", "create", "-n", "qc-orphan", "--parent", "qc-none"), 'spec.parent: Not found: "qc-none"'),
        (("queue", "delete", "-n", "default"), "error: Queue \"default\" is invalid"),
        (("queue", "operate", "-n", "root", "-a", "suspend"), 'error: Queue "root" is invalid: action: Forbidden: the root queue can never be closed or suspended'),
        (("queue", "operate", "-n", "qc-none", "-a", "close"), 'error: Queue "qc-none" not found'),
    ],
)
def test_server_errors_exit_1_with_the_server_message(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert message in result.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (("queue", "create"), "Missing option"),
        (("queue", "create", "-n", "x", "--capability", "cpu4"), "is not NAME=QUANTITY"),
        (("queue", "create", "-n", "x", "--state", "Closing"), "Invalid value for '--state'"),
        (("queue", "create", "-n", "x", "--reclaimable", "maybe"), "Invalid value for '--reclaimable'"),
        (("queue", "operate", "-n", "default", "-a", "explode"), "Invalid value for '--action'"),
        (("queue", "operate", "-n", "default", "-a", "update"), "weight must be specified, the value must be greater than 0"),
        (("queue", "update", "-n", "default"), "nothing to update"),
        (("queue", "list", "-o", "xml"), "Invalid value for '--output'"),
        (("queue", "list", "--server", "localhost:1"), "is not an http:// or https:// URL"),
    ],
)
def test_usage_errors_exit_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)


def test_unreachable_server_exits_3_with_url_and_hint(cli):
    url = closed_port_url()
    result = cli("queue", "list", "--server", url)
    assert result.exit_code == 3
    assert f"cannot reach the Lahar server at {url}" in result.stderr
    assert "lahar server" in result.stderr


def test_bad_token_exit_1_with_hint(cli):
    result = cli("queue", "list", "--token", "lahar_nope_nope")
    assert result.exit_code == 1
    assert "error: invalid or revoked token" in result.stderr and "LAHAR_TOKEN" in result.stderr


# --------------------------------------------------------------------- update, operate, delete


def test_update_changes_only_given_flags_and_clears_with_empty(cli):
    cli("queue", "create", "-n", "qc-up", "-w", "2", "--capability", "cpu=4")
    result = cli("queue", "update", "-n", "qc-up", "-w", "7", "--reclaimable", "false")
    assert result.exit_code == 0 and "queue/qc-up updated" in result.stdout
    spec = json.loads(cli("queue", "get", "-n", "qc-up", "-o", "json").stdout)["spec"]
    assert spec["weight"] == 7 and spec["capability"] == {"cpu": "4"} and spec["reclaimable"] is False
    assert cli("queue", "update", "-n", "qc-up", "--capability", "").exit_code == 0
    assert "capability" not in json.loads(cli("queue", "get", "-n", "qc-up", "-o", "json").stdout)["spec"]
    suspended = cli("queue", "update", "-n", "qc-up", "--state", "Suspended")
    assert "(state Suspended)" in suspended.stdout
    refused = cli("queue", "update", "-n", "qc-up", "-w", "0")
    assert refused.exit_code == 1 and "spec.weight: Invalid value: 0" in refused.stderr


def test_operate_moves_through_the_lifecycle(cli):
    cli("queue", "create", "-n", "qc-op")
    steps = [("suspend", "Open -> Suspended"), ("resume", "Suspended -> Open"), ("close", "Open -> Closed"), ("suspend", "Closed -> Closed"), ("open", "Closed -> Open")]
    for action, change in steps:
        result = cli("queue", "operate", "-n", "qc-op", "-a", action)
        assert result.exit_code == 0, result.output
        assert f"queue/qc-op: {change}" in result.stdout
    weight = cli("queue", "operate", "-n", "qc-op", "-a", "update", "-w", "9")
    assert weight.stdout.strip() == "queue/qc-op: weight 9"
    assert json.loads(cli("queue", "get", "-n", "qc-op", "-o", "json").stdout)["spec"]["weight"] == 9


def test_delete_only_a_closed_queue(cli):
    cli("queue", "create", "-n", "qc-del")
    refused = cli("queue", "delete", "-n", "qc-del")
    assert refused.exit_code == 1 and "only a Closed queue can be deleted" in refused.stderr
    cli("queue", "operate", "-n", "qc-del", "-a", "close")
    deleted = cli("queue", "delete", "-n", "qc-del")
    assert deleted.exit_code == 0 and deleted.stdout.strip() == "queue/qc-del deleted"
    assert cli("queue", "get", "-n", "qc-del").exit_code == 1


def test_tree_draws_the_hierarchy_with_bars(cli):
    cli("queue", "create", "-n", "qc-tree", "--capability", "cpu=32")
    cli("queue", "create", "-n", "qc-tree-leaf", "--parent", "qc-tree")
    result = cli("queue", "tree")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["QUEUE", "STATE", "WEIGHT", "RESOURCE"]
    assert lines[1].startswith("root ")
    tree_line = next(line for line in lines if "qc-tree " in line)
    assert ("├── qc-tree" in tree_line or "└── qc-tree" in tree_line) and "┊" in tree_line and "/ 32" in tree_line
    leaf = next(line for line in lines if "qc-tree-leaf" in line)
    assert leaf.startswith(("│   └── qc-tree-leaf", "    └── qc-tree-leaf"))
    assert lines[-1].startswith("bars: the cluster (cpu 64")
    document = json.loads(cli("queue", "tree", "-o", "json").stdout)
    assert {"name", "parent", "state", "deserved", "allocated", "capability"} <= set(document["queues"][0])


def test_real_subprocess_list_reads_lahar_server_from_env(live):
    result = subprocess_cli(live, "queue", "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == VCCTL_HEADER
    unreachable = subprocess_cli(live, "queue", "create", "-n", "x", env={"LAHAR_SERVER": closed_port_url()})
    assert unreachable.returncode == 3 and "lahar server" in unreachable.stderr
    usage = subprocess_cli(live, "queue", "operate", "-n", "x")
    assert usage.returncode == 2


def test_shell_completion_of_queue_names_asks_the_server(live):
    env = {**live.env, "_LAHAR_COMPLETE": "complete_bash", "COMP_WORDS": "lahar queue get -n defa", "COMP_CWORD": "4"}
    assert CliRunner().invoke(app, [], prog_name="lahar", env=env).stdout.split() == ["default"]
