"""Trace loaders: the real Philly and Alibaba files map to jobs, tasks and queues as their READMEs say,
Lahar's CSV format reads users' logs and refuses bad rows with a message naming line and column,
and the workload rules (limit, speed-up, queues, routing, default cluster) hold."""

from __future__ import annotations

import os

from datetime import datetime
from fractions import Fraction
from pathlib import Path

import pytest

from builders import queue
from lahar.errors import BadRequest
from lahar.model import Pod, PodGroup
from lahar.resources import Resource
from lahar.sim.traces import (
    build_workload,
    default_cluster,
    job_objects,
    load_alibaba,
    load_csv,
    load_philly,
    load_trace,
    parse_cluster,
    queue_name,
    route,
)
from lahar.sim.traces.records import TraceJob, default_queues, limit_jobs, speed_up

TRACES = Path(os.environ.get("LAHAR_TRACES") or Path(__file__).resolve().parents[3] / "shared" / "traces")
PHILLY = TRACES / "philly-derived" / "philly.csv"
ALIBABA = TRACES / "alibaba-gpu-v2023"
needs_traces = pytest.mark.skipif(not PHILLY.is_file() or not ALIBABA.is_dir(), reason="the shared traces are not on this machine")


@pytest.fixture(scope="module")
def philly():
    return load_philly(PHILLY)


@pytest.fixture(scope="module")
def alibaba():
    return load_alibaba(ALIBABA)


def by_name(trace, name):
    return next(j for j in trace.jobs if j.name == name)


# ----------------------------------------------------------------- Philly


@needs_traces
def test_philly_first_csv_row_is_one_task_of_one_gpu_in_its_vc(philly):
    # line 2 of philly.csv: 2017-10-09 07:01:55,66.0,1,66.0,11cb48
    first = by_name(philly, "philly-1")
    expected = (datetime(2017, 10, 9, 7, 1, 55) - datetime(2017, 9, 4, 10, 30, 41)).total_seconds()
    assert (first.queue, first.arrival, first.duration, first.tasks, first.requests, first.min_available) == (
        "11cb48", expected, 66.0, 1, {"nvidia.com/gpu": "1"}, 1,
    )  # fmt: skip


@needs_traces
def test_philly_has_every_row_sorted_by_arrival_then_row(philly):
    assert len(philly.jobs) == 82247
    keys = [(j.arrival, j.row) for j in philly.jobs]
    assert keys == sorted(keys) and philly.jobs[0].arrival == 0.0
    assert philly.jobs[-1].arrival == (datetime(2017, 12, 22, 8, 2, 11) - datetime(2017, 9, 4, 10, 30, 41)).total_seconds()
    assert len({j.queue for j in philly.jobs}) == 15


@needs_traces
def test_philly_jobs_above_8_gpus_are_gangs_of_8_gpu_tasks(philly):
    sizes = {}
    for job in philly.jobs:
        sizes.setdefault(job.tasks * int(job.requests["nvidia.com/gpu"]) if job.tasks > 1 else int(job.requests["nvidia.com/gpu"]), job)
    sixteen = sizes[16]
    assert (sixteen.tasks, sixteen.requests, sixteen.min_available) == (2, {"nvidia.com/gpu": "8"}, 2)
    assert (sizes[128].tasks, sizes[128].min_available) == (16, 16)
    twelve = [j for j in philly.jobs if j.tasks == 2 and j.requests == {"nvidia.com/gpu": "8"}]
    assert len(twelve) == 199 + 7  # 16-GPU and 12-GPU rows (ceil(12 / 8) = 2 tasks)
    assert sum(1 for j in philly.jobs if j.tasks == 1 and j.requests == {"nvidia.com/gpu": "8"}) == 1643


def test_philly_rows_are_sorted_and_blank_lines_skipped(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-01 00:00:10,5.0,16,80.0,vc-b\n"
        "\n"
        "2017-10-01 00:00:00,7.0,1,7.0,VC_A\n"
        "2017-10-01 00:00:10,3.0,2,6.0,vc-b\n\n"
    )
    jobs = load_philly(path).jobs
    assert [(j.name, j.arrival, j.tasks) for j in jobs] == [("philly-2", 0.0, 1), ("philly-1", 10.0, 2), ("philly-3", 10.0, 1)]
    assert queue_name(jobs[0].queue) == "vc-a"


