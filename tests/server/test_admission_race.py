"""Admission reads the cluster inside the write's own transaction. Two servers on one database
(here two services on one SQLite file): while one admits a job, the other closes the job's
queue. Either the job comes first and the queue closes after it, or the close comes first and
the job is refused; never a job written into a queue that was already closed."""

from __future__ import annotations

import threading

import pytest

from lahar.errors import Invalid
from lahar.server.service import ApiService
from lahar.store import open_store
from test_api import job, queue


def test_a_queue_closed_by_another_server_during_admission_waits_for_the_job(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'lahar.db'}"
    first, second = ApiService(open_store(url)), ApiService(open_store(url))
    first.create(queue("team"))
    closing = threading.Thread(target=second.queue_action, args=("team", "CloseQueue"))
    finished_in_window: list[bool] = []
    checked = first.access.create

    def close_from_the_other_server(who, obj):  # after admission read the cluster, before the write
        closing.start()
        closing.join(1.0)  # the close runs now unless this write's transaction holds it back
        finished_in_window.append(not closing.is_alive())
        return checked(who, obj)

    monkeypatch.setattr(first.access, "create", close_from_the_other_server)
    created = first.create(job("work", "team"))
    closing.join(15.0)
    assert finished_in_window == [False]  # the close waited for the job's transaction
    stored_queue = first.store.get("Queue", "team")
    assert stored_queue["status"]["state"] == "Closed"
    assert int(created["metadata"]["resourceVersion"]) < int(stored_queue["metadata"]["resourceVersion"])
    monkeypatch.undo()
    with pytest.raises(Invalid, match="team is Closed"):  # and once closed, the queue takes no job
        first.create(job("later", "team"))
