"""``bench/write.py`` times one write of the control loop three ways (as the loop makes it, the
store's part alone, the change made on the stored document): each way writes every podgroup,
and the loop's writes are made as the loop makes them, at the version the world holds."""

from __future__ import annotations

from bench_programs import bench_program


def _bench_write():
    return bench_program("write")


def test_each_way_writes_every_podgroup_and_the_world_stays_in_step(tmp_path):
    bench = _bench_write()
    loop = bench.bound_loop(tmp_path, 12)
    store, world = loop.service.store, loop.world
    keys = sorted(world.podgroups)
    assert len(keys) == 12 and all(world.podgroups[k].status.phase == "Running" for k in keys)
    before = store.current_version()
    bench.loop_writes(loop, keys, "Inqueue")
    assert store.current_version() == before + 12  # one write each, none read back and written again
    assert all(store.get("PodGroup", k)["status"]["phase"] == "Inqueue" == world.podgroups[k].status.phase for k in keys)
    assert all(world.podgroups[k].metadata.resource_version == store.get("PodGroup", k)["metadata"]["resourceVersion"] for k in keys)
    documents = [store.get("PodGroup", k) for k in keys]
    bench.store_writes(loop, documents)
    bench.document_writes(loop, [store.get("PodGroup", k) for k in keys], "Running")
    assert store.current_version() == before + 36
    assert all(store.get("PodGroup", k)["status"]["phase"] == "Running" for k in keys)
    world.sync()
    assert all(world.podgroups[k].status.phase == "Running" for k in keys)
    store.close()


def test_it_prints_the_three_ways_per_write(tmp_path):
    line = _bench_write().run(10, 2, tmp_path)
    assert line["bench"] == "write" and line["podgroups"] == 10 and line["rounds"] == 2
    assert line["loop_us_per_write"] > 0 and line["store_us_per_write"] > 0 and line["document_us_per_write"] > 0
    share = 1 - line["store_us_per_write"] / line["loop_us_per_write"]  # of the rounded figures: within a rounding
    assert abs(line["loop_share_outside_store"] - share) < 0.01
