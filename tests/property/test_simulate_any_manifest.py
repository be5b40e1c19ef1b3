"""``lahar simulate`` on manifests drawn at random (nodes, queues, vcjobs, bare pods, priority
classes and commands whose quantities, counts, states and annotations range from the ordinary
to the absurd), under each bundled configuration: it reports what it simulated (exit status 0)
or names what it refuses (exit status 1, ``error: ...``), and never ends in a traceback.

A capacity planner's file is rarely clean, and a traceback tells them nothing about which
object or field is wrong. Two such files once did: a ``lahar.dev/at`` that was not a duration
(read before admission ran) and a quantity past what a float holds."""

from __future__ import annotations

import json

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lahar.cli.main import app
from lahar.errors import LaharError

from test_accepted_writes import bare_pods, durations, unique_name, writes

CONFIGS = st.sampled_from(["default", "volcano", "capacity", "capacity-hierarchy"])


@st.composite
def extras(draw) -> dict:
    """What a simulation file may hold besides nodes, queues and vcjobs."""
    choice = draw(st.sampled_from(["pod", "priorityclass", "command", "closed-queue"]))
    if choice == "pod":
        return draw(bare_pods())
    if choice == "priorityclass":
        value = draw(st.integers(min_value=-(2**32), max_value=2**32))
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": value}
    if choice == "command":
        action = draw(st.sampled_from(["OpenQueue", "CloseQueue", "SuspendQueue", "ResumeQueue", "Nonsense"]))
        annotations = {"lahar.dev/at": draw(durations)} if draw(st.booleans()) else {}
        target = {"kind": draw(st.sampled_from(["Queue", "Job"])), "name": draw(st.sampled_from(["default", "none-such"]))}
        return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": unique_name("c"), "annotations": annotations}, "action": action, "target": target}
    state = draw(st.sampled_from(["Closed", "Suspended", "Open", "Bogus"]))
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": unique_name("s")}, "spec": {"state": state}}


def run_simulate(args: list[str]):
    """``lahar simulate ARGS`` in-process, and how it ended: ``usage`` (an option against its
    rule, exit status 2), ``refused`` (a ``LaharError`` with a message, which ``main()`` prints
    as ``error: ...``) or ``ran`` (exit status 0). Any other exception fails the test."""
    result = CliRunner().invoke(app, ["simulate", *args])
    error = result.exception
    if isinstance(error, SystemExit) and result.exit_code == 2:
        return "usage", result
    if error is not None and not isinstance(error, SystemExit):
        assert isinstance(error, LaharError), repr(error)
        assert error.message
        return "refused", result
    assert result.exit_code == 0, result.output
    return "ran", result


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents=writes(), more=st.lists(extras(), max_size=4), config=CONFIGS, until=st.sampled_from(["30s", "10m", "3h", "999999999999s"]))
def test_simulate_reports_or_names_the_error(tmp_path_factory, documents, more, config, until):
    folder = tmp_path_factory.mktemp("sim")
    manifests = folder / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all(documents + more, sort_keys=False))
    args = [str(manifests), "--config", config, "--until", until, "-o", "json", "--metrics", str(folder / "m.json")]
    outcome, result = run_simulate(args)
    event(outcome)
    assert outcome != "usage", result.output  # every option here is valid
    if outcome == "refused":
        return
    out = json.loads(result.stdout)
    assert set(out) >= {"cycles", "queues", "jobs", "tasks"}
    assert json.loads((folder / "m.json").read_text())["summary"] is not None
