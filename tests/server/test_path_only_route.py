"""``PathOnlyRoute``: the write routes' endpoints get the request and the path's parameters as
the path matched them (percent-escapes decoded, nothing checked or converted), are documented
as FastAPI documents any route, and their errors reach the application's handlers."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from lahar.errors import Conflict
from lahar.server.bodies import JsonAnswer, PathOnlyRoute, json_object


def _app() -> FastAPI:
    app = FastAPI()

    @app.exception_handler(Conflict)
    async def _conflict(request: Request, exc: Conflict):
        return JsonAnswer(exc.to_status(), status_code=exc.http_status)

    async def echo(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
        body = await json_object(request)
        if body.get("refuse"):
            raise Conflict(f"{name} refused")
        return JsonAnswer({"namespace": namespace, "name": name, "body": body}, status_code=201)

    app.router.add_api_route("/things/{name}", echo, methods=["POST"], route_class_override=PathOnlyRoute)
    app.router.add_api_route("/namespaces/{namespace}/things/{name}", echo, methods=["POST"], route_class_override=PathOnlyRoute)
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


def test_an_endpoint_that_is_not_a_coroutine_is_refused():
    app = FastAPI()

    def blocking(request: Request) -> JsonAnswer:
        return JsonAnswer({})

    with pytest.raises(TypeError, match="must be a coroutine function"):
        app.router.add_api_route("/x", blocking, methods=["POST"], route_class_override=PathOnlyRoute)
