"""Tokens and queue ACLs over HTTP: 401 without a token, 403 naming who, what and which ACL."""

from __future__ import annotations

import json
import os
import stat

import pytest
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore

Q = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


@pytest.fixture
def secured(tmp_path):
    built = build_server(MemoryStore(), load_config(default_config_text()), home=tmp_path)
    admin = built.admin_token_path.read_text().strip()
    client = TestClient(built.app)
    return built, client, admin


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def job(name: str, queue: str) -> dict:
    return {"kind": "Job", "metadata": {"name": name}, "spec": {"queue": queue, "tasks": [{"name": "t", "replicas": 1}]}}


def test_requests_need_a_token(secured):
    built, c, admin = secured
    refused = c.get(Q)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert refused.json()["kind"] == "Status" and refused.json()["code"] == 401
    assert c.get(Q, headers=bearer("lahar_nope_nope")).status_code == 401
    assert c.get("/healthz").status_code == 200
    assert c.get("/ui/").status_code == 200
    assert c.get(Q, headers=bearer(admin)).status_code == 200
    mode = stat.S_IMODE(os.stat(built.admin_token_path).st_mode)
    assert mode == 0o600


def test_admin_token_is_created_once(tmp_path):
    store = MemoryStore()
    first = build_server(store, load_config(default_config_text()), home=tmp_path)
    again = build_server(store, load_config(default_config_text()), home=tmp_path / "other")
    assert first.admin_token_path is not None and again.admin_token_path is None
    stored = store.list("Token")[0]
    assert len(stored) == 1 and "secretHash" in stored[0]
    secret = first.admin_token_path.read_text().strip().removeprefix("lahar_").partition("_")[2]  # may hold "_"
    assert len(secret) > 20 and secret not in str(stored[0])


def test_acls_decide_submit_and_operate(secured):
    _, c, admin = secured
    made = c.post("/lahar/v1/tokens", json={"user": "alice", "groups": "ml"}, headers=bearer(admin)).json()
    alice = made["token"]
    bob = c.post("/lahar/v1/tokens", json={"user": "bob"}, headers=bearer(admin)).json()["token"]
    acl = {"lahar.dev/submit-acl": "group:ml", "lahar.dev/admin-acl": "alice"}
    assert c.post(Q, json={"kind": "Queue", "metadata": {"name": "ml-q", "annotations": acl}}, headers=bearer(admin)).status_code == 201
    assert c.post(Q, json={"kind": "Queue", "metadata": {"name": "bobs", "annotations": {"lahar.dev/submit-acl": "bob"}}}, headers=bearer(admin)).status_code == 201

    created = c.post(JOBS, json=job("a1", "ml-q"), headers=bearer(alice))
    assert created.status_code == 201 and created.json()["metadata"]["annotations"]["lahar.dev/owner"] == "alice"
    denied = c.post(JOBS, json=job("a2", "bobs"), headers=bearer(alice))
    assert denied.status_code == 403
    assert "user alice (groups ml) may not submit to queue bobs" in denied.json()["message"]
    assert "lahar.dev/submit-acl" in denied.json()["message"]
    assert c.post(JOBS, json=job("b1", "bobs"), headers=bearer(bob)).status_code == 201

    no = c.post(f"{Q}/ml-q/suspend", headers=bearer(bob))
    assert no.status_code == 403 and "user bob may not SuspendQueue queue ml-q" in no.json()["message"]
    assert c.post(f"{Q}/ml-q/suspend", headers=bearer(alice)).status_code == 200
    assert c.post(Q, json={"kind": "Queue", "metadata": {"name": "mine"}}, headers=bearer(bob)).status_code == 403
    assert c.post("/api/v1/nodes", json={"kind": "Node", "metadata": {"name": "n"}}, headers=bearer(bob)).status_code == 403

    seen_by_alice = [j["metadata"]["name"] for j in c.get(JOBS, headers=bearer(alice)).json()["items"]]
    assert seen_by_alice == ["a1"]
    assert c.get(f"{JOBS}/b1", headers=bearer(alice)).status_code == 403
    assert c.delete(f"{JOBS}/b1", headers=bearer(alice)).status_code == 403
    assert {j["metadata"]["name"] for j in c.get(JOBS, headers=bearer(admin)).json()["items"]} == {"a1", "b1"}


