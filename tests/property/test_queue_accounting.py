"""A queue's accounting (``queueattr.add_job``, shared by proportion and capacity) adds, for each
job, exactly what Volcano's per-job formulas give: ``allocated``, ``request`` (allocated plus
pending), ``inqueue`` (``GetInqueueResource``) and ``elastic`` (``GetElasticResources``), with
and without minResources, including scalars that are zero or negative in a job's running sum."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.model import PodGroup
from lahar.resources import Resource
from lahar.scheduler.api import JobInfo, TaskInfo, TaskStatus
from lahar.scheduler.plugins.queueattr import QueueAttr, add_job

GPU = "nvidia.com/gpu"
ALLOCATED = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
statuses = st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.SUCCEEDED])
tasks = st.lists(st.tuples(statuses, st.integers(0, 4000), st.integers(0, 8), st.booleans()), max_size=6)
# minResources with and without a scalar (most name only cpu and memory)
minimums = st.none() | st.fixed_dictionaries({"cpu": st.integers(0, 8000)}, optional={GPU: st.integers(0, 16)})


def _job(index: int, members, minimum, phase: str) -> JobInfo:
    min_resources = None
    podgroup = None
    if minimum is not None:
        listed = {"cpu": f"{minimum['cpu']}m", **({GPU: str(minimum[GPU])} if GPU in minimum else {})}
        min_resources = Resource.from_list(listed)
        podgroup = PodGroup.model_validate(
            {"metadata": {"name": f"j{index}"}, "spec": {"minMember": 1, "queue": "q", "minResources": listed}, "status": {"phase": phase}}
        )
    job = JobInfo(f"ns/j{index}", f"j{index}", "ns", "q", min_available=1, podgroup=podgroup, min_resources=min_resources)
    job.phase = phase
    for n, (status, cpu, gpus, leaves) in enumerate(members):
        scalars = {GPU: gpus * 1000.0} if gpus else None
        task = TaskInfo(f"t{index}-{n}", f"t{n}", "ns", job.uid, Resource(float(cpu), 2.0**20 * n, scalars), status=status)
        job.add_task(task)
        if leaves:  # its share of the running sum goes back to zero (a gpu key at 0.0 may stay)
            job.delete_task(task)
    return job


def _volcano_inqueue(job: JobInfo) -> Resource:
    """Volcano's GetInqueueResource as a Resource of its own, for an admitted job: Inqueue, or
    Running with at least minMember tasks allocated; per name in minResources, ``min - allocated``
    where positive (a scalar the job holds none of: its whole minimum; ``pods`` never so)."""
    out = Resource()
    if job.podgroup is None or job.podgroup.spec.min_resources is None:
        return out
    allocated_tasks = sum(len(tasks) for status, tasks in job.status_index.items() if status in ALLOCATED)
    if job.phase != "Inqueue" and not (job.phase == "Running" and allocated_tasks >= job.podgroup.spec.min_member):
        return out
    minimum, allocated = job.get_min_resources(), job.allocated
    for name in job.podgroup.spec.min_resources:
        if name in ("cpu", "memory"):
            gap = minimum.get(name) - allocated.get(name)
            if gap > 0:
                setattr(out, "milli_cpu" if name == "cpu" else "memory", gap)
        elif not name.startswith("count/"):
            held = (allocated.scalars or {}).get(name)
            if held is None and name != "pods":
                out.set_scalar(name, minimum.get(name))
            elif minimum.get(name) - (held or 0.0) > 0:
                out.set_scalar(name, minimum.get(name) - (held or 0.0))
    return out


def _expected(jobs: list[JobInfo]) -> dict[str, Resource]:
    totals = {name: Resource() for name in ("allocated", "request", "inqueue", "elastic")}
    for job in jobs:
        for task in job.tasks.values():
            if task.status in ALLOCATED:
                totals["allocated"].add(task.resreq)
                totals["request"].add(task.resreq)
            elif task.status is TaskStatus.PENDING:
                totals["request"].add(task.resreq)
        totals["inqueue"].add(_volcano_inqueue(job))
        totals["elastic"].add(job.get_elastic_resources())
    return totals


def _values(resource: Resource) -> dict[str, float]:
    out = {"cpu": resource.milli_cpu, "memory": resource.memory}
    out.update({name: value for name, value in (resource.scalars or {}).items() if value})
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(tasks, minimums, st.sampled_from(["Pending", "Inqueue", "Running"])), max_size=5))
def test_add_job_matches_the_per_job_formulas(specs):
    jobs = [_job(i, members, minimum, phase) for i, (members, minimum, phase) in enumerate(specs)]
    attr = QueueAttr("q")
    for job in jobs:
        add_job(attr, job)
    expected = _expected(jobs)
    for name, total in expected.items():
        assert _values(getattr(attr, name)) == _values(total), name


def _exact(resource: Resource) -> tuple:
    """Every value and scalar key, in order, as a later ``Resource.add`` would meet them."""
    return resource.milli_cpu, resource.memory, None if resource.scalars is None else list(resource.scalars.items())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(tasks, minimums, st.sampled_from(["Pending", "Inqueue", "Running"])), max_size=5))
def test_add_job_adds_what_the_built_parts_would_add(specs):
    """``add_job`` adds inqueue and elastic in place: the same values and scalar keys, in the same
    order, as adding the parts Volcano's formulas build (``_volcano_inqueue``, ``get_elastic_resources``)."""
    jobs = [_job(i, members, minimum, phase) for i, (members, minimum, phase) in enumerate(specs)]
    attr = QueueAttr("q")
    inqueue, elastic = Resource(), Resource()
    for job in jobs:
        add_job(attr, job)
        inqueue.add(_volcano_inqueue(job))
        elastic.add(job.get_elastic_resources())
    assert _exact(attr.inqueue) == _exact(inqueue)
    assert _exact(attr.elastic) == _exact(elastic)


scalar_maps = st.none() | st.dictionaries(st.sampled_from([GPU, "pods", "example.com/fpga"]), st.sampled_from([-1.0, 0.0, 500.0, 2000.0]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4000), scalar_maps, st.integers(0, 4000), scalar_maps)
def test_the_elastic_part_is_added_as_volcanos_exceeded_part_would_add_it(cpu, held_scalars, min_cpu, min_scalars):
    """``_add_exceeded`` against ``total.add(exceeded_part(held, minimum))``, scalars that read as
    unlimited (-1) and minimums without scalars included: same values, same keys, same order."""
    from lahar.resources import exceeded_part
    from lahar.scheduler.plugins.queueattr import _add_exceeded

    held, minimum = Resource(float(cpu), 0.0, held_scalars), Resource(float(min_cpu), 0.0, min_scalars)
    in_place, built = Resource(1.0, 0.0, {"pods": 3.0}), Resource(1.0, 0.0, {"pods": 3.0})
    _add_exceeded(in_place, held, minimum)
    built.add(exceeded_part(held, minimum))
    assert _exact(in_place) == _exact(built)
