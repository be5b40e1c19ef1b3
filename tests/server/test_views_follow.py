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


def test_the_admission_view_counts_podgroups_as_a_full_parse_would(service):
    """The view takes a podgroup's queue and phase from the stored document without parsing
    the whole object (the loop writes a podgroup several times per job): the same counts as
    ``LiveView.put`` of the parsed podgroup, defaults (queue ``default``, phase Pending) included."""
    from lahar.admission.view import LiveView
    from lahar.model.workload import PodGroup

    def group(name, queue=None, phase=None, namespace="default"):
        body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace}, "spec": {"minMember": 1}}
        if queue:
            body["spec"]["queue"] = queue
        if phase:
            body["status"] = {"phase": phase}
        return body

    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}}
    service.create(queue)
    bodies = [group("a"), group("b", "q"), group("c", "q", "Running"), group("d", "q", "Completed"), group("e", None, "Inqueue", "other")]
    for body in bodies:
        service.store.create(body)
    done = service.store.get("PodGroup", "default/c")
    service.store.update({**done, "status": {"phase": "Completed"}})
    service.store.delete("PodGroup", "default/a")
    expected = LiveView()
    for item in service.store.list("PodGroup")[0]:
        expected.put(PodGroup.model_validate(item))
    view = service.view()
    for name in ("default", "q"):
        assert view.phase_counts(name) == expected.phase_counts(name)
        assert view.unfinished_podgroups(name) == expected.unfinished_podgroups(name)
    assert view.phase_counts("q")["Completed"] == 2 and view.phase_counts("default")["Inqueue"] == 1