def test_revoked_tokens_stop_working_and_users_cannot_manage_tokens(secured):
    _, c, admin = secured
    made = c.post("/lahar/v1/tokens", json={"user": "carol"}, headers=bearer(admin)).json()
    assert c.get(Q, headers=bearer(made["token"])).status_code == 200
    assert c.post("/lahar/v1/tokens", json={"user": "x"}, headers=bearer(made["token"])).status_code == 403
    assert c.delete(f"/lahar/v1/tokens/{made['id']}", headers=bearer(admin)).json()["revoked"] is True
    assert c.get(Q, headers=bearer(made["token"])).status_code == 401
    listed = c.get("/lahar/v1/tokens", headers=bearer(admin)).json()["items"]
    assert all("secret" not in str(item).lower() for item in listed)


def test_changes_leave_audit_events(secured):
    _, c, admin = secured
    c.post(Q, json={"kind": "Queue", "metadata": {"name": "audited"}}, headers=bearer(admin))
    events = c.get("/apis/lahar.dev/v1alpha1/events", headers=bearer(admin)).json()["items"]
    audit = [e for e in events if e["type"] == "Audit" and e["involvedObject"]["name"] == "audited"]
    assert audit and audit[0]["user"] == "admin" and audit[0]["reason"] == "create"


def test_a_watch_shows_a_user_only_what_a_list_shows_them(secured):
    """Owner-only visibility holds for ``?watch=true`` too, not only for lists and reads."""
    _, c, admin = secured
    alice = c.post("/lahar/v1/tokens", json={"user": "alice"}, headers=bearer(admin)).json()["token"]
    assert c.post(JOBS, json=job("admins-job", "default"), headers=bearer(admin)).status_code == 201
    assert c.post(JOBS, json=job("alices-job", "default"), headers=bearer(alice)).status_code == 201
    watched = c.get(f"{JOBS}?watch=true&resourceVersion=0&timeoutSeconds=0.5", headers=bearer(alice)).text
    names = [json.loads(line)["object"]["metadata"]["name"] for line in watched.splitlines() if line]
    assert names == ["alices-job"]
    everything = c.get(f"{JOBS}?watch=true&resourceVersion=0&timeoutSeconds=0.5", headers=bearer(admin)).text
    assert "admins-job" in everything and "alices-job" in everything


