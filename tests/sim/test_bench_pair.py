"""``bench/pair.py`` steps two copies of a saved replay in lockstep and lets the two versions of
the code trade copies every cycle: the copies must stay on the same cycle, and each version must
run on both copies (or a copy that costs more than the other would bias the ratio)."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

from bench_programs import bench_program
from lahar.sim.compare import run_replay
from lahar.sim.engine import Simulation
from trace_slice import slice_at_start

def _bench_pair():
    return bench_program("pair")


def _saved_replay(folder: Path) -> Path:
    sim, position = slice_at_start("2 x cpu=64,memory=512Gi,gpu=8", limit=60)  # small: jobs wait
    run_replay(sim, position, cycles=10)
    path = folder / "replay.pkl"
    path.write_bytes(pickle.dumps((sim, position)))
    return path


def test_both_versions_run_on_both_copies_and_the_copies_stay_in_step(tmp_path, monkeypatch):
    path = _saved_replay(tmp_path)
    installed: list[str] = []
    variants = SimpleNamespace(OLD=("old",), NEW=("new",), use=lambda functions: installed.append(functions[0]))
    ran: set[tuple[str, int]] = set()
    step = Simulation.step

    def recorded(sim, now):
        ran.add((installed[-1], id(sim)))
        return step(sim, now)

    monkeypatch.setattr(Simulation, "step", recorded)
    result = _bench_pair().pair(str(path), 8, variants)
    assert len(ran) == 4  # old and new, each on both copies
    assert result["copies_in_step"] is True
    assert result["old_cpu_seconds"] > 0 and result["new_cpu_seconds"] > 0
    steps = installed[:-1]  # the last call puts the new version back
    assert len(steps) == 16 and steps.count("old") == steps.count("new") == 8
    # copy 0 runs old, new, new, old...: per step the two sides are (old on copy 0, new on copy 1)
    # or (old on copy 1, new on copy 0), and which side goes first alternates every two steps
    firsts = [steps[2 * step] for step in range(8)]
    assert firsts == ["old", "old", "new", "new", "old", "old", "new", "new"]


def test_a_saved_cluster_runs_the_same_cycle_for_each_version_in_turn(tmp_path, monkeypatch):
    """A cluster saved by ``loop.py --save``: each version runs the cycle as often as the other,
    taking turns going first, on a cluster that no cycle changes."""
    sim, _ = slice_at_start("2 x cpu=64,memory=512Gi,gpu=8", limit=20)
    sim.run_cycles(3)
    saved = (sim.world.cache, sim.conf)
    jobs_before = {uid: (job.phase, job.changes) for uid, job in sim.world.cache.jobs.items()}
    installed: list[str] = []
    variants = SimpleNamespace(OLD=("old",), NEW=("new",), use=lambda functions: installed.append(functions[0]))
    result = _bench_pair().pair_cluster(saved, 6, variants)
    steps = installed[:-1]
    assert steps == ["old", "new", "new", "old"] * 3
    assert result["jobs"] == len(sim.world.cache.jobs) > 0
    assert result["old_cycle_cpu_ms"] > 0 and result["new_cycle_cpu_ms"] > 0
    assert {uid: (job.phase, job.changes) for uid, job in sim.world.cache.jobs.items()} == jobs_before
