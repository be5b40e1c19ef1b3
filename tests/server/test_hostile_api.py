"""Hostile and broken requests: every one gets a 4xx ``Status`` whose message names the field
(or the part of the request) at fault, never a 5xx or a traceback.

The situation: a script with a bug, or someone probing the API, sends bodies of the wrong shape,
too big, too deep, of the wrong type, values out of range, tokens with a string for a boolean.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore

Q = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
TOKENS = "/lahar/v1/tokens"
JSON = {"content-type": "application/json"}


def queue(name: str, **spec) -> dict:
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def job(**spec) -> dict:
    return {"kind": "Job", "metadata": {"name": "hj"}, "spec": {"tasks": [{"name": "t", "replicas": 1}], **spec}}


# (what, method, path, request arguments, status, words the message must hold)
CASES = [
    ("a list for a body", "post", Q, {"json": []}, 400, "body: must be a JSON object, not an array"),
    ("null for a body", "post", JOBS, {"content": b"null", "headers": JSON}, 400, "body: must be a JSON object, not null"),
    ("a number to replace", "put", f"{Q}/default", {"content": b"7", "headers": JSON}, 400, "body: must be a JSON object, not a number"),
    ("a string for a patch", "patch", f"{Q}/default", {"content": b'"x"', "headers": JSON}, 400, "body: must be a JSON object, not a string"),
    ("no body", "post", JOBS, {"content": b"", "headers": JSON}, 400, "body: required"),
    ("unreadable JSON", "post", Q, {"content": b"{not json", "headers": JSON}, 400, "body: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
    ("NaN in a body", "post", Q, {"content": b'{"kind": "Queue", "metadata": {"name": "hq"}, "spec": {"x": NaN}}', "headers": JSON}, 400, "body: not valid JSON: NaN is not a JSON number (JSON has no NaN or Infinity)"),
    ("Infinity in a body", "post", JOBS, {"content": b'{"spec": {"x": [-Infinity]}}', "headers": JSON}, 400, "body: not valid JSON: -Infinity is not a JSON number"),
    ("a number past the floats", "post", Q, {"content": b'{"kind": "Queue", "metadata": {"name": "hq"}, "spec": {"x": 1e999}}', "headers": JSON}, 400, "body: not valid JSON: 1e999 is too large a number"),
    ("YAML sent to the API", "post", Q, {"content": b"a: b", "headers": {"content-type": "application/yaml"}}, 415, "Content-Type: application/json"),
    ("JSON 100 levels deep", "post", Q, {"content": b"[" * 100 + b"]" * 100, "headers": JSON}, 400, "request body: JSON nested deeper than 64"),
    ("JSON 65 levels deep", "post", Q, {"content": b"[" * 65 + b"]" * 65, "headers": JSON}, 400, "request body: JSON nested deeper than 64"),
    ("JSON 64 levels deep is read", "post", Q, {"content": b"[" * 64 + b"]" * 64, "headers": JSON}, 400, "body: must be a JSON object, not an array"),
    ("brackets in strings do not nest", "post", JOBS, {"json": {**job(queue="nope"), "metadata": {"name": "hj", "annotations": {"a": "[{" * 100}}}}, 422, "spec.queue"),
    ("2 MiB body", "post", Q, {"content": b" " * (2 << 20), "headers": JSON}, 413, "request body"),
    ("metadata a string", "post", Q, {"json": {"kind": "Queue", "metadata": "q"}}, 422, "metadata: Invalid value"),
    ("bad queue name", "post", Q, {"json": queue("Bad_Name")}, 422, "metadata.name"),
    ("weight 0", "post", Q, {"json": queue("hq", weight=0)}, 422, "spec.weight: Invalid value: 0"),
    ("weight 10^30", "post", Q, {"json": queue("hq", weight=10**30)}, 422, "spec.weight"),
    ("weight a string", "post", Q, {"json": queue("hq", weight="x")}, 422, "spec.weight"),
    ("quantity not a quantity", "post", Q, {"json": queue("hq", capability={"cpu": "lots"})}, 422, "spec.capability.cpu"),
    ("5000 annotations", "post", Q, {"json": {"kind": "Queue", "metadata": {"name": "hq", "annotations": {f"k{i}": "v" for i in range(5000)}}}}, 422, "metadata.annotations"),
    ("a 100 kB label", "post", Q, {"json": {"kind": "Queue", "metadata": {"name": "hq", "labels": {"a": "x" * 100_000}}}}, 422, "metadata.labels[a]"),
    ("another kind at the path", "post", Q, {"json": {"kind": "Job", "metadata": {"name": "hq"}}}, 400, "kind"),
    ("replicas a string", "post", JOBS, {"json": job(tasks=[{"name": "t", "replicas": "x"}])}, 422, "spec.tasks[0].replicas"),
    ("unknown queue", "post", JOBS, {"json": job(queue="nope")}, 422, "spec.queue"),
    ("3000 tasks", "post", JOBS, {"json": job(tasks=[{"name": f"t{i}", "replicas": 1} for i in range(3000)])}, 422, "spec.tasks"),
    ("name differs from the path", "put", f"{Q}/default", {"json": queue("other")}, 400, "metadata.name"),
    ("negative resourceVersion", "get", f"{Q}?resourceVersion=-1", {}, 400, "resourceVersion"),
    ("bad labelSelector", "get", f"{Q}?labelSelector=abc", {}, 400, "labelSelector"),
    ("watch=maybe", "get", f"{Q}?watch=maybe", {}, 400, "watch"),
    ("unknown queue action", "post", f"{Q}/default/explode", {}, 400, "action"),
    ("a list to make a token", "post", TOKENS, {"json": []}, 400, "body: must be a JSON object, not an array"),
    ("no body for a dry run", "post", "/lahar/v1/namespaces/default/jobs/dry-run", {"content": b"", "headers": JSON}, 400, "body: required"),
    ("token user with a space", "post", TOKENS, {"json": {"user": "a b"}}, 400, "user"),
    ("token user a number", "post", TOKENS, {"json": {"user": 5}}, 400, "user"),
    ("token groups a number", "post", TOKENS, {"json": {"user": "ok", "groups": 5}}, 400, "groups"),
    ("token groups holding objects", "post", TOKENS, {"json": {"user": "ok", "groups": [{"a": 1}]}}, 400, "groups"),
    ("token admin the string false", "post", TOKENS, {"json": {"user": "ok", "admin": "false"}}, 400, "admin"),
    ("revoke an unknown token", "delete", f"{TOKENS}/nope", {}, 404, "Token"),
    ("no token", "get", Q, {"headers": {"Authorization": ""}}, 401, "Authorization: Bearer"),
    ("a malformed token", "get", Q, {"headers": {"Authorization": "Bearer x"}}, 401, "Authorization: Bearer"),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    built = build_server(MemoryStore(), load_config(default_config_text()), home=tmp_path_factory.mktemp("home"))
    admin = built.admin_token_path.read_text().strip()
    return TestClient(built.app, headers={"Authorization": f"Bearer {admin}"}, raise_server_exceptions=False)


@pytest.mark.parametrize("what,method,path,kwargs,status,words", CASES, ids=[c[0] for c in CASES])
def test_every_refusal_names_what_is_wrong(client, what, method, path, kwargs, status, words):
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status, f"{what}: {response.status_code} {response.text[:300]}"
    body = response.json()
    assert body["kind"] == "Status" and body["code"] == status
    assert words in body["message"], f"{what}: {body['message'][:300]}"
    assert "Traceback" not in body["message"]
    sent = len(kwargs.get("content") or b"") or len(str(kwargs.get("json", "")))
    assert len(response.content) < 4096 + 3 * sent  # a refusal may quote the value, not amplify it


def test_a_string_false_never_makes_an_admin(client):
    assert client.post(TOKENS, json={"user": "sneaky", "admin": "false"}).status_code == 400
    assert not [t for t in client.get(TOKENS).json()["items"] if t["user"] == "sneaky"]
    made = client.post(TOKENS, json={"user": "plain", "groups": "ml, vision", "admin": False}).json()
    assert made["admin"] is False and made["groups"] == ["ml", "vision"]
