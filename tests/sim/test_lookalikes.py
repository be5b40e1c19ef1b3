"""Look-alike waiting jobs hidden from the actions (``lahar.scheduler.lookalikes``) change no
result: a replay whose backlog is made of them decides, phases, explains and conditions every
job exactly as one that looks at every job, cycle by cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

import lahar.sim.engine as engine
from lahar.scheduler import cycle, lookalikes
from lahar.scheduler.plugins import queueattr
from lahar.model.workload import Pod, PodGroup
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import JobOutcome, open_session, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay_position, run_replay
from lahar.sim.engine import Simulation
from lahar.sim.metrics import MetricsCollector
from lahar.sim.traces import build_workload, parse_cluster
from tests.builders import node, pod, podgroup, queue

HEAD = Path(__file__).resolve().parents[1] / "data" / "traces" / "philly-head.csv"


def _fingerprint(record) -> tuple:
    result = record.result
    jobs = [
        (uid, o.phase, o.queue, repr(o.reason), repr(o.conditions), o.running, o.succeeded, o.failed)
        for uid, o in result.jobs.items()
    ]
    decisions = [(d.type, d.task, d.node, d.reason) for d in result.decisions]
    return record.time, decisions, jobs, result.changed


def _replay(nodes: str, hiding: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    """Philly's first 150 jobs on a small cluster (a backlog builds up, then drains), every
    cycle's fingerprint and the metrics; ``hiding`` False: every cycle looks at every job."""
    with monkeypatch.context() as patch:
        if not hiding:
            patch.setattr(engine, "run_cycle", lambda *args, **kwargs: run_cycle(*args, **{**kwargs, "lookalikes": False}))
        workload = build_workload(f"philly:{HEAD}", limit=150)
        workload.nodes = parse_cluster([nodes])
        objects, _ = workload.objects(None)
        seen: list = []
        collector = MetricsCollector()
        sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=[collector, lambda s, r: seen.append(_fingerprint(r))])
        sim.keep_cycles = False
        run_replay(sim, replay_position(objects, Clock(1.0, None, None)))
        return seen, collector.result(sim)


@pytest.mark.parametrize("nodes", ["3 x cpu=64,memory=512Gi,gpu=8", "5 x cpu=64,memory=512Gi,gpu=8"])
def test_a_backlog_replayed_with_lookalikes_hidden_is_the_same_cycle_by_cycle(monkeypatch, nodes):
    hidden, hidden_metrics = _replay(nodes, True, monkeypatch)
    every, every_metrics = _replay(nodes, False, monkeypatch)
    assert len(hidden) == len(every)
    for mine, theirs in zip(hidden, every):
        assert mine == theirs
    assert hidden_metrics == every_metrics
    assert any("deserved" in reason for _, _, jobs, _ in every for _, _, _, reason, *_ in jobs)  # jobs waited at their share


@pytest.mark.python_source
def test_the_replay_hides_lookalikes_in_cycles_that_bind_and_that_reserve(monkeypatch):
    """The shortcut is taken (jobs hidden, the cycle settled) in cycles that bind and in cycles
    where preempt reserves a task of a gang in a queue that hides nothing; the replay above
    compares each of them with the long way. Most hidden jobs are set aside before the plugins
    open (counted at once by proportion). The cycles that run again in full are the tests'
    below: this replay has none left."""
    taken = {"hidden": 0, "grouped": 0, "settled": 0, "settled with binds": 0, "settled with reservations": 0}
    hide, group, settled = cycle.hide, cycle.group, cycle.settled

    def counted_group(ssn):
        found = group(ssn)
        taken["grouped"] += len(found.first_of) if found is not None else 0
        return found

    def counted_hide(ssn, grouped):
        found = hide(ssn, grouped)
        taken["hidden"] += len(found.first_of) if found is not None else 0
        return found

    def counted_settled(ssn, found):
        answer = settled(ssn, found)
        kinds = {d.type for d in ssn.decisions} if answer else set()
        taken["settled"] += 1 if answer else 0
        taken["settled with binds"] += 1 if "bind" in kinds else 0
        taken["settled with reservations"] += 1 if "pipeline" in kinds else 0
        return answer

    monkeypatch.setattr(cycle, "group", counted_group)
    monkeypatch.setattr(cycle, "hide", counted_hide)
    monkeypatch.setattr(cycle, "settled", counted_settled)
    _replay("3 x cpu=64,memory=512Gi,gpu=8", True, monkeypatch)
    assert taken["hidden"] > 1000 and taken["settled"] > 50, taken
    assert taken["settled with binds"] > 10, taken  # look-alikes shown after a placement (``show_next``)
    assert taken["settled with reservations"] > 100, taken  # preempt's reservations (``told``)
    assert taken["grouped"] > 500, taken  # most of them set aside before the plugins opened


def test_the_cycle_after_one_that_decided_hides_lookalikes_too(monkeypatch):
    """A cycle that follows a decision with no task ended since hides its look-alikes as a quiet
    cycle does (in a deep backlog it mostly decides nothing: the tasks just bound start running
    and the queue stays at its share); where such cycles keep deciding, as in this small
    cluster, the tries that have to run again back the next ones off."""
    tries: list[tuple[bool, bool, int]] = []  # (the cycle before decided, this one hid, ran again)
    last: list = [None]

    def observe(s, record):
        result = record.result
        if last[0] is not None and not record.completed:
            tries.append((bool(last[0].decisions), result.lookalikes_hidden > 0, result.lookalikes_ran_again))
        last[0] = result

    with monkeypatch.context() as patch:
        original = Simulation.__init__

        def with_observer(self, *args, **kwargs):
            original(self, *args, **kwargs)
            self.observers.append(observe)

        patch.setattr(Simulation, "__init__", with_observer)
        _replay("3 x cpu=64,memory=512Gi,gpu=8", True, monkeypatch)
    after_decision = [(hid, again) for decided, hid, again in tries if decided]
    hid = sum(1 for h, _ in after_decision if h)
    again = sum(1 for _, a in after_decision if a)
    assert hid > 0 and again < len(after_decision) // 10, (hid, again, len(after_decision))


