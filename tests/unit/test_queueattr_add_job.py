"""``add_job``: a queue's allocation grows by what the job's allocated tasks hold, its request by
those and its pending tasks; a scalar the job gave back entirely does not appear as a zero."""

from __future__ import annotations

from lahar.resources import Resource
from lahar.scheduler.api import JobInfo, TaskInfo, TaskStatus
from lahar.scheduler.plugins.queueattr import QueueAttr, add_job

GPU = "nvidia.com/gpu"


def _task(uid: str, status: TaskStatus, cpu: float, gpus: int = 0) -> TaskInfo:
    return TaskInfo(uid, uid, "ns", "ns/j", Resource(cpu, 2.0**30, {GPU: gpus * 1000.0} if gpus else None), status=status)


def _job() -> JobInfo:
    job = JobInfo("ns/j", "j", "ns", "q", min_available=1)
    job.add_task(_task("run", TaskStatus.RUNNING, 1000.0))
    job.add_task(_task("bound", TaskStatus.BOUND, 2000.0))
    job.add_task(_task("wait", TaskStatus.PENDING, 4000.0, gpus=1))
    job.add_task(_task("done", TaskStatus.SUCCEEDED, 8000.0))
    gpu = _task("gpu", TaskStatus.RUNNING, 500.0, gpus=2)
    job.add_task(gpu)
    job.update_task_status(gpu, TaskStatus.SUCCEEDED)  # gives its two GPUs back
    return job


def test_allocation_and_request_of_a_job():
    attr = QueueAttr(name="q")
    add_job(attr, _job())
    assert (attr.allocated.milli_cpu, attr.allocated.memory) == (3000.0, 2 * 2.0**30)
    assert (attr.request.milli_cpu, attr.request.memory) == (7000.0, 3 * 2.0**30)
    assert attr.request.get(GPU) == 1000.0


def test_a_scalar_given_back_is_not_kept_as_a_zero():
    attr = QueueAttr(name="q")
    add_job(attr, _job())
    assert GPU not in (attr.allocated.scalars or {})


def test_jobs_add_up():
    attr = QueueAttr(name="q")
    add_job(attr, _job())
    add_job(attr, _job())
    assert attr.allocated.milli_cpu == 6000.0 and attr.request.get(GPU) == 2000.0


def test_a_job_with_no_waiting_task_requests_what_it_holds():
    job = JobInfo("ns/r", "r", "ns", "q", min_available=1)
    job.add_task(_task("run", TaskStatus.RUNNING, 1000.0, gpus=1))
    attr = QueueAttr(name="q")
    add_job(attr, job)
    assert (attr.request.milli_cpu, attr.request.get(GPU)) == (1000.0, 1000.0)
    assert (attr.allocated.milli_cpu, attr.allocated.get(GPU)) == (1000.0, 1000.0)


def test_a_queue_s_attributes_start_empty_and_survive_pickling():
    """Each queue gets its own empty totals (never shared between two), and a pickled session's
    attributes read back as they were (``bench/checkpoint.py`` saves whole replays)."""
    import pickle

    one, other = QueueAttr("a", 3), QueueAttr("b", deserved=Resource(1000.0, 0.0))
    assert (one.name, one.weight, one.share, one.parent, one.capability) == ("a", 3, 0.0, None, None)
    assert one.allocated is not other.allocated and one.ancestors is not other.ancestors
    assert one.deserved == Resource() and other.deserved == Resource(1000.0, 0.0) and other.weight == 1
    add_job(one, _job())
    one.ancestors.append("root")
    back = pickle.loads(pickle.dumps(one))
    assert back == one and back.allocated == one.allocated and back.ancestors == ["root"]
    assert other.allocated == Resource()
