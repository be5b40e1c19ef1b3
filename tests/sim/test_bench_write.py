"""``bench/write.py`` times the status writes of the control loop three ways (as the loop makes
them, the store's part alone, the change made on the stored document), for podgroups and for
vcjobs: each way writes every object, and the loop's writes are made as the loop makes them,
at the version the world holds."""

from __future__ import annotations

import pytest

from bench_programs import bench_program


@pytest.mark.parametrize("kind,stored,phases", [("podgroup", "PodGroup", ("Inqueue", "Running")), ("vcjob", "Job", ("Pending", "Running"))])
def test_each_way_writes_every_object_and_the_world_stays_in_step(tmp_path, kind, stored, phases):
    bench = bench_program("write")
    loop = bench.bound_loop(tmp_path, 12)
    store, world = loop.service.store, loop.world
    table = world.podgroups if kind == "podgroup" else world.jobs

    def phase(key: str) -> tuple[str, str]:
        """(stored, the world's): a podgroup's phase, or a vcjob's ``state.phase``."""
        document, held = store.get(stored, key), table[key]
        if kind == "podgroup":
            return document["status"]["phase"], held.status.phase
        return document["status"]["state"]["phase"], held.status.state["phase"]

    keys = sorted(table)
    assert len(keys) == 12 and all(phase(k) == ("Running", "Running") for k in keys)
    before = store.current_version()
    bench.loop_writes(loop, keys, "Inqueue", kind)
    assert store.current_version() == before + 12  # one write each, none read back and written again
    assert all(phase(k) == (phases[0], phases[0]) for k in keys)
    assert all(table[k].metadata.resource_version == store.get(stored, k)["metadata"]["resourceVersion"] for k in keys)
    bench.store_writes(loop, [store.get(stored, k) for k in keys])
    bench.document_writes(loop, [store.get(stored, k) for k in keys], "Running", kind)
    assert store.current_version() == before + 36
    world.sync()
    assert all(phase(k) == ("Running", "Running") for k in keys)
    store.close()


def test_it_prints_the_three_ways_per_write_for_each_kind(tmp_path):
    line = bench_program("write").run(10, 2, tmp_path)
    assert line["bench"] == "write" and line["podgroups"] == 10 and line["rounds"] == 2
    for kind in ("podgroup", "vcjob"):
        ways = [line[f"{kind}_{way}_us_per_write"] for way in ("loop", "store", "document")]
        assert all(us > 0 for us in ways)
        share = 1 - ways[1] / ways[0]  # of the rounded figures: within a rounding
        assert abs(line[f"{kind}_loop_share_outside_store"] - share) < 0.01
