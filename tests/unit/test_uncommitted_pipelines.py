"""A reservation allocate leaves in place: a job whose task is pipelined (reserved where a task is
ending) but that is not ready is neither committed nor discarded (Volcano's allocate commits a
ready job, discards one that is not pipelined, and leaves the rest). The cycle reports each
such task once, as a ``pipeline`` decision at the close; a cycle that pipelined nothing reports
none."""

from __future__ import annotations

from builders import node, pod, podgroup, queue
from lahar.model.workload import Pod
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config

CONF = load_config(default_config_text())


def cluster(ending: bool, wanted_gpus: int = 2) -> ClusterState:
    """Node n2 (4 GPUs) runs ``busy`` (2 GPUs) and ``gone`` (2 GPUs, ending when ``ending``);
    ``pipe`` asks for ``wanted_gpus``."""
    gone = pod("gone-0").requests(gpu=2).group("gone").on("n2").manifest()
    if ending:
        gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return ClusterState.from_objects(
        [
            queue("p").weight(1).build(),
            node("n2", cpu="64", memory="512Gi", gpu=4, pods=110),
            podgroup("busy").queue("p").min_member(1).phase("Running").build(),
            pod("busy-0").requests(gpu=2).group("busy").on("n2").build(),
            podgroup("gone").queue("p").min_member(1).phase("Running").build(),
            Pod.model_validate(gone),
            podgroup("pipe").queue("p").min_member(1).phase("Inqueue").build(),
            pod("pipe-0").requests(gpu=wanted_gpus).group("pipe").build(),
        ]
    )


def decided(result) -> list[tuple[str, str, str | None]]:
    return [(d.type, d.task, d.node) for d in result.decisions]


def test_a_task_reserved_where_a_task_is_ending_is_reported_once():
    result = run_cycle(cluster(ending=True), CONF)
    assert decided(result) == [("pipeline", "default/pipe-0", "n2")]
    assert result.jobs["default/pipe"].phase == "Inqueue"


def test_a_cycle_that_reserves_nothing_reports_no_reservation():
    assert decided(run_cycle(cluster(ending=False), CONF)) == []
    too_big = run_cycle(cluster(ending=True, wanted_gpus=3), CONF)  # more than the ending task frees
    assert decided(too_big) == []