def _backlog(extra: list | None = None, held: int = 8, created: dict[str, str] | None = None) -> ClusterState:
    """One 8-GPU node where queue a's running job holds ``held`` GPUs; queue a waits with three
    1-GPU jobs alike (``created``: a podgroup's creation time, by job name)."""
    objects = [
        queue("a").weight(1).build(),
        queue("b").weight(1).build(),
        node("n1", cpu="64", memory="512Gi", gpu=8, pods=110),
        podgroup("run").queue("a").min_member(1).phase("Running").build(),
        pod("run-0").requests(gpu=held).group("run").on("n1").build(),
    ]
    for name in ("w1", "w2", "w3"):
        group = podgroup(name).queue("a").min_member(1).phase("Inqueue").manifest()
        if created and name in created:
            group["metadata"]["creationTimestamp"] = created[name]
        objects += [PodGroup.model_validate(group), pod(f"{name}-0").requests(gpu=1).group(name).build()]
    return ClusterState.from_objects(objects + (extra or []))


def test_jobs_alike_but_their_names_are_hidden_behind_the_first():
    ssn = open_session(_backlog(), load_config(default_config_text()))
    found = lookalikes.hide(ssn)
    assert found is not None
    assert found.first_of == {"default/w2": "default/w1", "default/w3": "default/w1"}
    assert "default/w1" in ssn.jobs and "default/w2" not in ssn.jobs and "default/run" in ssn.jobs
    assert list(found.every) == ["default/run", "default/w1", "default/w2", "default/w3"]


@pytest.mark.parametrize("held", [8, 6, 4])
def test_a_cycle_with_lookalikes_hidden_decides_as_one_looking_at_every_job(held):
    """Room for none, two or all three of the waiting jobs: each job placed shows the next one
    of its kind to allocate (``show_next``), and every job alike is placed as the long way
    places it, without running the cycle again."""
    conf = load_config(default_config_text())
    short = run_cycle(_backlog(held=held), conf, lookalikes=True)
    long = run_cycle(_backlog(held=held), conf, lookalikes=False)
    assert not short.lookalikes_ran_again and short.lookalikes_hidden == max(2 - (8 - held), 0)
    assert [(d.type, d.task, d.node) for d in short.decisions] == [(d.type, d.task, d.node) for d in long.decisions]
    assert len(long.of_type("bind")) == min(8 - held, 3)
    assert {uid: (o.phase, o.reason, repr(o.conditions)) for uid, o in short.jobs.items()} == {uid: (o.phase, o.reason, repr(o.conditions)) for uid, o in long.jobs.items()}
    # the queues' totals, summed over the jobs the actions saw when some were hidden (they hold nothing)
    assert {name: list(res.dims()) for name, res in short.queue_allocated.items()} == {name: list(res.dims()) for name, res in long.queue_allocated.items()}
    assert any(not res.is_empty() for res in short.queue_allocated.values())  # the running job's GPUs


def _same_results(short, long) -> None:
    assert [(d.type, d.task, d.node) for d in short.decisions] == [(d.type, d.task, d.node) for d in long.decisions]
    assert {uid: (o.phase, o.reason, repr(o.conditions)) for uid, o in short.jobs.items()} == {uid: (o.phase, o.reason, repr(o.conditions)) for uid, o in long.jobs.items()}
    assert short.changed == long.changed
    assert {name: list(res.dims()) for name, res in short.queue_allocated.items()} == {name: list(res.dims()) for name, res in long.queue_allocated.items()}


def test_a_cycle_that_places_a_first_job_keeps_the_rest_hidden_when_its_queue_then_refuses_them():
    """One GPU free: the first job is placed and its queue is then at its share. Its next
    look-alike is shown to allocate, which refuses it, and the last one stays hidden behind it:
    the cycle does not run again, and decides and explains as the long way."""
    conf = load_config(default_config_text())
    short = run_cycle(_backlog(held=7), conf, lookalikes=True)
    long = run_cycle(_backlog(held=7), conf, lookalikes=False)
    assert [d.task for d in short.of_type("bind")] == ["default/w1-0"]
    assert not short.lookalikes_ran_again and short.lookalikes_hidden == 1
    _same_results(short, long)
    assert short.session.lookalikes is None  # let go with the actions: a saved replay pickles its last result
    assert short.jobs["default/w3"].reason["kind"] == "deserved"


def test_the_first_of_a_kind_is_the_one_created_first_whatever_its_name():
    """w3 was created first, so the long way places it, not w1. The session's jobs come by
    creation time too (``ClusterState.job_keys``): w3 is the first of its kind there, the others
    hidden behind it, and the cycle places it without running again."""
    conf = load_config(default_config_text())
    created = {"w1": "2026-01-01T00:00:02Z", "w2": "2026-01-01T00:00:03Z", "w3": "2026-01-01T00:00:01Z"}
    short = run_cycle(_backlog(held=7, created=created), conf, lookalikes=True)
    long = run_cycle(_backlog(held=7, created=created), conf, lookalikes=False)
    assert [d.task for d in long.of_type("bind")] == ["default/w3-0"]
    assert not short.lookalikes_ran_again and short.lookalikes_hidden == 1
    _same_results(short, long)


