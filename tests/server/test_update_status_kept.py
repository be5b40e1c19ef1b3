"""An update keeps the stored status where the kind declares one (the controllers write it); a
kind without one (PriorityClass) may carry an unknown ``status``, which is written as given."""

from __future__ import annotations

from lahar.server.service import ApiService
from lahar.store import open_store


def test_an_unknown_status_of_a_kind_without_one_is_written_as_given(tmp_path):
    service = ApiService(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"))
    document = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10, "status": {"note": "a"}}
    stored = service.create(document)
    written = service.update({**stored, "value": 20, "status": {"note": "b"}})
    assert written["value"] == 20 and written["status"] == {"note": "b"}
    assert service.get("PriorityClass", "high")["status"] == {"note": "b"}


def test_a_declared_status_is_kept_from_the_store(tmp_path):
    service = ApiService(open_store(f"sqlite:///{tmp_path / 'lahar.db'}"))
    stored = service.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}})
    written = service.update({**stored, "spec": {"weight": 2}, "status": {"state": "Closed", "running": 7}})
    assert written["spec"]["weight"] == 2
    assert written.get("status", {}).get("running") != 7 and written.get("status", {}).get("state") != "Closed"
