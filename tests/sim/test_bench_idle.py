"""``bench/idle.py`` runs the cycle a busy server pays for its running jobs over a cluster saved
by ``bench/loop.py --save``: texts a live server holds interned are interned again after the
load, which changes no outcome, and it prints one JSON line."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from bench_programs import bench_program
from lahar.scheduler.cycle import run_cycle

ROOT = Path(__file__).resolve().parents[2]


def test_a_saved_cluster_runs_its_cycles_with_the_texts_interned_and_the_same_outcomes(tmp_path):
    saved = tmp_path / "running.pkl"
    done = bench_program("loop").run(60, 20, tmp_path, save=str(saved))
    assert done["pods_bound"] == 60
    idle = bench_program("idle")
    cache, conf = pickle.loads(saved.read_bytes())
    plain = run_cycle(cache, conf, 10**8, uid="plain").jobs
    cache, conf = pickle.loads(saved.read_bytes())
    job = next(iter(cache.jobs.values()))
    assert job.phase == "Running" and job.phase is not sys.intern("Running")  # unpickled: a text of its own
    idle.intern_texts(cache)
    assert job.phase is sys.intern("Running")
    assert idle.interns_queue_names() is True  # JobInfo and QueueInfo intern queue names
    assert job.queue is sys.intern(job.queue) and job.queue is cache.queues[job.queue].name
    interned = run_cycle(cache, conf, 10**8, uid="plain").jobs
    assert idle.digest(interned) == idle.digest(plain)
    assert {uid: o.phase for uid, o in interned.items()} == {uid: "Running" for uid in plain}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "idle.py"), str(saved), "--cycles", "2"], capture_output=True, text=True, check=True)
    line = json.loads(out.stdout)
    assert line["bench"] == "idle" and line["jobs"] == 60 and line["cycles"] == 2
    assert line["digest"] == idle.digest(plain) and line["cycle_cpu_ms"] > 0
