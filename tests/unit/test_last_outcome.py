"""A cycle reads each job's last outcome from the ``previous`` map its caller gives it (the
outcomes it applied last): whatever map that is (the last result's, an older one's, a copy, a
map of the caller's own, none), each outcome a cycle keeps must be that map's outcome for the
job, never one from another map, and ``changed`` must name exactly the jobs whose outcome does
not read the same as that map's. Run against the compiled core too (nothing here replaces a
function inside it)."""

from __future__ import annotations

import random

import pytest

from lahar.model.workload import PodGroup
from lahar.scheduler import cycle
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import CycleResult, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.builders import node, pod, podgroup, queue

CONF = load_config(default_config_text())


def _check(result: CycleResult, previous: dict | None, earlier: set[int], state: ClusterState) -> None:
    """``result`` lists every job in session order (creation time, then key); every outcome of
    it that an earlier result held is ``previous``'s for that job; ``changed`` is every job
    whose outcome is not ``previous``'s and does not read the same."""
    assert list(result.jobs) == [uid for _, uid in sorted((job.creation, uid) for uid, job in state.jobs.items())]
    given = previous if previous is not None else {}
    for uid, outcome in result.jobs.items():
        if id(outcome) in earlier:
            assert outcome is given.get(uid), uid
    expected = [uid for uid, o in result.jobs.items() if uid not in given or (o is not given[uid] and not o.same_status(given[uid]))]
    assert result.changed == expected


def _pick_previous(rng: random.Random, results: list[CycleResult]) -> dict | None:
    """The last result's map mostly; else an older one's, a copy, a map missing or changing
    entries, an empty one, or none."""
    if not results:
        return None
    last = results[-1].jobs
    move = rng.random()
    if move < 0.5:
        return last
    if move < 0.6 and len(results) > 2:
        return results[-3].jobs
    if move < 0.7:
        return dict(last)
    if move < 0.8 and last:
        changed = dict(last)
        victim, other = rng.choice(list(changed)), rng.choice(list(changed))
        if rng.random() < 0.5:
            del changed[victim]
        else:
            changed[victim] = last[other]
        return changed
    if move < 0.9:
        return {}
    return None


def _created(step: int, rng: random.Random) -> str:
    """A podgroup's creation time: mostly later than the ones before (a job comes last in
    session order), sometimes earlier (it comes among them)."""
    second = step if rng.random() < 0.85 else rng.randint(0, step)
    return f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def _random_steps() -> tuple[int, int, int]:
    """Random steps on a cluster where look-alike jobs wait (come, bind, end, go), each followed
    by a cycle (look-alikes hidden or not) given one of several maps as ``previous``, each
    result checked (``_check``). How many outcomes were kept, how many closes given the last
    result's map recorded theirs for the next one (``cache.JobOrder.closed``), and how many
    look-alikes were hidden in all."""
    rng = random.Random(5)
    state = ClusterState.from_objects([queue("work").weight(1).build(), queue("side").weight(1).build(), node("n1", cpu=64, memory="512Gi", gpu=8, pods=110)])
    pods: dict[str, tuple[str, int]] = {}
    results: list[CycleResult] = []
    earlier: set[int] = set()
    kept = recorded = 0
    for step in range(300):
        move = rng.random()
        name = f"j{rng.randint(0, 24):02d}"
        if move < 0.35:
            owner, gpu = ("work", 2) if rng.random() < 0.7 else ("side", 1)
            group = podgroup(name).queue(owner).min_member(1).phase("Inqueue").manifest()
            group["metadata"]["creationTimestamp"] = _created(step, rng)
            state.upsert(PodGroup.model_validate(group))
            state.upsert(pod(f"{name}-0").group(name).requests(gpu=gpu).build())
            pods[f"{name}-0"] = (name, gpu)
        elif move < 0.5 and f"{name}-0" in pods:
            group, gpu = pods[f"{name}-0"]
            state.upsert(pod(f"{name}-0").group(group).requests(gpu=gpu).on("n1", phase="Succeeded").build())
        elif move < 0.6:
            state.forget_job(f"default/{name}")
        previous = _pick_previous(rng, results)
        result = run_cycle(state, CONF, float(step), uid=f"c{step}", previous=previous, lookalikes=rng.random() < 0.7)
        _check(result, previous, earlier, state)
        recorded += previous is not None and previous is (results[-1].jobs if results else None) and state.job_order is not None and state.job_order.closed is result.jobs
        kept += sum(1 for uid, o in result.jobs.items() if previous is not None and previous.get(uid) is o)
        for decision in result.decisions:
            pod_name = decision.task.split("/")[-1]
            if decision.type == "bind" and pod_name in pods:
                group, gpu = pods[pod_name]
                state.upsert(pod(pod_name).group(group).requests(gpu=gpu).on(decision.node).build())
        results.append(result)
        earlier.update(id(o) for o in result.jobs.values())
    return kept, recorded, sum(r.lookalikes_hidden for r in results)


def test_each_kept_outcome_is_the_given_maps_whatever_map_the_caller_gives():
    """``_random_steps``: each result lists its jobs in session order, whether the close started
    from the last outcomes (``cycle._outcomes_start``: the last result's map, with jobs gone and
    come since) or not."""
    kept, recorded, hidden = _random_steps()
    assert kept > 1000  # outcomes were kept: the steps exercised the path under test
    assert recorded > 100
    assert hidden > 100  # and look-alikes were hidden


@pytest.mark.python_source  # watches a function inside the scheduling core (see tests/test_python_source.py)
def test_the_random_steps_start_many_closes_from_the_last_outcomes(monkeypatch):
    """The same steps, counting the closes that started from a copy of the last outcomes and the
    jobs that copy already listed: the path the steps above check is the one they take."""
    started = {"closes": 0, "jobs": 0}
    real = cycle._outcomes_start

    def counted(ssn, previous):
        outcomes, unchanged = real(ssn, previous)
        started["closes"] += unchanged > 0
        started["jobs"] += unchanged
        return outcomes, unchanged

    monkeypatch.setattr(cycle, "_outcomes_start", counted)
    _random_steps()
    assert started["closes"] > 100 and started["jobs"] > 1000


def test_a_second_caller_with_its_own_maps_gets_its_own_outcomes_back():
    """Two callers take turns on one state, each passing the map its own last cycle returned:
    each one's kept outcomes are its own map's."""
    state = ClusterState.from_objects([queue("work").weight(1).build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    for name, cpu in (("run", 2), ("wait", 8), ("w2", 8)):
        state.upsert(podgroup(name).queue("work").min_member(1).build())
        state.upsert(pod(f"{name}-0").group(name).requests(cpu=cpu, memory="1Gi").build())
    mine = run_cycle(state, CONF, 0.0, uid="a0", lookalikes=True)
    theirs = run_cycle(state, CONF, 0.0, uid="b0", lookalikes=True)
    earlier = {id(o) for r in (mine, theirs) for o in r.jobs.values()}
    for turn in range(1, 6):
        for owner in ("a", "b"):
            last = mine if owner == "a" else theirs
            result = run_cycle(state, CONF, float(turn), uid=f"{owner}{turn}", previous=last.jobs, lookalikes=True)
            _check(result, last.jobs, earlier, state)
            assert all(result.jobs[uid] is last.jobs[uid] for uid in ("default/wait", "default/w2"))
            earlier.update(id(o) for o in result.jobs.values())
            mine, theirs = (result, theirs) if owner == "a" else (mine, result)
