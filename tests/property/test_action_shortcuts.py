"""The shortcuts of allocate, preempt and reclaim change no decision. allocate and reclaim pass
over a queue that refuses every pending task of its jobs, writing the same notes
(``_refused_throughout``); preempt passes over a queue whose starving jobs could do nothing,
without taking its jobs in order (``_nothing_to_do``), and a task with no victim on any node that
its queue refuses gives up before any node is looked at (``_prospects``), and phase B passes over
a job with no running task of its own whose queue refuses all its waiting tasks
(``_gives_up_inside``); reclaim leaves out a walk over the nodes that a task asking alike made
with no node moved since (``_reclaim_for_task``'s ``walked``). Each run here is made
twice, once with the shortcuts and once taking every job and node the long way, and every
cycle's decisions, phases, reasons and notes must be the same.

The three actions also build their job and task heaps late (at a queue's first turn, or for
reclaim when a job is first taken in order), where Volcano builds them when the action starts;
runs with the heaps built up front must decide the same. Reclaim must build every queue's heaps
before its first eviction (an eviction can reorder a later queue's jobs); the scenarios here
decide the same either way, so a test checks that order itself, on a scenario where two queues
reclaim in one cycle."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lahar.scheduler.actions import ACTIONS, allocate, preempt, reclaim
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.statement import Statement
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from tests.builders import node, pod, podgroup, queue
from tests.trace_slice import BACKLOG_CLUSTERS, fingerprint, replay_slice

# replaces functions inside the scheduling core (see tests/test_python_source.py)
pytestmark = pytest.mark.python_source

ROOT = Path(__file__).resolve().parents[2]


def _long_way(monkeypatch) -> None:
    """The actions without their shortcuts: every job in order, every task to the node loop."""
    monkeypatch.setattr(allocate, "_refused_throughout", lambda *args: False)
    monkeypatch.setattr(preempt, "_nothing_to_do", lambda *args: False)
    monkeypatch.setattr(preempt, "_gives_up_inside", lambda *args: False)
    monkeypatch.setattr(reclaim, "_refused_throughout", lambda *args: False)
    for_task = reclaim._reclaim_for_task

    def every_walk(ssn, stmt, task, job, minimal, protect, failed, walked):
        for_task(ssn, stmt, task, job, minimal, protect, failed, {})  # no walk left out

    monkeypatch.setattr(reclaim, "_reclaim_for_task", every_walk)
    original = preempt._prospects

    def prospects(ssn, preemptor, job, queue, key, phase):
        found = original(ssn, preemptor, job, queue, key, phase)
        if found is not None and not found and ssn.node_index is not None:
            held = preempt._held(ssn, preemptor, job.queue if phase == "A" else job.uid, phase, key)
            return preempt._possible_nodes(ssn, preemptor, held) or found  # the nodes it would have tried
        return found

    monkeypatch.setattr(preempt, "_prospects", prospects)


def _eager_heaps(monkeypatch) -> None:
    """Every job and task heap built when its action starts, as Volcano builds them."""
    built: dict[str, object] = {}  # allocate's heaps by queue, then preempt's ("preempt " + queue)
    build_context, job_heap = allocate._build_context, allocate._job_heap

    def eager_context(ssn):
        queues, waiting = build_context(ssn)
        sheets: dict = {}
        built.clear()
        built.update({uid: (job_heap(ssn, entries, sheets), sheets) for uid, entries in waiting.items()})
        return queues, waiting

    def stored_heap(ssn, entries, worksheets):
        jobs, sheets = built.pop(entries[0][0].queue)
        worksheets.update(sheets)
        return jobs

    monkeypatch.setattr(allocate, "_build_context", eager_context)
    monkeypatch.setattr(allocate, "_job_heap", stored_heap)
    preempt_execute, preempt_heaps = preempt.execute, preempt._heaps

    def preempt_up_front(ssn):
        built.clear()
        for job in ssn.jobs.values():  # the starving jobs as preempt chooses them, by queue
            queue = ssn.queues.get(job.queue)
            if not job.is_pending() and ssn.job_valid(job)[0] and queue is not None and not ssn.suspended(queue) and ssn.job_starving(job):
                built.setdefault("preempt " + job.queue, []).append(job)
        for name in [k for k in built if k.startswith("preempt ")]:
            built[name] = preempt_heaps(ssn, built[name])
        preempt_execute(ssn)

    monkeypatch.setitem(ACTIONS, "preempt", preempt_up_front)
    monkeypatch.setattr(preempt, "_heaps", lambda ssn, starving: built.pop("preempt " + starving[0].queue))
    heaps_init = reclaim._Heaps.__init__

    def reclaim_up_front(self, ssn, starving):
        heaps_init(self, ssn, starving)
        self.built()

    monkeypatch.setattr(reclaim._Heaps, "__init__", reclaim_up_front)


def _counted(fn, answers: list[bool]):
    def counted(*args):
        answers.append(fn(*args))
        return answers[-1]

    return counted


def _calls(patch, module, name: str) -> list[None]:
    """A list that grows by one at every call of ``module.name`` (patched to count)."""
    calls: list[None] = []
    fn = getattr(module, name)

    def counted(*args):
        calls.append(None)
        return fn(*args)

    patch.setattr(module, name, counted)
    return calls


def _trace_cycles(nodes: str) -> list:
    seen: list = []
    replay_slice(nodes, [lambda s, record: seen.append(_fingerprint(record))])
    return seen


def _fingerprint(record) -> tuple:
    return (*fingerprint(record), record.result.session.notes)  # the notes the reasons are made of


@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_a_trace_backlog_gets_the_same_decisions_the_long_way(monkeypatch, nodes):
    shortcuts = {"allocate": (allocate, "_refused_throughout"), "preempt A": (preempt, "_nothing_to_do"), "preempt B": (preempt, "_gives_up_inside"), "reclaim": (reclaim, "_refused_throughout")}
    passed_over: dict[str, list[bool]] = {label: [] for label in shortcuts}
    later_turns: list[bool] = []  # allocate's queue that placed a job and then refuses the rest
    with monkeypatch.context() as patch:
        for label, (module, name) in shortcuts.items():
            patch.setattr(module, name, _counted(getattr(module, name), passed_over[label]))
        patch.setattr(allocate, "_refuses_the_rest", _counted(allocate._refuses_the_rest, later_turns))
        short = _trace_cycles(nodes)
    assert all(sum(answers) > 100 for answers in passed_over.values()), {k: sum(v) for k, v in passed_over.items()}  # each was taken
    assert sum(later_turns) > 50, sum(later_turns)
    long = _patched(_long_way, lambda: _trace_cycles(nodes))
    assert any(reason != "None" for _, _, jobs, _ in short for _, _, reason in jobs)  # jobs did wait
    assert short == long


def _scenario_cycles(name: str) -> list:
    objects, conf = load_simulation_inputs([str(SCENARIOS[name])], None)
    sim = Simulation(objects, conf, period=1.0)
    sim.run_cycles(30)
    return [_fingerprint(record) for record in sim.cycles]


# The seed scenarios, and scenarios made for these tests (two queues reclaiming in one cycle)
SCENARIOS = {p.stem: p for folder in (ROOT / "examples" / "seeds", ROOT / "tests" / "data" / "scenarios") for p in folder.glob("*.yaml")}
SCENARIO_NAMES = sorted(SCENARIOS)


def _patched(patch_with, run):
    """``run()`` with the actions patched by ``patch_with``."""
    with pytest.MonkeyPatch.context() as patch:
        patch_with(patch)
        return run()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_seed_scenarios_get_the_same_decisions_the_long_way(name):
    assert _scenario_cycles(name) == _patched(_long_way, lambda: _scenario_cycles(name))


@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_heaps_built_late_decide_as_heaps_built_up_front(nodes):
    assert _trace_cycles(nodes) == _patched(_eager_heaps, lambda: _trace_cycles(nodes))
    late = [_scenario_cycles(name) for name in SCENARIO_NAMES]
    assert late == _patched(_eager_heaps, lambda: [_scenario_cycles(name) for name in SCENARIO_NAMES])


def test_reclaim_builds_every_queues_heaps_before_its_first_eviction(monkeypatch):
    """Why reclaim's late heaps decide as Volcano's: an eviction can change the order of a job in
    a queue yet to take its turn, so every queue's heaps must exist before anything is evicted
    (built at each queue's own turn, they would order jobs by the state after the evictions)."""
    heaps: list[reclaim._Heaps] = []
    reclaiming: list[bool] = []
    with_other_queues_waiting = 0
    init, for_task, evict = reclaim._Heaps.__init__, reclaim._reclaim_for_task, Statement.evict

    def remembered(self, ssn, starving):
        init(self, ssn, starving)
        heaps.append(self)

    def flagged(*args):
        reclaiming.append(True)
        try:
            for_task(*args)
        finally:
            reclaiming.pop()

    def checked(self, task, reason):
        nonlocal with_other_queues_waiting
        if reclaiming:
            current = heaps[-1]
            assert current.jobs is not None and set(current.jobs) == set(current.starving)
            with_other_queues_waiting += len(current.starving) > 1
        evict(self, task, reason)

    monkeypatch.setattr(reclaim._Heaps, "__init__", remembered)
    monkeypatch.setattr(reclaim, "_reclaim_for_task", flagged)
    monkeypatch.setattr(Statement, "evict", checked)
    for name in SCENARIO_NAMES:
        _scenario_cycles(name)
    assert with_other_queues_waiting > 0  # the check met a cycle where it matters


def _reclaim_cluster(lender_reclaimable: bool):
    """Two nodes full of a lender's running tasks (reclaimable or not), a third full of a queue's
    that may not be reclaimed, and eight one-task jobs of a third queue waiting below its share:
    their tasks ask alike, so after one walk over the nodes finds no room the others may leave
    theirs out while no node moved."""
    objects = [
        queue("a").weight(2).build(),
        queue("lender").weight(1).reclaimable(lender_reclaimable).build(),
        queue("keeper").weight(1).reclaimable(False).build(),
        *(node(f"n{i}", cpu=4, memory="16Gi", pods=20) for i in range(3)),
    ]
    for i, owner in enumerate(("lender", "lender", "keeper")):
        objects.append(podgroup(f"{owner}-{i}").queue(owner).min_member(1).phase("Running").build())
        objects += [pod(f"{owner}-{i}-{k}").group(f"{owner}-{i}").requests(cpu=1, memory="1Gi").on(f"n{i}").build() for k in range(4)]
    for i in range(8):
        objects.append(podgroup(f"w{i}").queue("a").min_member(1).phase("Inqueue").build())
        objects.append(pod(f"w{i}-0").group(f"w{i}").requests(cpu=1, memory="1Gi").build())
    return ClusterState.from_objects(objects)


def _reclaim_runs(lender_reclaimable: bool) -> list:
    state, conf = _reclaim_cluster(lender_reclaimable), load_config(default_config_text())
    found = []
    for n in range(3):
        result = run_cycle(state, conf, float(n), uid=f"cycle-{n}")
        found.append(([(d.type, d.task, d.node) for d in result.decisions], result.session.notes))
    return found


@pytest.mark.parametrize("lender_reclaimable", [False, True])
def test_reclaim_leaves_out_only_walks_that_would_find_nothing(lender_reclaimable):
    """Reclaim leaves out the walk of a task that asks as one before it did, over the same
    nodes, when that walk found no room and no node moved since (``walked``). With nothing to
    take (the lender may not be reclaimed) every walk after the first is left out; with victims
    to take, each eviction moves a node and the next task walks again. Either way every cycle's
    decisions and notes must be those of walking for every task."""
    with pytest.MonkeyPatch.context() as patch:
        reclaims, walks = _calls(patch, reclaim, "_reclaim_for_task"), _calls(patch, reclaim, "_reclaim_on_nodes")
        short = _reclaim_runs(lender_reclaimable)
    long = _patched(_long_way, lambda: _reclaim_runs(lender_reclaimable))
    assert short == long
    if lender_reclaimable:
        assert any(d[0] == "evict" for decisions, _ in short for d in decisions)
    else:
        assert len(reclaims) > len(walks) > 0, (len(reclaims), len(walks))


def _random_reclaim_cluster(rng: random.Random) -> ClusterState:
    """Three nodes of 4 CPUs holding a lender's and a keeper's running tasks (the keeper may not
    be reclaimed), a queue with gang jobs waiting (one or two tasks of 1 or 2 CPUs), weights
    drawn at random: reclaim takes some, fails others, and discards gangs it placed in part."""
    objects = [queue("a").weight(rng.randint(1, 3)).build(), queue("lender").weight(rng.randint(1, 3)).build(), queue("keeper").weight(1).reclaimable(False).build()]
    objects += [node(f"n{i}", cpu=4, memory="16Gi", pods=20) for i in range(3)]
    for i in range(3):
        owners = rng.choice([["lender"] * 4, ["keeper"] * 4, ["lender", "lender", "keeper", "keeper"], ["lender"] * 3])
        for k, owner in enumerate(owners):
            objects.append(podgroup(f"{owner}-{i}-{k}").queue(owner).min_member(1).phase("Running").build())
            objects.append(pod(f"{owner}-{i}-{k}-0").group(f"{owner}-{i}-{k}").requests(cpu=1, memory="1Gi").on(f"n{i}").build())
    for j in range(rng.randint(2, 6)):
        size, cpu = rng.randint(1, 2), rng.randint(1, 2)
        objects.append(podgroup(f"w{j}").queue("a").min_member(size).phase("Inqueue").build())
        objects += [pod(f"w{j}-{k}").group(f"w{j}").requests(cpu=cpu, memory="1Gi").build() for k in range(size)]
    return ClusterState.from_objects(objects)


def _random_reclaim_runs(seeds: range) -> list:
    conf = load_config(default_config_text())
    found = []
    for seed in seeds:
        state = _random_reclaim_cluster(random.Random(seed))
        for n in range(2):
            result = run_cycle(state, conf, float(n), uid=f"cycle-{n}")
            found.append((seed, [(d.type, d.task, d.node) for d in result.decisions], result.session.notes))
    return found


def test_reclaim_walks_left_out_change_nothing_in_random_clusters():
    """Random small clusters where reclaim takes, fails and discards: the same decisions and
    notes with walks left out as walking for every task."""
    with pytest.MonkeyPatch.context() as patch:
        reclaims, walks = _calls(patch, reclaim, "_reclaim_for_task"), _calls(patch, reclaim, "_reclaim_on_nodes")
        short = _random_reclaim_runs(range(150))
    assert len(reclaims) > len(walks)  # some were left out
    assert any(d[0] == "evict" for _, decisions, _ in short for d in decisions)
    assert short == _patched(_long_way, lambda: _random_reclaim_runs(range(150)))
