"""What a request reads to admit a job (queues and podgroups, ``MirrorView``) and the event
log's index of its events follow the store's watch for a few kinds. Each look must leave them
at the store's version, not at their own kinds' last change: else every request would read
every vcjob and audit event written since the last podgroup change again."""

from __future__ import annotations

import pytest

from lahar.server.events import EventLog
from test_api import job, node


@pytest.fixture
def service(each_store_service):
    return each_store_service


def test_the_admission_view_reads_each_change_once(service):
    service.create(node("n1"))
    for n in range(5):
        service.create(job(f"j{n}"))  # a vcjob and an audit event each: nothing the view keeps
        assert service.mirror.version == service.store.current_version() - 2  # read up to the request's own writes
    service.view()
    assert service.mirror.version == service.store.current_version()
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 1, "queue": "default"}}
    before = service.view().unfinished_podgroups("default")
    service.store.create(group)  # a change of a kind the view keeps, after it looked
    assert service.view().unfinished_podgroups("default") == before + 1


def test_the_event_log_reads_each_change_once(service):
    log = EventLog(service.store, service.clock)
    log.emit("Queue", "default", "Test", "one")
    for n in range(3):
        service.store.create(job(f"j{n}"))
    log._catch_up()
    assert log._version == service.store.current_version()
    log.emit("Queue", "default", "Test", "two")
    log._catch_up()
    assert len(log._known) == 2
