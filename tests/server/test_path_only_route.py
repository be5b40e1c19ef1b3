"""``PathOnlyRoute``: the write routes' endpoints get the request and the path's parameters as
the path matched them (percent-escapes decoded, nothing checked or converted), are documented
as FastAPI documents any route, and their errors reach the application's handlers. An endpoint
that declares anything the route would not read is refused when the route is made."""

from __future__ import annotations

import pytest
from fastapi import Depends, FastAPI, Query, Request
from fastapi.testclient import TestClient

from lahar.errors import Conflict
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.bodies import JsonAnswer, PathOnlyRoute, json_object
from lahar.server.main import build_server
from lahar.store import MemoryStore


async def _echo(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
    body = await json_object(request)
    if body.get("refuse"):
        raise Conflict(f"{name} refused")
    return JsonAnswer({"namespace": namespace, "name": name, "body": body}, status_code=201)


async def _echo_cluster(request: Request, name: str) -> JsonAnswer:
    return await _echo(request, name)


def _app() -> FastAPI:
    app = FastAPI()

    @app.exception_handler(Conflict)
    async def _conflict(request: Request, exc: Conflict):
        return JsonAnswer(exc.to_status(), status_code=exc.http_status)

    app.router.add_api_route("/things/{name}", _echo_cluster, methods=["POST"], route_class_override=PathOnlyRoute)
    app.router.add_api_route("/namespaces/{namespace}/things/{name}", _echo, methods=["POST"], route_class_override=PathOnlyRoute)
    return app


def test_the_endpoint_gets_the_path_parameters_and_reads_its_body():
    client = TestClient(_app())
    answer = client.post("/namespaces/team%2Da/things/x%20y", json={"a": 1})
    assert answer.status_code == 201
    assert answer.json() == {"namespace": "team-a", "name": "x y", "body": {"a": 1}}
    assert client.post("/things/t", json={}).json() == {"namespace": None, "name": "t", "body": {}}


def test_errors_reach_the_applications_handlers_and_the_route_is_documented():
    app = _app()
    answer = TestClient(app).post("/things/t", json={"refuse": True})
    assert answer.status_code == 409 and answer.json()["message"] == "t refused"
    operation = app.openapi()["paths"]["/namespaces/{namespace}/things/{name}"]["post"]
    assert {p["name"] for p in operation["parameters"]} == {"namespace", "name"}


def _dry_run_default() -> bool:
    return False


async def _with_query(request: Request, name: str, dryRun: bool = Query(False)) -> JsonAnswer:
    return JsonAnswer({})


async def _with_a_dependency(request: Request, name: str, dry: bool = Depends(_dry_run_default)) -> JsonAnswer:
    return JsonAnswer({})


@pytest.mark.parametrize(
    "path,endpoint,words",
    [
        ("/things/{name}", _with_query, "not dryRun"),
        ("/things/{name}", _with_a_dependency, "a dependency"),
        ("/things", _echo_cluster, "not name"),  # a parameter its path does not name: a query parameter
    ],
)
def test_an_endpoint_declaring_what_the_route_would_not_read_is_refused(path, endpoint, words):
    with pytest.raises(TypeError, match=words):
        FastAPI().router.add_api_route(path, endpoint, methods=["POST"], route_class_override=PathOnlyRoute)


def test_an_endpoint_that_is_not_a_coroutine_is_refused():
    def blocking(request: Request) -> JsonAnswer:
        return JsonAnswer({})

    with pytest.raises(TypeError, match="must be a coroutine function"):
        FastAPI().router.add_api_route("/x", blocking, methods=["POST"], route_class_override=PathOnlyRoute)


def test_the_write_routes_of_kinds_without_namespaces_document_no_namespace(tmp_path):
    server = build_server(MemoryStore(), load_config(default_config_text()), auth=False, home=tmp_path)
    paths = server.app.openapi()["paths"]
    writes = [
        (paths["/apis/scheduling.volcano.sh/v1beta1/queues"], "post"),
        (paths["/apis/scheduling.volcano.sh/v1beta1/queues/{name}"], "put"),
        (paths["/apis/scheduling.volcano.sh/v1beta1/queues/{name}"], "patch"),
        (paths["/api/v1/nodes"], "post"),
    ]
    for item, method in writes:
        assert "namespace" not in {p["name"] for p in item[method].get("parameters", [])}, (item, method)
    namespaced = paths["/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs"]["post"]
    assert [(p["name"], p["in"]) for p in namespaced["parameters"]] == [("namespace", "path")]
    client = TestClient(server.app)
    made = client.post("/apis/scheduling.volcano.sh/v1beta1/queues?namespace=zz", json={"kind": "Queue", "metadata": {"name": "q1"}})
    assert made.status_code == 201 and "namespace" not in made.json()["metadata"]
