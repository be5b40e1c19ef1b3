"""``JobInfo`` reads its podgroup's minMember and the names of its minResources once, when built
(every cycle asks them of every job); a pickled job keeps them."""

from __future__ import annotations

import pickle

from lahar.scheduler.api import JobInfo
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import JobFacts, Session
from lahar.scheduler.cache import job_from_podgroup
from tests.builders import podgroup


def test_the_fields_come_from_the_podgroup():
    group = podgroup("j").queue("q").min_member(3).min_resources(cpu=2, gpu=1).build()
    job = job_from_podgroup(group, {})
    assert job.min_member == 3
    assert job.min_resource_names == ("cpu", "nvidia.com/gpu")


def test_without_a_podgroup_or_min_resources():
    bare = JobInfo("ns/j", "j", "ns", "q", min_available=2)
    assert (bare.min_member, bare.min_resource_names) == (2, None)
    group = podgroup("j").queue("q").min_member(1).build()
    assert job_from_podgroup(group, {}).min_resource_names is None


def test_a_pickled_job_keeps_the_fields_and_leaves_its_facts_behind():
    job = job_from_podgroup(podgroup("j").queue("q").min_member(2).min_resources(cpu=1).build(), {})
    ssn = Session(uid="s", jobs={job.uid: job}, nodes={}, queues={}, conf=load_config(default_config_text()))
    job.facts = JobFacts(ssn, job)  # facts may hold this process's request numbers: never pickled
    restored = pickle.loads(pickle.dumps(job))
    assert (restored.uid, restored.queue, restored.min_member, restored.min_resource_names) == (job.uid, "q", 2, ("cpu",))
    assert restored.podgroup == job.podgroup and restored.facts is None
