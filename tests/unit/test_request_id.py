"""``request_id`` names a request's values with a number (a cheap key for the answers the
scheduler keeps per request); a task works its number out once and keeps it through clones. The
numbers belong to the process: a pickled task leaves its number behind (another process may have
given that number to other values), and a task pickled before tasks kept one loads too."""

from __future__ import annotations

import pickle

from lahar.resources import Resource, request_id
from lahar.scheduler.api import TaskInfo


def test_equal_values_share_a_number_and_other_values_do_not():
    gpu = Resource(1000.0, 2.0**30, {"nvidia.com/gpu": 1000.0, "pods": 1.0})
    same = Resource(1000.0, 2.0**30, {"nvidia.com/gpu": 1000.0, "pods": 1.0})
    assert request_id(gpu) == request_id(same)
    others = [Resource(2000.0, 2.0**30, {"nvidia.com/gpu": 1000.0, "pods": 1.0}), Resource(1000.0, 2.0**30, {"nvidia.com/gpu": 2000.0, "pods": 1.0}), Resource(1000.0, 2.0**30), Resource(1000.0, 2.0**30, {})]
    numbers = {request_id(r) for r in others}
    assert request_id(gpu) not in numbers and len(numbers) == len(others)


def test_a_task_keeps_its_number_through_clones_and_works_it_out_again_when_unpickled():
    task = TaskInfo("u", "t-0", "ns", "ns/j", Resource(500.0, 1024.0))
    number = task.request_id()
    assert number == request_id(task.resreq)
    assert task.clone().request_id() == number
    restored = pickle.loads(pickle.dumps(task))
    assert restored._request_id == -1  # the number is this process's own: another may name other values so
    assert (restored.uid, restored.name, restored.request_id()) == ("u", "t-0", number)


def test_a_task_pickled_without_the_number_works_it_out():
    task = TaskInfo("u", "t-0", "ns", "ns/j", Resource(500.0, 1024.0))
    fields = task.__getstate__()
    del fields["_request_id"]
    old = TaskInfo.__new__(TaskInfo)
    old.__setstate__((None, fields))  # how an older version's slots were pickled
    assert old.request_id() == request_id(task.resreq) and old.name == "t-0"
