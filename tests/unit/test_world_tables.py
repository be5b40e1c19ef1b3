"""A ``World`` keeps each kind of object in its own table, found by the object's class: the
kinds must not be subclasses of one another (an object is in one table at most), and an
object of a class the world has no table for is in none."""

from __future__ import annotations

import itertools

from lahar.model.manifest import KINDS
from lahar.sim import world as world_module
from lahar.sim.world import World


def test_no_kind_with_a_table_is_a_subclass_of_another():
    for (_, a), (_, b) in itertools.permutations(world_module._TABLES, 2):
        assert not issubclass(a, b), (a, b)


def test_each_kind_goes_to_its_own_table_and_leaves_it():
    world = World(raw=True)
    tables = {kind: getattr(world, name) for name, kind in world_module._TABLES}
    made = {
        "Queue": {"metadata": {"name": "q"}},
        "Node": {"metadata": {"name": "n"}},
        "PodGroup": {"metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 1}},
        "Pod": {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}},
        "PriorityClass": {"metadata": {"name": "high"}, "value": 10},
        "Job": {"metadata": {"name": "j", "namespace": "default"}, "spec": {"tasks": [{"name": "t", "replicas": 1}]}},
    }
    for kind, body in made.items():
        obj = KINDS[kind].model_validate({"kind": kind, **body})
        world.ingest(obj)
        holding = [cls.__name__ for cls, table in tables.items() if obj.key in table and table[obj.key] is obj]
        assert holding == [kind]
        world.forget(obj)
        assert all(obj.key not in table or table[obj.key] is not obj for table in tables.values())
    assert world._table(KINDS["Command"].model_validate({"kind": "Command", "metadata": {"name": "c"}, "action": "OpenQueue"})) is None
