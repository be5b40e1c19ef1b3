"""The token of a create, replace or patch is checked inside the write group that runs it.

Those three writes are the API's hot path: their token is read in the writer's open batch,
where a read is cheap, rather than on the event loop before the route runs. Nothing of the
contract changes: a bad token is refused with 401 before any other answer (a bad body, an
unknown object, a refusal of the ACLs), nothing is written for it, and a revoked token fails
its very next request, also on another server sharing the store.
"""

from __future__ import annotations

import threading

import pytest
from fastapi import Request
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore, SqliteStore

Q = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
TOKENS = "/lahar/v1/tokens"
CONF = load_config(default_config_text())


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def job(name: str, queue: str = "default") -> dict:
    return {"kind": "Job", "metadata": {"name": name}, "spec": {"queue": queue, "tasks": [{"name": "t", "replicas": 1}]}}


@pytest.fixture
def secured(tmp_path):
    built = build_server(SqliteStore(tmp_path / "lahar.db"), CONF, home=tmp_path)
    return built, TestClient(built.app), built.admin_token_path.read_text().strip()


def revoked_token(client: TestClient, admin: str) -> str:
    """A token the server has seen live (so a write of it is checked in its write group), since
    revoked: the write group is where it is found out."""
    made = client.post(TOKENS, json={"user": "gone"}, headers=bearer(admin)).json()
    assert client.get(JOBS, headers=bearer(made["token"])).status_code == 200
    assert client.delete(f"{TOKENS}/{made['id']}", headers=bearer(admin)).status_code == 200
    return made["token"]


def stored_version(built) -> int:
    return built.store.list("Queue")[1]


BAD_CREDENTIALS = {
    "no header": {},
    "an empty header": {"Authorization": ""},
    "another scheme": {"Authorization": "Basic YWRtaW46YWRtaW4="},
    "a malformed token": {"Authorization": "Bearer x"},
    "an unknown token": {"Authorization": "Bearer lahar_nope_nope"},
}


def filled(path: str) -> str:
    values = {"namespace": "default", "name": "x", "action": "open", "token_id": "nope"}
    for param, value in values.items():
        path = path.replace("{" + param + "}", value)
    assert "{" not in path, path
    return path


def write_routes(app) -> list[tuple[str, str]]:
    found = [(method, route.path) for route in app.routes if isinstance(route, APIRoute) for method in route.methods if method in ("POST", "PUT", "PATCH", "DELETE")]
    assert len(found) > 20  # every kind's create, replace, patch and delete, and Lahar's own writes
    return sorted(found)