@pytest.mark.parametrize(
    "row, message",
    [
        ("yesterday,5,1,5,vc", "line 2, column timestamp: 'yesterday' is not a time"),
        ("2017-10-01 00:00:00,-5,1,5,vc", "line 2, column duration: '-5' must be a finite number >= 0"),
        ("2017-10-01 00:00:00,5,1.5,5,vc", "line 2, column num_gpus: '1.5' must be a whole number from 1 to 800000"),
        ("2017-10-01 00:00:00,5,0,5,vc", "line 2, column num_gpus: '0' must be a whole number from 1 to 800000"),
        ("2017-10-01 00:00:00,5,1e20,5,vc", "line 2, column num_gpus: '1e20' must be a whole number from 1 to 800000"),  # 8 GPUs a task
    ],
)
def test_philly_bad_rows_name_line_and_column(tmp_path, row, message):
    path = tmp_path / "p.csv"
    path.write_text(f"timestamp,duration,num_gpus,gpu_time,cluster\n{row}\n")
    with pytest.raises(BadRequest) as err:
        load_philly(path)
    assert message in err.value.message


def test_philly_header_must_have_its_columns(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("when,duration\n1,2\n")
    with pytest.raises(BadRequest, match="not a Philly trace: the header \\(line 1\\) lacks column\\(s\\) timestamp, num_gpus, cluster"):
        load_philly(path)


# ----------------------------------------------------------------- Alibaba


@needs_traces
def test_alibaba_first_pods_and_fractional_gpus(alibaba):
    first, second = by_name(alibaba, "openb-pod-0000"), by_name(alibaba, "openb-pod-0001")
    assert (first.queue, first.arrival, first.duration) == ("LS", 0.0, 12537496.0)
    assert first.requests == {"cpu": "12000m", "memory": "16384Mi", "nvidia.com/gpu": "1"}
    assert second.requests["nvidia.com/gpu"] == "460m"  # gpu_milli 460 with num_gpu 1
    assert Resource.from_list(second.requests).get("nvidia.com/gpu") == 460  # 0.46 GPU, in thousandths
    assert (second.arrival, second.duration) == (427061.0, 12902960.0 - 427061.0)


@needs_traces
def test_alibaba_counts_queues_and_its_real_nodes(alibaba):
    assert len(alibaba.jobs) == 8152
    assert {k: sum(1 for j in alibaba.jobs if j.queue == k) for k in ("LS", "BE", "Burstable", "Guaranteed")} == {
        "LS": 4647, "BE": 3398, "Burstable": 100, "Guaranteed": 7,
    }  # fmt: skip
    assert sum(1 for j in alibaba.jobs if "nvidia.com/gpu" not in j.requests) == 1088  # num_gpu 0
    assert sum(1 for j in alibaba.jobs if j.requests.get("nvidia.com/gpu") == "8") == 44
    assert len(alibaba.nodes) == 1523
    assert sum(int(n.allocatable.get("nvidia.com/gpu", "0")) for n in alibaba.nodes) == 6212
    assert sum(Fraction(n.allocatable["cpu"][:-1]) / 1000 for n in alibaba.nodes) == 125514


@needs_traces
def test_alibaba_gpu_spec_key_sends_unconstrained_pods_to_default():
    trace = load_trace(f"alibaba:{ALIBABA / 'openb_pod_list_default.csv'}", "gpu_spec")
    assert {j.queue for j in trace.jobs} == {""}
    assert route(trace.jobs[:5], []).queues == {"": "default"}
    with pytest.raises(BadRequest, match='--queue-key: Unsupported value: "user"'):
        load_trace(f"alibaba:{ALIBABA}", "user")


# ----------------------------------------------------------------- Lahar CSV


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(text)
    return path


def test_csv_reads_iso_times_from_the_earliest_and_fills_defaults(tmp_path):
    path = write(tmp_path, "submit,duration,queue,tasks,cpu,memory,gpu,priority,name,minAvailable\n"
                           "2024-05-01 09:30:00,10m,Team A,4,500m,1Gi,,,,2\n"
                           "2024-05-01T09:00:00Z,90,,1,,,0.5,10,train-1,\n")  # fmt: skip
    first, second = load_csv(path).jobs
    assert (first.name, first.arrival, first.duration, first.queue, first.priority) == ("train-1", 0.0, 90.0, "", 10)
    assert (first.requests, first.tasks, first.min_available) == ({"nvidia.com/gpu": "0.5"}, 1, 1)
    assert (second.name, second.arrival, second.duration, second.min_available) == ("job-1", 1800.0, 600.0, 2)
    assert second.requests == {"cpu": "500m", "memory": "1Gi"}
    assert queue_name(second.queue) == "team-a" and queue_name(first.queue) == "default"


def test_csv_seconds_are_taken_as_given(tmp_path):
    path = write(tmp_path, "queue,submit,duration,tasks,cpu\nq,30,5,1,1\nq,12.5,1h,2,1\n")
    assert [(j.arrival, j.duration, j.tasks) for j in load_csv(path).jobs] == [(12.5, 3600.0, 2), (30.0, 5.0, 1)]


HEADER = "submit,duration,queue,tasks,cpu,gpu,priority,name,minAvailable\n"


@pytest.mark.parametrize(
    "rows, message",
    [
        ("soon,1,q,1,1,,,,\n", "line 2, column submit: 'soon' must be seconds >= 0 or an ISO time"),
        ("0,1,q,1,1,,,,\n2024-01-01 00:00:00,1,q,1,1,,,,\n", "line 3, column submit: '2024-01-01 00:00:00' mixes forms"),
        ("0,forever,q,1,1,,,,\n", "line 2, column duration: 'forever' must be a duration such as 90s"),
        ("0,1,q,0,1,,,,\n", "line 2, column tasks: '0' must be a whole number from 1 to 100000"),
        ("0,1,q,100001,1,,,,\n", "line 2, column tasks: '100001' must be a whole number from 1 to 100000"),
        ("0,1,q,1e20,1,,,,\n", "line 2, column tasks: '1e20' must be a whole number from 1 to 100000"),  # once a hang: 10^20 pods
        ("0,1,q,1,lots,,,,\n", "line 2, column cpu: 'lots' is not a quantity"),
        ("0,1,q,1,-1,,,,\n", "line 2, column cpu: '-1' must not be negative"),
        ("0,1,q,1," + "9" * 30 + ",,,,\n", f"line 2, column cpu: '{'9' * 30}' must be at most 9223372036854775807 (2^63-1)"),
        ("0,1,q,2,1,,,,3\n", "line 2, column minAvailable: '3' must be at most tasks (2)"),
        ("0,1,q,1,1,,high,,\n", "line 2, column priority: 'high' must be an integer"),
        ("0,1,q,1,1,,,Big_Job,\n", "line 2, column name: 'Big_Job' must be a lowercase RFC 1123 name"),
        ("0,1,q,1,1,,,a,\n\n0,1,q,1,1,,,a,\n", "line 4, column name: 'a' is already the name of the job at line 2"),
    ],
)
def test_csv_bad_rows_name_line_and_column(tmp_path, rows, message):
    with pytest.raises(BadRequest) as err:
        load_csv(write(tmp_path, HEADER + rows))
    assert message in err.value.message
    assert err.value.message.startswith(str(tmp_path / "jobs.csv"))


@pytest.mark.parametrize(
    "header, message",
    [
        ("submit,duration,queue,tasks,mem\n", "line 1: unknown column(s) mem: the columns are submit, duration, queue, tasks, cpu"),
        ("submit,duration,tasks,cpu\n", "the header (line 1) lacks column(s) queue"),
        ("submit,duration,queue,tasks\n", "line 1: give at least one request column: cpu, memory or gpu"),
        ("submit,duration,queue,tasks,cpu,cpu\n", "line 1: column(s) cpu appear more than once"),
    ],
)
def test_csv_bad_headers(tmp_path, header, message):
    with pytest.raises(BadRequest) as err:
        load_csv(write(tmp_path, header + "0,1,q,1,1\n"))
    assert message in err.value.message


# ----------------------------------------------------------------- objects and workload rules


def tj(name: str, queue_key: str = "q", arrival: float = 0.0, duration: float = 10.0, tasks: int = 1, **requests: str) -> TraceJob:
    return TraceJob(name, queue_key, arrival, duration, tasks, requests or {"nvidia.com/gpu": "8"}, tasks)


def test_a_gang_becomes_a_podgroup_then_its_pods_with_arrival_and_duration():
    routing = route([tj("g", tasks=2)], [queue("q").build()])
    group, *pods = job_objects([tj("g", arrival=12.5, tasks=2)], routing)
    assert isinstance(group, PodGroup) and all(isinstance(p, Pod) for p in pods)
    assert (group.spec.min_member, group.queue, group.annotations["lahar.dev/at"]) == (2, "q", "12.5")
    assert [p.name for p in pods] == ["g-0", "g-1"]
    assert pods[0].annotations == {"lahar.dev/at": "12.5", "lahar.dev/duration": "10", "scheduling.k8s.io/group-name": "g"}
    assert pods[1].requests() == {"nvidia.com/gpu": Fraction(8)}


def test_limit_keeps_the_first_jobs_and_speedup_divides_times():
    jobs = [tj("a", arrival=0, duration=100), tj("b", arrival=60, duration=30), tj("c", arrival=90)]
    faster = speed_up(limit_jobs(jobs, 2), 3.0)
    assert [(j.name, j.arrival, j.duration) for j in faster] == [("a", 0.0, 100 / 3), ("b", 20.0, 10.0)]
    with pytest.raises(BadRequest, match="--speedup: Invalid value: 0.0: must be a number > 0"):
        speed_up(jobs, 0.0)
    with pytest.raises(BadRequest, match="--limit-jobs: Invalid value: 0: must be >= 1"):
        limit_jobs(jobs, 0)


def test_default_queues_one_per_key_and_routing_of_unknown_keys():
    jobs = [tj("a", "VC1"), tj("b", "vc2"), tj("c", "default"), tj("d", "org"), tj("e", "root")]
    assert [(q.name, q.spec.weight) for q in default_queues([j.queue for j in jobs])] == [("org", 1), ("root", 1), ("vc1", 1), ("vc2", 1)]
    defined = [queue("vc1").build(), queue("org").build(), queue("team").parent("org").build()]
    routing = route(jobs, defined)
    assert routing.queues == {"VC1": "vc1", "default": "default", "org": "default", "root": "default", "vc2": "default"}
    assert routing.unknown == ["org", "root", "vc2"]  # a parent queue and root take no jobs


def test_default_cluster_serves_the_mean_demand_with_headroom_and_the_largest_gang():
    # 2 jobs over 100 s of arrivals: 8 GPUs x 100 s + 4 x 8 GPUs x 50 s = 2400 GPU-s / 100 s = 24 GPUs
    jobs = [tj("a", arrival=0, duration=100), tj("b", arrival=100, duration=50, tasks=4)]
    nodes, note = default_cluster(jobs)
    assert len(nodes) == 4 and note == "4 x cpu=64,memory=512Gi,nvidia.com/gpu=8"  # ceil(1.25 x 24 / 8)
    gang, _ = default_cluster([tj("g", tasks=16)])  # all at once: 128 GPUs, and a 16-node gang
    assert len(gang) == 20
    wide, note = default_cluster([tj("w", cpu="100", memory="1Ti")])
    assert "cpu=100,memory=1Ti" in note  # every task fits on one node


def test_default_cluster_is_never_more_than_running_every_job_at_once_needs():
    # a 2-day gang among arrivals 92 s apart: its mean demand over those 92 s is 1,878 times what
    # it asks, which sized the cluster at 436,701 nodes (a replay that seemed to hang)
    jobs = [tj("long", arrival=100, duration=172800, tasks=186), tj("short", arrival=192, duration=5400, **{"nvidia.com/gpu": "500m"})]
    nodes, note = default_cluster(jobs)
    assert len(nodes) == 233 and note.startswith("233 x ")  # ceil(1.25 x (186 x 8 + 0.5) GPUs / 8): both at once


def test_default_cluster_past_the_node_bound_asks_for_a_cluster():
    with pytest.raises(BadRequest) as err:
        default_cluster([tj("huge", tasks=90_000), tj("more", tasks=10_000)])  # 100,000 nodes' worth of GPUs, plus headroom
    assert err.value.message == (
        "the cluster sized from the trace would have 125000 nodes of cpu=64,memory=512Gi,nvidia.com/gpu=8, more than 100000: "
        "give the nodes to replay on with --cluster or --nodes"
    )


def test_cluster_specs_and_their_errors():
    nodes = parse_cluster(["2 x cpu=64,gpu=8", "1x cpu=4,memory=8Gi"])
    assert [n.name for n in nodes] == ["node-0001", "node-0002", "node-0003"]
    assert nodes[0].allocatable == {"pods": "110", "cpu": "64", "nvidia.com/gpu": "8"}
    for spec, message in [
        ("lots of nodes", "expected COUNT x RESOURCE=QUANTITY"),
        ("2 x cpu", 'Invalid value: "cpu" in "2 x cpu"'),
        ("2 x cpu=many", 'Invalid value: "many" for cpu'),
        ("0 x cpu=1", "the node count must be >= 1"),
        ("2 x memory=8Ei", r'Invalid value: "8Ei" for memory: must be at most 9223372036854775807 \(2\^63-1\)'),
    ]:
        with pytest.raises(BadRequest, match=message):
            parse_cluster([spec])


def test_trace_spec_errors():
    with pytest.raises(BadRequest, match='--trace: Invalid value: "slurm:x.csv"'):
        load_trace("slurm:x.csv")
    with pytest.raises(BadRequest, match="nope.csv: no such file"):
        load_trace("csv:nope.csv")
    with pytest.raises(BadRequest, match="--queue-key: only for alibaba traces"):
        load_trace("philly:x.csv", "qos")


@needs_traces
def test_workload_objects_are_fresh_for_each_run():
    workload = build_workload(f"philly:{PHILLY}", limit=20)
    first, routing = workload.objects(None)
    second, _ = workload.objects(None)
    assert [o.key for o in first] == [o.key for o in second]
    assert all(a is not b for a, b in zip(first, second))
    assert set(routing.queues.values()) <= {o.name for o in first if o.kind == "Queue"}
    assert workload.cluster_note.endswith("x cpu=64,memory=512Gi,nvidia.com/gpu=8")