def test_the_lookalike_shown_after_a_placement_is_the_earliest_of_those_left():
    """Two GPUs free; w3 was created before w2: the long way places w1, then w3. So does the
    cycle with w2 and w3 hidden, showing w3 once w1 is placed, without running again."""
    conf = load_config(default_config_text())
    created = {"w1": "2026-01-01T00:00:00Z", "w2": "2026-01-01T00:00:02Z", "w3": "2026-01-01T00:00:01Z"}
    short = run_cycle(_backlog(held=6, created=created), conf, lookalikes=True)
    long = run_cycle(_backlog(held=6, created=created), conf, lookalikes=False)
    assert [d.task for d in long.of_type("bind")] == ["default/w1-0", "default/w3-0"]
    assert not short.lookalikes_ran_again
    _same_results(short, long)


def test_a_job_of_another_kind_created_between_lookalikes_keeps_them_hidden():
    """Another job of queue a (x, created before w1 but after w3): the long way gives the free
    GPU to w3, the first of its kind in the session too, and the cycle does not run again."""
    conf = load_config(default_config_text())
    created = {"w1": "2026-01-01T00:00:02Z", "w2": "2026-01-01T00:00:03Z", "w3": "2026-01-01T00:00:00Z"}
    other = podgroup("x").queue("a").min_member(1).phase("Inqueue").manifest()
    other["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    extra = [PodGroup.model_validate(other), pod("x-0").requests(gpu=1, cpu=1).group("x").build()]
    short = run_cycle(_backlog(extra, held=7, created=created), conf, lookalikes=True)
    long = run_cycle(_backlog(extra, held=7, created=created), conf, lookalikes=False)
    assert [d.task for d in long.of_type("bind")] == ["default/w3-0"]
    assert not short.lookalikes_ran_again and short.lookalikes_hidden == 1
    _same_results(short, long)


def test_a_lookalike_shown_on_the_way_is_a_job_of_every_plugin():
    """drf keeps its own map of the session's jobs from when the plugins opened: a look-alike
    set aside before then and shown by ``show_next`` is in it (an allocation to count, 0 held)."""
    conf = load_config(default_config_text())
    state = _backlog(held=7)
    run_cycle(state, conf, lookalikes=True)  # describes w2 and w3 (w1, placed there, is taken afresh)
    ssn = cycle._new_session(state, conf, 0.0, "cycle-1", True)
    grouped = lookalikes.group(ssn)
    assert grouped is not None and grouped.first_of == {"default/w3": "default/w2"}
    cycle._open_plugins(ssn)
    ssn.lookalikes = lookalikes.hide(ssn, grouped)
    drf = ssn.plugins["drf"]
    assert drf._allocated("default/w3") is None  # not a job of drf's
    placed = ssn.jobs["default/w2"]
    for task in placed.tasks.values():  # as if w2 was placed: a is at its share
        ssn.queue_attrs["a"].allocated.add(task.resreq)
    ssn.plugins["proportion"]._answers.clear()
    shown = lookalikes.show_next(ssn, placed)
    assert shown is not None and shown.uid == "default/w3" and not ssn.hidden_inexact
    assert "default/w3" in ssn.jobs and shown.hidden_behind == "" and ssn.lookalikes.revealed == ["default/w3"]
    held = drf._allocated("default/w3")
    assert held is not None and held.is_empty()


def _too_big(gpus: int = 6, tasks: int = 1, small: str | None = None, d_holds: bool = False, small_created: str = "2026-01-01T00:00:00Z") -> ClusterState:
    """Queue c may take 8 GPUs but no node has ``gpus`` free (two nodes of 4): three look-alike
    jobs of ``tasks`` tasks each are tried on the nodes and refused there. ``small``: also a
    1-GPU job of queue c or d that fits, created first (``small_created``). ``d_holds``: queue d holds a
    GPU, so its share is above c's (c's turns come first, as long as c has jobs)."""
    objects = [queue("c").weight(1).build(), queue("d").weight(1).build(), node("m1", cpu="64", memory="512Gi", gpu=4, pods=110), node("m2", cpu="64", memory="512Gi", gpu=4, pods=110)]
    if d_holds:
        objects += [podgroup("held").queue("d").min_member(1).phase("Running").build(), pod("held-0").requests(gpu=1).group("held").on("m1").build()]
    for n, name in enumerate(("big1", "big2", "big3")):
        group = podgroup(name).queue("c").min_member(tasks).phase("Inqueue").manifest()
        group["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:0{n + 1}Z"
        objects.append(PodGroup.model_validate(group))
        objects += [pod(f"{name}-{k}").requests(gpu=gpus).group(name).build() for k in range(tasks)]
    if small is not None:
        group = podgroup("small").queue(small).min_member(1).phase("Inqueue").manifest()
        group["metadata"]["creationTimestamp"] = small_created
        objects += [PodGroup.model_validate(group), pod("small-0").requests(gpu=1).group("small").build()]
    return ClusterState.from_objects(objects)


def test_a_kind_whose_first_job_met_the_nodes_stays_hidden_in_a_cycle_that_decides_nothing():
    """Nothing is decided, so each look-alike would meet the nodes as its first job did: the
    same fit errors, the same reason but for the job, and gang's condition naming its own task.
    The cycle does not run again, the first time (kinds found after the plugins open) nor the
    next (kinds known before)."""
    conf = load_config(default_config_text())
    state = _too_big()
    long = run_cycle(state, conf, lookalikes=False)
    for _ in range(2):
        short = run_cycle(state, conf, lookalikes=True)
        assert not short.lookalikes_ran_again and short.lookalikes_hidden == 2
        _same_results(short, long)
    assert {o.reason["kind"] for o in long.jobs.values()} == {"no-node-fits"}
    assert "Origin reason is big3-0: 0/2 nodes are unavailable" in short.jobs["default/big3"].conditions[0]["message"]


@pytest.mark.parametrize(
    "small, created, d_holds, again",
    [
        # small is placed first; big1 then meets the nodes as small left them and nothing follows
        ("c", "2026-01-01T00:00:00Z", False, False),
        # small, created after big1 but before big2 and big3, is placed at queue c's turn after big1
        # was refused: in the long way big2 and big3 come up after it, on other nodes
        ("c", "2026-01-01T00:00:01.5Z", False, True),
        # queue d holds a GPU, so c's turns come first until c has no job left: big1, big2 and
        # big3 are all refused before d's small job is placed, on the same nodes
        ("d", "2026-01-01T00:00:00Z", True, False),
    ],
)
def test_a_first_job_refused_by_the_nodes_in_a_cycle_that_places_another(small, created, d_holds, again):
    """The look-alikes stay hidden when nothing was decided between their first job's try and
    its queue running out of jobs; else the cycle runs again. Either way it decides as the long way."""
    conf = load_config(default_config_text())
    state = _too_big(small=small, d_holds=d_holds, small_created=created)
    short = run_cycle(state, conf, lookalikes=True)
    long = run_cycle(state, conf, lookalikes=False)
    assert [d.task for d in long.of_type("bind")] == ["default/small-0"]
    assert short.lookalikes_ran_again == again and short.lookalikes_hidden == (0 if again else 2)
    _same_results(short, long)


def test_a_kind_whose_first_job_was_refused_before_a_placement_is_hidden_in_the_next_quiet_cycle():
    """The cycle that ran again does not show the kind for good (as one whose errors cannot be
    told per look-alike is): the next cycle that decides nothing hides it."""
    conf = load_config(default_config_text())
    assert run_cycle(_too_big(small="c", small_created="2026-01-01T00:00:01.5Z"), conf, lookalikes=True).lookalikes_ran_again
    quiet = run_cycle(_too_big(), conf, lookalikes=True)
    assert not quiet.lookalikes_ran_again and quiet.lookalikes_hidden == 2


def test_a_kind_whose_fit_errors_cannot_be_told_for_each_lookalike_is_shown_from_then_on():
    """Gangs of two tasks: which task gang's message names is not told from the first job's.
    That cycle runs again in full; the next ones show the kind's jobs (each is tried, as in the
    long way) and hide the others."""
    conf = load_config(default_config_text())
    state = _too_big(gpus=6, tasks=2)
    first = run_cycle(state, conf, lookalikes=True)
    assert first.lookalikes_ran_again
    again = run_cycle(state, conf, lookalikes=True)
    assert not again.lookalikes_ran_again and again.lookalikes_hidden == 0
    long = run_cycle(state, conf, lookalikes=False)
    _same_results(first, long)
    _same_results(again, long)
    assert {o.reason["kind"] for o in long.jobs.values()} == {"no-node-fits"}


def test_a_job_that_differs_in_its_pod_spec_is_not_hidden():
    odd = pod("w4-0").requests(gpu=1).group("w4").manifest()
    odd["spec"]["nodeSelector"] = {"zone": "x"}
    extra = [podgroup("w4").queue("a").min_member(1).phase("Inqueue").build(), Pod.model_validate(odd)]
    ssn = open_session(_backlog(extra), load_config(default_config_text()))
    found = lookalikes.hide(ssn)
    assert found is not None and "default/w4" not in found.first_of and "default/w4" in ssn.jobs


def test_nothing_is_hidden_under_a_plugin_that_may_read_more_than_the_specs():
    conf = load_config(default_config_text().replace("  - name: nodeorder", "  - name: nodeorder\n  - name: sla"))
    ssn = open_session(_backlog(), conf)
    assert lookalikes.hide(ssn) is None


def test_a_hidden_job_gets_its_first_jobs_reason_only_when_it_names_no_job_or_task():
    deserved = {"queue": "a", "job": "default/w1", "kind": "deserved", "message": "queue a has used its deserved share"}
    assert lookalikes.reason_for("default/w2", deserved) == {**deserved, "job": "default/w2"}
    fits = {"queue": "a", "job": "default/w1", "kind": "no-node-fits", "message": "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.", "nodes": {}}
    assert lookalikes.reason_for("default/w2", fits) == {**fits, "job": "default/w2"}  # given by node errors alone (``settled``)
    assert lookalikes.reason_for("default/w2", {"queue": "a", "job": "default/w1", "kind": "gang-unsatisfied", "message": "w1-0: ..."}) is None
    assert lookalikes.reason_for("default/w2", None) is None


def _statuses(result) -> dict:
    return {uid: (o.phase, o.reason, repr(o.conditions)) for uid, o in result.jobs.items()}


def test_a_hidden_job_keeps_its_last_reason_while_its_first_jobs_reads_the_same():
    """A hidden job whose last reason was made from a first job's reading as this cycle's (but
    for the job) keeps that very reason object: nothing copied, compared at once; the outcomes
    are those of a cycle that looks at every job."""
    conf = load_config(default_config_text())
    state = _backlog()
    first = run_cycle(state, conf, 0.0, uid="cycle-1", lookalikes=True)
    second = run_cycle(state, conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=True)
    full = run_cycle(state, conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=False)
    assert second.lookalikes_hidden == 2 and first.jobs["default/w2"].reason["kind"] == "deserved"
    for uid in ("default/w2", "default/w3"):
        assert second.jobs[uid].reason is first.jobs[uid].reason
        assert second.jobs[uid].reason["job"] == uid
    assert _statuses(second) == _statuses(full) and second.changed == full.changed == []


def test_a_job_set_aside_last_cycle_is_its_kinds_first_once_the_first_is_gone():
    """A session copy set aside behind a first job (``JobInfo.hidden_behind``) is handed on by
    the next snapshot as not set aside: with the first job gone, the next look-alike is its
    kind's first, looked at by the actions, and the outcomes are those of the long way."""
    conf = load_config(default_config_text())
    state = _backlog()
    first = run_cycle(state, conf, 0.0, uid="cycle-1", lookalikes=True)
    assert first.lookalikes_hidden == 2
    assert state.jobs["default/w2"].twin is not None and state.jobs["default/w2"].twin.hidden_behind == "default/w1"
    state.forget_job("default/w1")
    second = run_cycle(state, conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=True)
    copies = second.session.jobs  # the same copies the next snapshot takes back
    assert copies["default/w2"].hidden_behind == "" and copies["default/w3"].hidden_behind == "default/w2"
    full = run_cycle(state, conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=False)
    assert second.lookalikes_hidden == 1 and not second.lookalikes_ran_again
    assert all(not copy.hidden_behind for copy in full.session.jobs.values())
    assert _statuses(second) == _statuses(full) and second.changed == full.changed


def test_a_hidden_job_whose_last_reason_read_otherwise_gets_a_new_one():
    conf = load_config(default_config_text())
    state = _backlog()
    first = run_cycle(state, conf, 0.0, uid="cycle-1", lookalikes=True)
    stale = dict(first.jobs)
    old = stale["default/w2"]
    template = {**old.reason, "job": "default/w1", "message": "an older message"}
    stale["default/w2"] = JobOutcome(old.phase, old.queue, old.conditions, {**template, "job": "default/w2"}, shared_reason=template)
    second = run_cycle(state, conf, 1.0, uid="cycle-2", previous=stale, lookalikes=True)
    full = run_cycle(state, conf, 1.0, uid="cycle-2", previous=stale, lookalikes=False)
    assert second.lookalikes_hidden == 2
    assert second.jobs["default/w2"].reason is not stale["default/w2"].reason
    assert second.jobs["default/w3"].reason is first.jobs["default/w3"].reason
    assert _statuses(second) == _statuses(full) and second.changed == full.changed == ["default/w2"]


def test_kinds_taken_in_before_the_table_was_emptied_are_looked_up_again(monkeypatch):
    """The table of kinds is emptied when full: a job described before keeps its old kind
    object, and it is looked up again, so it is still grouped with a look-alike described after."""
    conf = load_config(default_config_text())
    state = _backlog()
    ssn = open_session(state, conf)
    assert lookalikes.hide(ssn) is not None  # w1, w2, w3 described, their kind kept with their facts
    ssn.release()
    monkeypatch.setattr(lookalikes, "KINDS_KEPT", 0)  # the next new kind empties the table
    later = [podgroup("w4").queue("a").min_member(1).phase("Inqueue").build(), pod("w4-0").requests(gpu=1).group("w4").build()]
    for obj in later:
        state.upsert(obj)
    ssn = open_session(state, conf)
    found = lookalikes.hide(ssn)
    assert found is not None
    assert found.first_of == {"default/w2": "default/w1", "default/w3": "default/w1", "default/w4": "default/w1"}


def test_jobs_of_a_queue_that_is_not_open_are_not_hidden():
    conf = load_config(default_config_text())
    closing = queue("a").weight(1).status("Closing").build()
    state = _backlog()
    state.upsert(closing)
    assert lookalikes.hide(open_session(state, conf)) is None


def test_jobs_of_a_queue_that_closed_since_their_kind_was_described_are_not_set_aside():
    """``group`` asks the queue's state once per kind (of its first job): a kind whose queue is
    no longer Open keeps every one of its jobs in the session."""
    conf = load_config(default_config_text())
    state = _backlog()
    run_cycle(state, conf, lookalikes=True)  # describes each waiting job's kind, kept with its facts
    grouped = lookalikes.group(open_session(state, conf))
    assert grouped is not None and set(grouped.first_of) == {"default/w2", "default/w3"}
    state.upsert(queue("a").weight(1).status("Closing").build())
    assert lookalikes.group(open_session(state, conf)) is None


def test_vcjobs_alike_but_their_names_are_hidden_behind_the_first():
    """A vcjob's podgroup and pods carry its name in a label and an annotation: not a difference."""
    extra = []
    for name in ("v1", "v2"):
        group = podgroup(name).queue("a").min_member(1).phase("Inqueue").manifest()
        group["metadata"]["labels"] = {"volcano.sh/job-name": name}
        member = pod(f"{name}-0").requests(gpu=2).group(name).manifest()
        member["metadata"]["labels"] = {"volcano.sh/job-name": name}
        member["metadata"]["annotations"]["scheduling.volcano.sh/group-name"] = name
        extra += [PodGroup.model_validate(group), Pod.model_validate(member)]
    found = lookalikes.hide(open_session(_backlog(extra), load_config(default_config_text())))
    assert found is not None and found.first_of.get("default/v2") == "default/v1"


def _grouped_session(state: ClusterState, conf) -> tuple:
    """A session whose look-alikes ``group`` set aside before the plugins opened (an earlier
    cycle described them), and the hidden jobs."""
    run_cycle(state, conf, lookalikes=True)  # describes each waiting job's kind, kept with its facts
    ssn = cycle._new_session(state, conf, 0.0, "cycle-1", True)
    grouped = lookalikes.group(ssn)
    cycle._open_plugins(ssn)
    return ssn, grouped


def _accounts(ssn) -> dict:
    return {
        name: [(field, list(getattr(attr, field).dims())) for field in ("allocated", "request", "inqueue", "elastic", "deserved")]
        for name, attr in ssn.queue_attrs.items()
    }


def test_lookalikes_set_aside_before_the_plugins_open_are_counted_once_as_job_by_job():
    """Proportion adds a kind's look-alikes as one (count x request): every queue's accounting
    has the same values, scalar names in the same order, as a session that adds them one by one."""
    conf = load_config(default_config_text())
    extra = [podgroup("m").queue("a").min_member(1).min_resources(cpu="2", gpu=1).phase("Inqueue").build(), pod("m-0").requests(cpu="2", gpu=1).group("m").build()]
    extra += [podgroup("m2").queue("a").min_member(1).min_resources(cpu="2", gpu=1).phase("Inqueue").build(), pod("m2-0").requests(cpu="2", gpu=1).group("m2").build()]
    state = _backlog(extra)
    ssn, grouped = _grouped_session(state, conf)
    assert grouped is not None and grouped.first_of == {"default/w2": "default/w1", "default/w3": "default/w1", "default/m2": "default/m"}
    assert ssn.hidden_counts == {"default/w1": 2, "default/m": 1} and "default/w2" not in ssn.jobs
    assert _accounts(ssn) == _accounts(open_session(state, conf))
    assert not ssn.hidden_inexact


@pytest.mark.python_source
def test_totals_where_sums_are_no_longer_exact_run_the_cycle_again(monkeypatch):
    """Counting look-alikes at once is exact while totals stay below 2**53; past that limit
    (made small here) the cycle runs again in full, with the same result."""
    conf = load_config(default_config_text())
    state = _backlog()
    run_cycle(state, conf, lookalikes=True)
    monkeypatch.setattr(queueattr, "EXACT_SUMS_BELOW", 10_000.0)  # queue a asks for 11 GPUs: 11,000 milli
    short = run_cycle(state, conf, lookalikes=True)
    assert short.lookalikes_ran_again
    long = run_cycle(_backlog(), conf, lookalikes=False)
    assert {uid: (o.phase, o.reason) for uid, o in short.jobs.items()} == {uid: (o.phase, o.reason) for uid, o in long.jobs.items()}


def test_a_job_asking_for_a_part_of_a_unit_is_not_counted_at_once():
    state = _backlog()
    job = state.snapshot()[0]["default/w1"]
    assert queueattr.lookalikes_room(job) == 2**52 // 1000  # one GPU: 1,000 milli
    for task in job.tasks.values():
        task.resreq = task.resreq.clone()
        task.resreq.memory = 0.5
    assert queueattr.lookalikes_room(job) == 0


def test_a_lookalikes_conditions_name_its_own_task_where_the_first_jobs_named_its():
    """The name is replaced where gang wrote it, even when it also reads elsewhere in the message;
    a condition that does not name the task is shared as it is."""
    objects = [queue("c").weight(1).build()]
    for group, task in (("x", "is"), ("y", "big2-0")):
        objects += [podgroup(group).queue("c").min_member(1).phase("Inqueue").build(), pod(task).requests(gpu=1).group(group).build()]
    jobs = ClusterState.from_objects(objects).jobs
    first, lookalike = jobs["default/x"], jobs["default/y"]
    assert [t.name for t in first.tasks.values()] == ["is"]
    message = "1/1 tasks in gang unschedulable: is. Origin reason is is: 0/2 nodes are unavailable: 2 Insufficient is."
    named = {"type": "Unschedulable", "transitionID": "cycle-1", "message": message}
    other = {"type": "Scheduled", "message": "tasks in gang are ready to be scheduled"}
    made = lookalikes.NamedConditions(first, [other, named]).of(lookalike)
    assert made[0] is other
    assert made[1] == {**named, "message": message.replace("reason is is:", "reason is big2-0:")}
    assert named["message"] == message  # the first job's own is left as it was


def _pipelining(lookalike_gpus: int = 1) -> ClusterState:
    """``_backlog`` (queue a at its share: w1 to w3 refused) and a node n2 with 2 GPUs still held
    by a task that is ending: queue p's job pipe1 asks for them and is reserved there
    (pipelined). ``lookalike_gpus``: what pipe2 asks for (2: it looks like pipe1)."""
    gone = pod("gone-0").requests(gpu=2).group("gone").on("n2").manifest()
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    extra = [
        node("n2", cpu="64", memory="512Gi", gpu=4, pods=110),
        podgroup("busy").queue("p").min_member(1).phase("Running").build(),
        pod("busy-0").requests(gpu=2).group("busy").on("n2").build(),
        podgroup("gone").queue("p").min_member(1).phase("Running").build(),
        Pod.model_validate(gone),
    ]
    for name in ("pipe1", "pipe2"):
        group = podgroup(name).queue("p").min_member(1).phase("Inqueue").manifest()
        group["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:0{name[-1]}Z"
        extra += [PodGroup.model_validate(group), pod(f"{name}-0").requests(gpu=lookalike_gpus if name == "pipe2" else 2).group(name).build()]
    return _backlog(extra + [queue("p").weight(1).build()])


def test_a_first_job_reserved_on_a_node_runs_the_cycle_again():
    """pipe1 and pipe2 look alike: pipe1 is reserved (pipelined where a task is ending), and the
    long way then tries pipe2 on the nodes as that left them: the cycle runs again."""
    conf = load_config(default_config_text())
    short = run_cycle(_pipelining(lookalike_gpus=2), conf, lookalikes=True)
    long = run_cycle(_pipelining(lookalike_gpus=2), conf, lookalikes=False)
    assert short.lookalikes_ran_again
    _same_results(short, long)


def _reserving(gang_queue: str = "g") -> ClusterState:
    """``_backlog`` (queue a at its share: w1 to w3 refused) and an idle 8-GPU node n3, where a
    gang of two 8-GPU tasks (queue ``gang_queue``, which deserves 8 GPUs) fits one task only:
    allocate tries it and puts it back, and preempt then reserves that one task there (phase B
    pipelines a task where it fits as it is), as in every cycle while a node stays idle."""
    extra = [
        queue("g").weight(1).build(),
        node("n3", cpu="64", memory="512Gi", gpu=8, pods=110),
        podgroup("gang").queue(gang_queue).min_member(2).phase("Inqueue").build(),
        pod("gang-0").requests(gpu=8).group("gang").build(),
        pod("gang-1").requests(gpu=8).group("gang").build(),
    ]
    return _backlog(extra)


def test_a_reservation_by_preempt_in_a_queue_that_hides_nothing_keeps_the_lookalikes_hidden():
    """Preempt reserves a task of the gang in queue g, evicting nothing; queue a's look-alikes
    (refused by their queue) meet the same session in their own queue's turns, before or after
    g's. The cycle does not run again, and decides and explains as the long way."""
    conf = load_config(default_config_text())
    long = run_cycle(_reserving(), conf, lookalikes=False)
    assert [(d.type, d.task, d.node) for d in long.decisions] == [("pipeline", "default/gang-0", "n3")]
    for _ in range(2):  # kinds found after the plugins open, then known before
        short = run_cycle(_reserving(), conf, lookalikes=True)
        assert not short.lookalikes_ran_again and short.lookalikes_hidden == 2
        _same_results(short, long)
    assert short.jobs["default/w3"].reason["kind"] == "deserved"


def _gang_beside_big() -> ClusterState:
    """``_too_big`` (big1 to big3 refused by the nodes) with a gang of two 4-GPU tasks in queue
    c: preempt reserves one of its tasks where 4 GPUs are free."""
    found = _too_big(d_holds=True)
    for obj in (podgroup("gang").queue("c").min_member(2).phase("Inqueue").build(), pod("gang-0").requests(gpu=4).group("gang").build(), pod("gang-1").requests(gpu=4).group("gang").build()):
        found.upsert(obj)
    return found


@pytest.mark.parametrize(
    "state, reserved",
    [
        # preempt's, in queue c beside the look-alikes hidden there: it takes a queue's jobs in
        # its own order, so a look-alike could come up after the reservation where its first
        # job came up before it
        (_gang_beside_big, ("default/gang-0", "m2")),
        # allocate keeps pipe1's (queue p) where a task is ending, and reports it only at the
        # close, not as a decision: it may come between a first job's try and its look-alikes'
        # turns in the long way (queue a's look-alikes were hidden)
        (_pipelining, ("default/pipe1-0", "n2")),
    ],
)
def test_a_reservation_that_is_not_told_runs_the_cycle_again(state, reserved):
    """The cycle runs again, with the long way's result."""
    conf = load_config(default_config_text())
    short = run_cycle(state(), conf, lookalikes=True)
    long = run_cycle(state(), conf, lookalikes=False)
    assert [(d.type, d.task, d.node) for d in long.decisions] == [("pipeline", *reserved)]
    assert short.lookalikes_ran_again
    _same_results(short, long)


def _one_slot_for_gangs() -> ClusterState:
    """``_too_big`` with gangs of two 4-GPU tasks (big1 to big3): one node has 4 GPUs free, and a
    third node m3 2, so that queue c deserves 9. Allocate places one task of a gang and finds no
    node for the other (fit errors not told per look-alike); preempt reserves that one task."""
    found = _too_big(gpus=4, tasks=2, d_holds=True)
    found.upsert(node("m3", cpu="64", memory="512Gi", gpu=2, pods=110))
    return found


def test_a_kind_refused_by_the_nodes_and_reserved_by_preempt_is_shown_from_then_on():
    """Gangs of two 4-GPU tasks where one node has 4 GPUs free (and m3 2, so that queue c
    deserves 9): allocate tries big1, puts it back with fit errors not told for each look-alike
    (its second task fits no node), then preempt reserves its first task, a decision about a
    first job that ends the try. The kind is still shown from then on, so the next cycle runs
    once: nothing hidden, the reservation in a queue that hides nothing."""
    conf = load_config(default_config_text())
    state = _one_slot_for_gangs()
    first = run_cycle(state, conf, lookalikes=True)
    assert first.lookalikes_ran_again
    again = run_cycle(state, conf, lookalikes=True)
    assert not again.lookalikes_ran_again and again.lookalikes_hidden == 0
    long = run_cycle(state, conf, lookalikes=False)
    assert [(d.type, d.task, d.node) for d in long.decisions] == [("pipeline", "default/big1-0", "m2")]
    assert long.jobs["default/big2"].reason["kind"] == "no-node-fits"
    _same_results(first, long)
    _same_results(again, long)


@pytest.mark.python_source
def test_a_job_tried_and_put_back_is_not_described_again(monkeypatch):
    """The gang is tried and put back in every cycle (``_reserving``): its session copy moved, so
    the next snapshot clones it afresh, but the job stands and so does its description
    (``JobInfo.described``): the next cycle describes no job, and still decides as the long way."""
    conf = load_config(default_config_text())
    state = _reserving()
    described: list[str] = []
    original = lookalikes._described

    def counted(job):
        described.append(job.uid)
        return original(job)

    monkeypatch.setattr(lookalikes, "_described", counted)
    first = run_cycle(state, conf, 0.0, uid="cycle-1", lookalikes=True)
    assert "default/gang" in described and not first.lookalikes_ran_again
    described.clear()
    second = run_cycle(state, conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=True)
    assert described == [] and not second.lookalikes_ran_again and second.lookalikes_hidden == 2
    assert state.jobs["default/gang"].twin.described is not None
    _same_results(second, run_cycle(_reserving(), conf, 1.0, uid="cycle-2", previous=first.jobs, lookalikes=False))


@pytest.mark.python_source
def test_preempt_tries_one_job_of_a_kind_until_something_is_committed(monkeypatch):
    """big1 to big3 look alike and are shown (``_too_big`` with 4-GPU gangs: their fit errors
    are not told per look-alike). Preempt's phase A tries big1, reserves one task, cannot place
    the other and puts it back: big2 and big3 would meet the very same session, so they are not
    tried. The cycle decides and explains as the one that tries each."""
    from lahar.scheduler.actions import preempt

    conf = load_config(default_config_text())
    state = _one_slot_for_gangs()
    run_cycle(state, conf, lookalikes=True)  # describes the kind, shown from now on (if not shown yet)
    tried: list[str] = []
    original = preempt.preempt

    def counted(ssn, stmt, preemptor, keep, phase="A"):
        tried.append(f"{phase} {preemptor.name}")
        return original(ssn, stmt, preemptor, keep, phase)

    monkeypatch.setattr(preempt, "preempt", counted)
    once = run_cycle(state, conf, lookalikes=True)
    assert [t for t in tried if t.startswith("A")] == ["A big1-0", "A big1-1"]
    tried.clear()
    monkeypatch.setattr(preempt, "plugins_known", lambda ssn: False)
    each = run_cycle(state, conf, lookalikes=True)
    assert [t for t in tried if t.startswith("A")] == ["A big1-0", "A big1-1", "A big2-0", "A big2-1", "A big3-0", "A big3-1"]
    assert [(d.type, d.task, d.node) for d in once.decisions] == [("pipeline", "default/big1-0", "m2")]
    _same_results(once, each)


def test_a_job_holding_a_reserved_task_is_no_lookalike_until_it_is_put_back():
    """A job's kind outlives the facts its tasks' moves made stale (``JobInfo.described``), but
    only while every task waits: with a task reserved it is not of its look-alikes' kind (the
    actions' answers kept per kind would be read for it), and put back it is again."""
    from lahar.scheduler.framework.statement import Statement

    conf = load_config(default_config_text())
    ssn = open_session(_too_big(), conf)
    assert lookalikes.hide(ssn) is not None  # describes big1 to big3
    big1 = ssn.jobs["default/big1"]
    kind = ssn.job_facts(big1).described_kind()
    assert kind is not None
    stmt = Statement(ssn)
    stmt.pipeline(next(iter(big1.tasks.values())), "m1")
    assert ssn.job_facts(big1).described_kind() is None
    stmt.discard()
    assert ssn.job_facts(big1).described_kind() is kind


@pytest.mark.python_source
def test_allocate_tries_one_job_of_a_kind_until_something_is_placed(monkeypatch):
    """big1 to big3 look alike and are shown (4-GPU gangs: their fit errors are not told per
    look-alike). Allocate tries big1, places one task, finds no node for the other and puts it
    back: big2 and big3 would meet the very same session, so they are not tried, each given the
    fit errors big1 met at the same place in task order. The cycle decides, explains and
    conditions every job (gang's message naming each one's own task) as the one that tries each."""
    from lahar.scheduler.actions import allocate

    conf = load_config(default_config_text())
    state = _one_slot_for_gangs()
    run_cycle(state, conf, lookalikes=True)  # describes the kind, shown from now on (if not shown yet)
    tried: list[str] = []
    original = allocate._choose_node

    def counted(ssn, task, role_cache):
        if ssn.uid == "counted":
            tried.append(task.name)
        return original(ssn, task, role_cache)

    monkeypatch.setattr(allocate, "_choose_node", counted)
    once = run_cycle(state, conf, uid="counted", lookalikes=True)
    assert tried == ["big1-0", "big1-1"]
    tried.clear()
    monkeypatch.setattr(allocate, "plugins_known", lambda ssn: False)
    each = run_cycle(state, conf, uid="counted", lookalikes=True)
    assert tried == ["big1-0", "big1-1", "big2-0", "big2-1", "big3-0", "big3-1"]
    _same_results(once, each)
    assert "big3-1" in repr(once.jobs["default/big3"].conditions) and "big1-1" not in repr(once.jobs["default/big3"].conditions)


def test_a_kind_pickled_with_a_job_loads_as_the_kind_of_its_description():
    """A saved replay pickles each job's description (``JobInfo.described``): a kind loads as the
    loading process's kind of the same description, so jobs alike stay alike (one object)."""
    import pickle

    conf = load_config(default_config_text())
    ssn = open_session(_backlog(), conf)
    hidden = lookalikes.hide(ssn)  # describes w1 to w3
    assert hidden is not None
    jobs = [hidden.every[uid] for uid in ("default/w1", "default/w2", "default/w3")]
    kind = jobs[0].described[0]
    assert kind is not None and all(job.described[0] is kind for job in jobs)
    loaded = pickle.loads(pickle.dumps(jobs))
    assert {id(job.described[0]) for job in loaded} == {id(kind)}  # this process's kind of that description
    assert loaded[0].described[0].description == kind.description


def test_the_job_order_guards_catch_a_first_job_that_is_not_first_in_job_order():
    """The session's order is job order among look-alikes (creation, then key), so with the
    default plugins the guards never fail; they stay for a plugin that orders jobs otherwise.
    Here a first job is set behind a look-alike created before it: both guards say so."""
    created = {"w1": "2026-01-01T00:00:02Z", "w2": "2026-01-01T00:00:03Z", "w3": "2026-01-01T00:00:01Z"}
    ssn = open_session(_backlog(created=created), load_config(default_config_text()))
    every = dict(ssn.jobs)
    w1, w2, w3 = (every[f"default/w{i}"] for i in (1, 2, 3))
    w2.hidden_behind = "default/w1"
    assert lookalikes._firsts_come_first(lookalikes.Hidden(every, 1, {}))
    w3.hidden_behind = "default/w1"  # created before w1
    assert not lookalikes._firsts_come_first(lookalikes.Hidden(every, 2, {}))
    assert lookalikes._earlier(w3, w1) and not lookalikes._earlier(w1, w3)