@pytest.mark.parametrize("credentials", sorted(BAD_CREDENTIALS))
def test_every_write_route_refuses_bad_credentials_first_and_writes_nothing(secured, credentials):
    built, c, admin = secured
    headers = BAD_CREDENTIALS[credentials]
    assert c.post(JOBS, json=job("kept"), headers=bearer(admin)).status_code == 201
    before = stored_version(built)
    valid = [  # each would be written with the admin's token
        ("POST", JOBS, job("new")),
        ("POST", Q, {"kind": "Queue", "metadata": {"name": "new-q"}}),
        ("PUT", f"{JOBS}/kept", job("kept")),
        ("PATCH", f"{JOBS}/kept", {"metadata": {"labels": {"a": "b"}}}),
        ("DELETE", f"{JOBS}/kept", None),
        ("POST", f"{Q}/default/close", None),
        ("POST", TOKENS, {"user": "mallory", "admin": True}),
    ]
    for method, path, body in valid:
        answer = c.request(method, path, json=body, headers=headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer", (method, path, answer.text)
    for method, path in write_routes(built.app):
        for body in ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, {"json": {"kind": "Job", "metadata": {"name": "x"}}}, {}):
            extra = dict(body.get("headers", {}), **headers)
            answer = c.request(method, filled(path), content=body.get("content"), json=body.get("json"), headers=extra)
            assert answer.status_code == 401, (method, path, body, answer.status_code, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer" and answer.json()["code"] == 401
    assert stored_version(built) == before


def test_a_bad_token_is_refused_before_a_bad_body_an_unknown_object_or_a_name_clash(secured):
    _, c, admin = secured
    assert c.post(JOBS, json=job("taken"), headers=bearer(admin)).status_code == 201
    cases = [
        ("POST", JOBS, {"content": b"[1, 2]"}, 400),  # not an object
        ("POST", JOBS, {"json": {"kind": "Queue", "metadata": {"name": "q"}}}, 400),  # the wrong kind here
        ("POST", JOBS, {"json": job("taken")}, 409),
        ("PUT", f"{JOBS}/taken", {"json": {"metadata": {"name": "other"}}}, 400),  # the path's name differs
        ("PATCH", f"{JOBS}/missing", {"json": {"spec": {"priorityClassName": "x"}}}, 404),
        ("POST", Q, {"json": {"kind": "Queue", "metadata": {"name": "Bad_Name"}}}, 422),  # an invalid object
    ]
    for method, path, body, with_admin in cases:
        headers = {"Content-Type": "application/json"} if "content" in body else {}
        assert c.request(method, path, headers=dict(headers, **bearer(admin)), **body).status_code == with_admin, (method, path)
        gone = revoked_token(c, admin)  # a fresh one each time: once refused, it is refused before the route
        refused = c.request(method, path, headers=dict(headers, **bearer(gone)), **body)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", (method, path, refused.text)
        assert refused.json()["message"] == "invalid or revoked token"


def test_a_revoked_token_fails_its_very_next_write(secured):
    built, c, admin = secured
    made = c.post(TOKENS, json={"user": "dora"}, headers=bearer(admin)).json()
    assert c.post(JOBS, json=job("before"), headers=bearer(made["token"])).status_code == 201
    assert c.delete(f"{TOKENS}/{made['id']}", headers=bearer(admin)).status_code == 200
    for method, path, body in [("POST", JOBS, job("after")), ("PUT", f"{JOBS}/before", job("before")), ("PATCH", f"{JOBS}/before", {"metadata": {"labels": {"a": "b"}}})]:
        assert c.request(method, path, json=body, headers=bearer(made["token"])).status_code == 401, (method, path)
    names = [j["metadata"]["name"] for j in c.get(JOBS, headers=bearer(admin)).json()["items"]]
    assert names == ["before"]
    stored = c.get(f"{JOBS}/before", headers=bearer(admin)).json()
    assert "labels" not in stored["metadata"] or "a" not in stored["metadata"]["labels"]


def test_a_token_revoked_on_one_server_fails_at_once_on_another_sharing_the_store(tmp_path):
    first = build_server(SqliteStore(tmp_path / "lahar.db"), CONF, home=tmp_path / "one")
    second = build_server(SqliteStore(tmp_path / "lahar.db"), CONF, home=tmp_path / "two")
    admin = first.admin_token_path.read_text().strip()
    assert second.admin_token_path is None  # the store already holds a token
    one, two = TestClient(first.app), TestClient(second.app)
    made = one.post(TOKENS, json={"user": "erin"}, headers=bearer(admin)).json()
    assert two.post(JOBS, json=job("kept"), headers=bearer(made["token"])).status_code == 201
    assert one.delete(f"{TOKENS}/{made['id']}", headers=bearer(admin)).status_code == 200
    refused = two.post(JOBS, json=job("refused"), headers=bearer(made["token"]))
    assert refused.status_code == 401
    assert [j["metadata"]["name"] for j in two.get(JOBS, headers=bearer(admin)).json()["items"]] == ["kept"]


def test_the_writes_read_their_token_in_the_write_group_and_other_requests_before_the_route(secured):
    built, c, admin = secured
    alice = c.post(TOKENS, json={"user": "alice"}, headers=bearer(admin)).json()["token"]
    assert c.get(JOBS, headers=bearer(alice)).status_code == 200  # the server has now seen her token stored
    where: list[str] = []  # the thread of each token read: the writer's runs every write in its batch
    lookup = built.tokens.lookup

    def recording(token_id):
        where.append(threading.current_thread().name)
        return lookup(token_id)

    built.tokens.lookup = recording
    assert c.post(JOBS, json=job("mine"), headers=bearer(alice)).status_code == 201
    assert c.put(f"{JOBS}/mine", json=job("mine"), headers=bearer(alice)).status_code == 200
    assert c.patch(f"{JOBS}/mine", json={"metadata": {"labels": {"a": "b"}}}, headers=bearer(alice)).status_code == 200
    assert where == ["lahar-request"] * 3
    where.clear()
    assert c.get(f"{JOBS}/mine", headers=bearer(alice)).status_code == 200
    assert c.delete(f"{JOBS}/mine", headers=bearer(alice)).status_code == 200
    assert c.post(f"{Q}/default/close", headers=bearer(alice)).status_code == 403
    assert len(where) == 3 and "lahar-request" not in where


def test_the_write_is_made_as_the_tokens_user_and_refused_by_its_acls(secured):
    built, c, admin = secured
    alice = c.post(TOKENS, json={"user": "alice", "groups": "ml"}, headers=bearer(admin)).json()["token"]
    acl = {"lahar.dev/submit-acl": "group:ml"}
    assert c.post(Q, json={"kind": "Queue", "metadata": {"name": "ml-q", "annotations": acl}}, headers=bearer(admin)).status_code == 201
    assert c.post(Q, json={"kind": "Queue", "metadata": {"name": "closed-q", "annotations": {"lahar.dev/submit-acl": "bob"}}}, headers=bearer(admin)).status_code == 201
    created = c.post(JOBS, json=job("a1", "ml-q"), headers=bearer(alice))
    assert created.status_code == 201 and created.json()["metadata"]["annotations"]["lahar.dev/owner"] == "alice"
    denied = c.post(JOBS, json=job("a2", "closed-q"), headers=bearer(alice))
    assert denied.status_code == 403 and "user alice (groups ml)" in denied.json()["message"]
    audit = [e for e in built.store.list("LaharEvent")[0] if e.get("type") == "Audit" and e["involvedObject"]["name"] == "default/a1"]
    assert [(e["user"], e["reason"]) for e in audit] == [("alice", "create")]


def test_without_authentication_the_writes_are_anonymous(tmp_path):
    built = build_server(MemoryStore(), CONF, auth=False, home=tmp_path)
    c = TestClient(built.app)
    assert c.post(JOBS, json=job("free"), headers=bearer("lahar_anything_at_all")).status_code == 201
    audit = [e for e in built.store.list("LaharEvent")[0] if e.get("type") == "Audit" and e["involvedObject"]["name"] == "default/free"]
    assert len(audit) == 1 and "user" not in audit[0]


def test_an_app_that_fails_before_checking_still_answers_a_bad_token_with_401(tmp_path):
    from fastapi import FastAPI

    from lahar.server.auth import AuthMiddleware, TokenStore, bootstrap_admin_token
    from lahar.server.bodies import PathOnlyRoute

    tokens = TokenStore(MemoryStore())
    admin = bootstrap_admin_token(tokens, tmp_path).read_text().strip()
    other, record = tokens.create("other", [], False)
    app = FastAPI()

    async def broken(request: Request, name: str):
        raise RuntimeError("the route failed before anyone looked at the caller")

    app.router.add_api_route("/things/{name}", broken, methods=["POST"], route_class_override=PathOnlyRoute)
    app.add_middleware(AuthMiddleware, tokens=tokens, routes=app.router.routes)
    c = TestClient(app, raise_server_exceptions=False)
    assert c.post("/things/a", headers=bearer(other)).status_code == 500  # seen live: checked in the route
    tokens.revoke(record.id)  # behind the server's back, as another server sharing the store would
    refused = c.post("/things/a", headers=bearer(other))  # the route fails before it checks
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert c.post("/things/a", headers=bearer(admin)).status_code == 500
    assert c.post("/things", headers=bearer("lahar_nope_nope")).status_code == 401  # no route: checked first


def written_groups(built) -> float:
    return built.metrics.write_groups._value.get()


def test_credentials_that_cannot_be_valid_never_reach_the_writer(secured):
    """A request the server can refuse without the store's write lock is refused before the
    writer: no token, a malformed one, an id it has never seen stored, a secret that is not the
    token's, a token it has seen revoked. Otherwise anyone could take the database's write lock
    (and the service's) with requests they are not allowed to make."""
    built, c, admin = secured
    made = c.post(TOKENS, json={"user": "frank"}, headers=bearer(admin)).json()
    wrong_secret = made["token"].rsplit("_", 1)[0] + "_" + "x" * 43
    assert c.delete(f"{TOKENS}/{made['id']}", headers=bearer(admin)).status_code == 200
    assert c.post(JOBS, json=job("once"), headers=bearer(made["token"])).status_code == 401  # seen revoked now
    before = written_groups(built)
    for headers in [*BAD_CREDENTIALS.values(), {"Authorization": f"Bearer {wrong_secret}"}, bearer(made["token"])]:
        for method, path, body in [("POST", JOBS, job("new")), ("PUT", f"{JOBS}/new", job("new")), ("PATCH", f"{JOBS}/new", {"metadata": {"labels": {"a": "b"}}})]:
            answer = c.request(method, path, json=body, headers=headers)
            assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer", (headers, method)
    assert written_groups(built) == before
    assert c.post(JOBS, json=job("new"), headers=bearer(admin)).status_code == 201
    assert written_groups(built) == before + 1


def test_a_token_first_seen_by_a_write_is_checked_before_the_writer_and_then_in_it(tmp_path):
    """A server that has not yet read a token's record (made on another server) checks it the
    old way first; after that its writes check it in the write group."""
    first = build_server(SqliteStore(tmp_path / "lahar.db"), CONF, home=tmp_path / "one")
    second = build_server(SqliteStore(tmp_path / "lahar.db"), CONF, home=tmp_path / "two")
    admin = first.admin_token_path.read_text().strip()
    one, two = TestClient(first.app), TestClient(second.app)
    made = one.post(TOKENS, json={"user": "gina"}, headers=bearer(admin)).json()
    where: list[str] = []
    lookup = second.tokens.lookup

    def recording(token_id):
        where.append(threading.current_thread().name)
        return lookup(token_id)

    second.tokens.lookup = recording
    assert two.post(JOBS, json=job("first"), headers=bearer(made["token"])).status_code == 201
    assert two.post(JOBS, json=job("second"), headers=bearer(made["token"])).status_code == 201
    assert len(where) == 2 and where[0] != "lahar-request" and where[1] == "lahar-request"


def test_a_bad_token_is_refused_before_the_body_limits(secured):
    """As the Kubernetes API server does: who is asking is settled before what they sent."""
    _, c, admin = secured
    bodies = [
        (b"{}" + b" " * 2_000_000, "application/json", 413),
        (b"x", "text/plain", 415),
        (b"[" * 100 + b"]" * 100, "application/json", 400),
    ]
    for content, content_type, with_admin in bodies:
        assert c.post(JOBS, content=content, headers={"Content-Type": content_type, **bearer(admin)}).status_code == with_admin
        for token in ("lahar_nope_nope", revoked_token(c, admin)):  # never seen; seen live, then revoked
            refused = c.post(JOBS, content=content, headers={"Content-Type": content_type, **bearer(token)})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", (content_type, with_admin)
