"""Volcano's own unit-test cases, ported as data, run through Lahar's scheduler.

Each scenario under tests/conformance/volcano/ carries the objects, the exact scheduler
configuration (with Volcano's unit-test flag semantics) and the outcome Volcano's test expects:
binds, evictions, pipelined tasks, podgroup phases, task status counts, queue attributes. The
format is described in tests/conformance/README.md; plugin-callback checks in CALLBACKS.md.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from lahar.model.manifest import parse_object
from lahar.scheduler.api import TaskStatus
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.actions import ACTIONS
from lahar.scheduler.cycle import close_session, open_session
from lahar.scheduler.framework.config import load_config
from conformance_callbacks import check_callbacks  # noqa: E402

ROOT = Path(__file__).resolve().parent / "conformance" / "volcano"


def _scenarios():
    for path in sorted(ROOT.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for scenario in data.get("scenarios", [data]) if isinstance(data, dict) else []:
            if not isinstance(scenario, dict) or "objects" not in scenario:
                continue
            yield pytest.param(scenario, id=scenario.get("name", path.stem))


def setup(scenario: dict):
    config = dict(scenario["config"])
    fill = config.pop("defaultFlags", True)
    conf = load_config(config, fill_defaults=fill)
    objects = [parse_object(o) for o in scenario["objects"]]
    return conf, ClusterState.from_objects(objects)


@pytest.mark.parametrize("scenario", list(_scenarios()))
def test_volcano_case(scenario):
    conf, state = setup(scenario)
    expect = scenario.get("expect") or {}
    ssn = open_session(state, conf)
    for action in conf.actions:
        ACTIONS[action](ssn)
    check_callbacks(ssn, expect.get("callbacks") or [])
    check(close_session(ssn), expect)


def check(result, expect: dict) -> None:
    binds = {d.task: d.node for d in result.decisions if d.type == "bind"}
    evicted = [d.task for d in result.decisions if d.type == "evict"]
    if "binds" in expect:
        assert binds == (expect["binds"] or {}), f"binds: got {binds}"
    if "bindsCount" in expect:
        assert len(binds) == expect["bindsCount"], f"bind count: got {binds}"
    if "evicted" in expect:
        assert Counter(evicted) == Counter(expect["evicted"] or []), f"evicted: got {evicted}"
    if "evictCount" in expect:
        assert len(evicted) == expect["evictCount"], f"evict count: got {evicted}"
    jobs = result.session.jobs
    for job_id, nodes in (expect.get("pipelined") or {}).items():
        pipelined = jobs[job_id].tasks_in(TaskStatus.PIPELINED)
        assert pipelined, f"{job_id}: nothing pipelined"
        for task in pipelined:
            assert task.node_name in nodes, f"{task.key} pipelined on {task.node_name}, want one of {nodes}"
    for job_id, phase in (expect.get("phases") or {}).items():
        assert result.jobs[job_id].phase == phase, f"{job_id}: phase {result.jobs[job_id].phase}, want {phase}"
    for job_id, counts in (expect.get("taskStatusCounts") or {}).items():
        for status, count in counts.items():
            got = jobs[job_id].count(TaskStatus[status.upper()])
            assert got == count, f"{job_id}: {status} {got}, want {count}"
    for name, want in (expect.get("queues") or {}).items():
        check_queue(result.session, name, want)


def check_queue(ssn, name: str, want: dict) -> None:
    attr = ssn.queue_attrs.get(name)
    assert attr is not None, f"queue {name} has no attributes in the session"
    for field, value in want.items():
        key = {"realCapability": "real_capability"}.get(field, field)
        got = getattr(attr, key)
        if field == "share":
            assert got == pytest.approx(value, rel=1e-6, abs=1e-9), f"{name}.share: {got}"
        else:
            got_json = got.to_json()
            assert got_json == pytest.approx({k: float(v) for k, v in value.items()}, rel=1e-9, abs=0.1), f"{name}.{field}: {got_json}"
