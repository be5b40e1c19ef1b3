"""SPEC section 6's seed scenarios, run through the same path as ``lahar simulate``.

Every file in tests/scenarios/ names a manifest in examples/seeds/ and the state expected at
the end of the run (see tests/scenarios/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lahar.admission import admit_delete
from lahar.duration import parse_duration
from lahar.errors import Invalid
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from lahar.sim.report import simulation_json

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))


def _cases():
    for path in SCENARIOS:
        spec = yaml.safe_load(path.read_text())
        for config in spec.get("configs", [None]):
            checkpoints = spec.get("checkpoints") or [
                {mode: spec[mode], "expect": spec["expect"]} for mode in ("until", "cycles") if mode in spec
            ]
            for point in checkpoints:
                mode = "until" if "until" in point else "cycles"
                ident = f"{path.stem}-{config or 'default'}-{mode}-{point[mode]}"
                yield pytest.param(spec, config, mode, point, id=ident)


def run(spec: dict, config: str | None, mode: str, value) -> Simulation:
    objects, conf = load_simulation_inputs([str(ROOT / spec["manifests"])], config)
    sim = Simulation(objects, conf, period=1.0)
    if mode == "until":
        sim.run_until(parse_duration(value))
    else:
        sim.run_cycles(int(value))
    return sim


@pytest.mark.parametrize("spec,config,mode,point", list(_cases()))
def test_seed_scenario(spec, config, mode, point):
    sim = run(spec, config, mode, point[mode])
    check(sim, point["expect"])


def check(sim: Simulation, expect: dict) -> None:
    out = simulation_json(sim)
    for key, want in expect.get("jobs", {}).items():
        got = out["jobs"][key]
        if "phase" in want:
            assert got["phase"] == want["phase"], (key, got)
        if "reason" in want:
            _check_reason(key, got["reason"], want["reason"])
    for name, want in expect.get("queues", {}).items():
        got = out["queues"][name]
        if "state" in want:
            assert got["state"] == want["state"], (name, got)
        for field in ("deserved", "allocated"):
            if field in want:
                assert got[field] == pytest.approx(want[field]), (name, field, got)
    if "evicted" in expect:
        evicted = [d["task"] for c in out["cycles"] for d in c["decisions"] if d["type"] == "evict"]
        assert sorted(evicted) == sorted(expect["evicted"])
    if "rejected" in expect:
        got = out["rejected"]
        assert len(got) == len(expect["rejected"]), got
        for g, w in zip(got, expect["rejected"]):
            assert (g["kind"], g["name"]) == (w["kind"], w["name"]) and w["message"] in g["message"], g
    view = sim.world.view()
    for name in expect.get("deletable", []):
        admit_delete(sim.world.queues[name], view)
    for name in expect.get("notDeletable", []):
        with pytest.raises(Invalid):
            admit_delete(sim.world.queues[name], view)


def _check_reason(key: str, got, want) -> None:
    if want is None:
        assert got is None, (key, got)
        return
    assert got is not None, (key, "expected a reason")
    assert want in got["kind"] or want in got["message"], (key, got)
