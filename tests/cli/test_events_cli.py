"""``lahar get events --for queue/NAME|job/NAME`` against a real server: a queue's events include
those of its jobs, a job's are only its own. Names here start with ``ev-``."""

from __future__ import annotations

import json

from test_queue_cli import eventually, make_cli, shared_server

JOB = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: ev-team}
spec: {weight: 1}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: ev-job}
spec:
  queue: ev-team
  tasks:
  - name: main
    replicas: 3
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""


def test_events_for_a_queue_and_for_a_job():
    cli = make_cli(shared_server())
    assert cli("apply", "-f", "-", input=JOB).exit_code == 0

    def bound() -> bool:
        return "3 tasks of default/ev-job bound to" in cli("get", "events", "--for", "job/ev-job").stdout

    eventually(bound, what="a Bound event for ev-job")
    queue = cli("get", "events", "--for", "queue/ev-team")
    assert queue.exit_code == 0, queue.output
    assert queue.stdout.split()[:5] == ["Age", "Type", "Reason", "Object", "Message"]
    lines = queue.stdout.splitlines()[1:]
    assert any("Bound" in line and "job/default/ev-job" in line for line in lines)
    assert any("Audit" in line and "queue/ev-team" in line for line in lines)
    document = json.loads(cli("get", "events", "--for", "job/ev-job", "-o", "json").stdout)
    assert document["kind"] == "LaharEventList" and document["items"]
    assert all(e["involvedObject"]["name"] == "default/ev-job" for e in document["items"])
    other = cli("get", "events", "--for", "job/ev-job", "--namespace", "elsewhere")
    assert other.exit_code == 0 and other.stdout.strip() == "No resources found"


def test_for_is_for_events_only_and_names_a_queue_or_a_job():
    cli = make_cli(shared_server())
    wrong_kind = cli("get", "pods", "--for", "queue/default")
    assert wrong_kind.exit_code == 2 and "--for applies to events only" in wrong_kind.output
    wrong_target = cli("get", "events", "--for", "node/n1")
    assert wrong_target.exit_code == 1
    assert 'for: "node/n1" is not queue/NAME or job/[NAMESPACE/]NAME' in wrong_target.output
