"""Trace loaders on data that travels with the repository: a slice of the real Philly trace and
rows in the Alibaba GPU 2023 format (the full traces are checked in test_traces.py where present)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from lahar.resources import Resource
from lahar.sim.traces import build_workload, load_alibaba
from lahar.sim.traces.philly import load_philly

SLICE = Path(__file__).resolve().parents[1] / "data" / "traces" / "philly-head.csv"


def test_the_philly_slice_maps_rows_to_queues_gangs_and_times():
    jobs = load_philly(SLICE).jobs
    assert len(jobs) == 302
    first = next(j for j in jobs if j.name == "philly-1")  # line 2: 2017-10-09 07:01:55,66.0,1,66.0,11cb48
    earliest = min(datetime.fromisoformat(line.split(",")[0]) for line in SLICE.read_text().splitlines()[1:])
    assert first.arrival == (datetime(2017, 10, 9, 7, 1, 55) - earliest).total_seconds()
    assert (first.queue, first.duration, first.tasks, first.requests, first.min_available) == ("11cb48", 66.0, 1, {"nvidia.com/gpu": "1"}, 1)
    sixteen, thirtytwo = jobs_by_row(jobs, 301), jobs_by_row(jobs, 302)
    assert (sixteen.tasks, sixteen.requests, sixteen.min_available, sixteen.duration) == (2, {"nvidia.com/gpu": "8"}, 2, 195.0)
    assert (thirtytwo.tasks, thirtytwo.min_available, thirtytwo.queue) == (4, 4, "2869ce")


def jobs_by_row(jobs, row):
    return next(j for j in jobs if j.name == f"philly-{row}")


def test_the_philly_slice_builds_vcjobs_for_the_simulator():
    workload = build_workload(f"philly:{SLICE}", limit=10, cluster=["2 x cpu=64,memory=512Gi,nvidia.com/gpu=8"])
    objects, _ = workload.objects(None)
    groups, pods = [o for o in objects if o.kind == "PodGroup"], [o for o in objects if o.kind == "Pod"]
    assert len(groups) == 10 and len(pods) == sum(g.spec.min_member for g in groups)
    assert all("lahar.dev/at" in p.annotations and "lahar.dev/duration" in p.annotations for p in pods)
    assert sum(1 for o in objects if o.kind == "Node") == 2


def test_alibaba_rows_give_fractional_gpus_queues_by_qos_and_real_nodes(tmp_path):
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        "pod-a,12000,16384,1,1000,,LS,Running,0,1000,0\n"
        "pod-b,6000,12288,1,460,V100M16,BE,Running,50,900,60\n"
        "pod-c,4000,8192,0,0,,BE,Running,100,400,100\n"
    )
    (tmp_path / "openb_node_list_all_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,262144,0,\nnode-1,96000,786432,8,V100M16\n")
    trace = load_alibaba(tmp_path)
    a, b, c = (next(j for j in trace.jobs if j.name == n) for n in ("pod-a", "pod-b", "pod-c"))
    assert (a.queue, a.arrival, a.duration, a.requests) == ("LS", 0.0, 1000.0, {"cpu": "12000m", "memory": "16384Mi", "nvidia.com/gpu": "1"})
    assert b.queue == "BE" and b.requests["nvidia.com/gpu"] == "460m" and Resource.from_list(b.requests).get("nvidia.com/gpu") == 460
    assert "nvidia.com/gpu" not in c.requests
    assert [n.allocatable.get("nvidia.com/gpu", "0") for n in trace.nodes] == ["0", "8"]
