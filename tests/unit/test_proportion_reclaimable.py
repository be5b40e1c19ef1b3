"""proportion's Reclaimable answer: from the candidates, in their order, the tasks of queues
above their deserved share, each queue giving up tasks only until it is back at its share."""

from __future__ import annotations

from builders import node, pod, podgroup, queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import open_session
from lahar.scheduler.framework.config import default_config_text, load_config


def _session():
    """One 12-cpu node. ``lender`` runs 8 one-cpu tasks, ``modest`` 2, ``claimer`` waits for 4:
    the shares come to lender 6, modest 2, claimer 4, so lender holds 2 above its share."""
    objects = [queue(name).weight(1).build() for name in ("lender", "modest", "claimer")]
    objects.append(node("n0", cpu="12", memory="64Gi", pods="110"))
    for name, count in (("lender", 8), ("modest", 2)):
        objects.append(podgroup(name).queue(name).min_member(1).phase("Running").build())
        objects += [pod(f"{name}-{i}").requests(cpu="1").group(name).on("n0").build() for i in range(count)]
    objects.append(podgroup("claimer").queue("claimer").min_member(4).phase("Inqueue").build())
    objects += [pod(f"claimer-{i}").requests(cpu="1").group("claimer").build() for i in range(4)]
    return open_session(ClusterState.from_objects(objects), load_config(default_config_text()))


def _names(tasks) -> list[str]:
    return [task.name for task in tasks]


def test_only_the_queue_above_its_share_gives_up_tasks_and_only_down_to_its_share():
    ssn = _session()
    reclaimable = ssn.fns["reclaimable"]["proportion"]
    claimer = next(t for j in ssn.jobs.values() if j.queue == "claimer" for t in j.tasks.values())
    running = {t.name: t for j in ssn.jobs.values() if j.queue != "claimer" for t in j.tasks.values()}
    order = ["modest-0", "lender-3", "modest-1", "lender-5", "lender-0", "lender-1"]
    victims, _ = reclaimable(claimer, [running[name] for name in order])
    assert _names(victims) == ["lender-3", "lender-5"]


def test_a_queue_at_its_share_gives_up_nothing():
    ssn = _session()
    reclaimable = ssn.fns["reclaimable"]["proportion"]
    claimer = next(t for j in ssn.jobs.values() if j.queue == "claimer" for t in j.tasks.values())
    modest = [t for j in ssn.jobs.values() if j.queue == "modest" for t in j.tasks.values()]
    victims, _ = reclaimable(claimer, modest)
    assert victims == []


def test_each_call_starts_from_the_queues_current_allocation():
    ssn = _session()
    reclaimable = ssn.fns["reclaimable"]["proportion"]
    claimer = next(t for j in ssn.jobs.values() if j.queue == "claimer" for t in j.tasks.values())
    lender = sorted((t for j in ssn.jobs.values() if j.queue == "lender" for t in j.tasks.values()), key=lambda t: t.name)
    first, _ = reclaimable(claimer, lender)
    again, _ = reclaimable(claimer, list(reversed(lender)))
    assert _names(first) == ["lender-0", "lender-1"]
    assert _names(again) == ["lender-7", "lender-6"]
