"""``bench/checkpoint.py run --intern``: a saved replay resumed with the texts a live replay
holds interned interned again after the load (an unpickled text is a new object), which
changes no decision: the digest is the one of the run without it."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from bench_programs import bench_program
from lahar.sim.compare import run_replay
from trace_slice import slice_at_start

ROOT = Path(__file__).resolve().parents[2]


def _saved_replay(path: Path) -> None:
    sim, position = slice_at_start("4 x cpu=64,memory=512Gi,gpu=8", limit=120)  # small: jobs wait
    assert run_replay(sim, position, cycles=40)
    path.write_bytes(pickle.dumps((sim, position), protocol=pickle.HIGHEST_PROTOCOL))


def _run(saved: Path, *extra: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "checkpoint.py"), "run", str(saved), "--cycles", "30", *extra],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_a_replay_resumed_with_its_texts_interned_decides_as_without(tmp_path):
    saved = tmp_path / "replay.pkl"
    _saved_replay(saved)
    sim, _ = pickle.loads(saved.read_bytes())
    jobs = list(sim.world.cache.jobs.values())
    assert jobs and all(job.phase is not sys.intern(job.phase) for job in jobs)  # unpickled: texts of their own
    plain, interned = _run(saved), _run(saved, "--intern")
    assert plain["cycles"] == interned["cycles"] == 30
    assert interned["digest"] == plain["digest"] and plain["digest"]
    assert interned["interned"] is True and "interned" not in plain


def test_intern_texts_interns_the_phases_and_queue_names_of_a_loaded_replay(tmp_path):
    saved = tmp_path / "replay.pkl"
    _saved_replay(saved)
    sim, _ = pickle.loads(saved.read_bytes())
    cache = sim.world.cache
    bench_program("idle").intern_texts(cache)
    for job in cache.jobs.values():
        assert job.phase is sys.intern(job.phase)
        assert job.queue is sys.intern(job.queue)
    for queue in cache.queues.values():
        assert queue.name is sys.intern(queue.name)