def test_users_see_their_own_audit_events_and_only_their_queues_job_events(secured):
    built, c, admin = secured
    alice = c.post("/lahar/v1/tokens", json={"user": "alice", "groups": "ml"}, headers=bearer(admin)).json()["token"]
    bob = c.post("/lahar/v1/tokens", json={"user": "bob"}, headers=bearer(admin)).json()["token"]
    c.post(Q, json={"kind": "Queue", "metadata": {"name": "ml-q", "annotations": {"lahar.dev/submit-acl": "group:ml"}}}, headers=bearer(admin))
    c.post(Q, json={"kind": "Queue", "metadata": {"name": "bobs", "annotations": {"lahar.dev/submit-acl": "bob"}}}, headers=bearer(admin))
    c.post("/api/v1/nodes", json={"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}}, headers=bearer(admin))
    assert c.post(JOBS, json=job("secret-a", "ml-q"), headers=bearer(alice)).status_code == 201
    assert c.post(JOBS, json=job("secret-b", "bobs"), headers=bearer(bob)).status_code == 201
    built.loop.tick()
    built.loop.tick()

    def seen(token):
        return c.get("/apis/lahar.dev/v1alpha1/events", headers=bearer(token)).json()["items"]

    everything = seen(admin)
    assert any((e["metadata"].get("labels") or {}).get("lahar.dev/job") == "secret-b" for e in everything)
    for e in seen(alice):
        labels = e["metadata"].get("labels") or {}
        assert e["type"] != "Audit" or e["user"] == "alice", e
        assert labels.get("lahar.dev/job") != "secret-b" and "secret-b" not in e.get("message", ""), e
    assert any(e["type"] == "Audit" and e["user"] == "alice" for e in seen(alice))
    assert any((e["metadata"].get("labels") or {}).get("lahar.dev/job") == "secret-b" for e in seen(bob))


def test_a_replace_keeps_the_owner_a_user_cannot_drop_or_hand_over(secured):
    """The owner stamp is the server's: a user's replace without it, or naming someone else,
    leaves the work theirs (so they can still change and delete it); an admin may hand it over."""
    _, c, admin = secured
    alice = c.post("/lahar/v1/tokens", json={"user": "alice"}, headers=bearer(admin)).json()["token"]
    bob = c.post("/lahar/v1/tokens", json={"user": "bob"}, headers=bearer(admin)).json()["token"]
    assert c.post(JOBS, json=job("mine", "default"), headers=bearer(alice)).status_code == 201
    replaced = c.put(f"{JOBS}/mine", json=job("mine", "default"), headers=bearer(alice))
    assert replaced.status_code == 200 and replaced.json()["metadata"]["annotations"]["lahar.dev/owner"] == "alice"
    handed = job("mine", "default")
    handed["metadata"]["annotations"] = {"lahar.dev/owner": "bob"}
    assert c.put(f"{JOBS}/mine", json=handed, headers=bearer(alice)).json()["metadata"]["annotations"]["lahar.dev/owner"] == "alice"
    assert c.patch(f"{JOBS}/mine", json={"metadata": {"annotations": {"lahar.dev/owner": None}}}, headers=bearer(alice)).status_code == 200
    assert c.get(f"{JOBS}/mine", headers=bearer(bob)).status_code == 403
    assert c.get(f"{JOBS}/mine", headers=bearer(alice)).json()["metadata"]["annotations"]["lahar.dev/owner"] == "alice"
    assert c.put(f"{JOBS}/mine", json=handed, headers=bearer(admin)).json()["metadata"]["annotations"]["lahar.dev/owner"] == "bob"
    assert c.delete(f"{JOBS}/mine", headers=bearer(bob)).status_code == 200


def test_the_demos_objects_are_audited_as_made_by_the_server_itself(tmp_path):
    """``lahar server --demo`` seeds its objects itself: their audit records say so, not that
    authentication was off (it is on), and name no user a token could have."""
    from lahar.cli.server_cmd import _load_demo

    built = build_server(MemoryStore(), load_config(default_config_text()), home=tmp_path)
    _load_demo(built.service)
    audits = [e for e in built.store.list("LaharEvent")[0] if e.get("type") == "Audit"]
    assert len(audits) == 4 + 3 + 4  # nodes, queues, jobs
    assert {e["user"] for e in audits} == {"system:lahar-server"}
    assert all(e["message"].startswith("the server (lahar server --demo) create ") for e in audits)
    assert not any("anonymous" in e["message"] for e in audits)


def test_a_user_cannot_move_work_into_a_queue_they_may_not_submit_to(secured):
    """Changing the queue of one's work is a submission to the new queue: its submit ACL must
    admit the user (a podgroup's spec.queue, a bare pod's queue annotation)."""
    _, c, admin = secured
    alice = c.post("/lahar/v1/tokens", json={"user": "alice"}, headers=bearer(admin)).json()["token"]
    for name, acl in (("mine", "alice"), ("also-mine", "alice"), ("bobs", "bob")):
        assert c.post(Q, json={"kind": "Queue", "metadata": {"name": name, "annotations": {"lahar.dev/submit-acl": acl}}}, headers=bearer(admin)).status_code == 201
    groups = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    pods = "/api/v1/namespaces/default/pods"
    queue_of_pod = "scheduling.volcano.sh/queue-name"
    pod = {"kind": "Pod", "metadata": {"name": "p", "annotations": {queue_of_pod: "mine"}}, "spec": {"containers": [{"name": "c"}]}}
    assert c.post(groups, json={"kind": "PodGroup", "metadata": {"name": "pg"}, "spec": {"queue": "mine", "minMember": 1}}, headers=bearer(alice)).status_code == 201
    assert c.post(pods, json=pod, headers=bearer(alice)).status_code == 201
    moves = [
        (f"{groups}/pg", {"spec": {"queue": "bobs"}}, {"spec": {"queue": "also-mine"}}),
        (f"{pods}/p", {"metadata": {"annotations": {queue_of_pod: "bobs"}}}, {"metadata": {"annotations": {queue_of_pod: "also-mine"}}}),
    ]
    for path, refused, allowed in moves:
        denied = c.patch(path, json=refused, headers=bearer(alice))
        assert denied.status_code == 403 and "may not submit to queue bobs" in denied.json()["message"], (path, denied.text)
        assert c.patch(path, json=allowed, headers=bearer(alice)).status_code == 200, path
        assert c.patch(path, json=refused, headers=bearer(admin)).status_code == 200, path  # admins may


def test_a_user_cannot_add_pods_to_someone_elses_podgroup(secured):
    """A pod that names a podgroup runs as a task of that podgroup, in its queue: adding one is
    changing that work, so it needs the podgroup's owner (who may submit to its queue) or an
    admin of its queue, whatever queue the pod's own annotation names."""
    built, c, admin = secured
    alice = c.post("/lahar/v1/tokens", json={"user": "alice"}, headers=bearer(admin)).json()["token"]
    bob = c.post("/lahar/v1/tokens", json={"user": "bob"}, headers=bearer(admin)).json()["token"]
    carol = c.post("/lahar/v1/tokens", json={"user": "carol"}, headers=bearer(admin)).json()["token"]
    acls = {"mine": {"lahar.dev/submit-acl": "alice"}, "bobs": {"lahar.dev/submit-acl": "bob", "lahar.dev/admin-acl": "carol"}}
    for name, acl in acls.items():
        assert c.post(Q, json={"kind": "Queue", "metadata": {"name": name, "annotations": acl}}, headers=bearer(admin)).status_code == 201
    groups, pods = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", "/api/v1/namespaces/default/pods"
    assert c.post(groups, json={"kind": "PodGroup", "metadata": {"name": "pg"}, "spec": {"queue": "bobs", "minMember": 1}}, headers=bearer(bob)).status_code == 201

    def pod(name: str, group: str | None = "pg") -> dict:
        annotations = {"scheduling.volcano.sh/queue-name": "mine", **({"scheduling.k8s.io/group-name": group} if group else {})}
        return {"kind": "Pod", "metadata": {"name": name, "annotations": annotations}, "spec": {"containers": [{"name": "c"}]}}

    denied = c.post(pods, json=pod("intruder"), headers=bearer(alice))
    assert denied.status_code == 403 and "PodGroup default/pg" in denied.json()["message"], denied.text
    assert c.post(pods, json=pod("loner", None), headers=bearer(alice)).status_code == 201
    joined = c.patch(f"{pods}/loner", json={"metadata": {"annotations": {"scheduling.k8s.io/group-name": "pg"}}}, headers=bearer(alice))
    assert joined.status_code == 403, joined.text
    assert c.post(pods, json=pod("bobs-own"), headers=bearer(bob)).status_code == 201
    assert c.post(pods, json=pod("queue-admins"), headers=bearer(carol)).status_code == 201
    assert c.post(pods, json=pod("admins"), headers=bearer(admin)).status_code == 201
    assert c.post(pods, json=pod("before-its-group", "later"), headers=bearer(alice)).status_code == 201  # no such podgroup yet
    assert sorted(p["metadata"]["name"] for p in built.store.list("Pod")[0]) == ["admins", "before-its-group", "bobs-own", "loner", "queue-admins"]
