"""The order the web application tries its routes in: the busiest resources first (each route
tried costs a request FastAPI's matching), without changing what any path answers, and with
the OpenAPI document still listing the resources in their own order."""

from __future__ import annotations

import pytest
from starlette.routing import Match

from lahar.server.app import RESOURCES, ROUTE_ORDER

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"


def _tried_before(app, method: str, path: str) -> int:
    """How many routes a request is matched against before the one that answers it."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": [], "query_string": b""}
    for tried, route in enumerate(app.router.routes):
        if route.matches(scope)[0] == Match.FULL:
            return tried
    raise AssertionError(f"no route answers {method} {path}")


def _api_routes(app) -> list:
    return [route for route in app.router.routes if getattr(route, "path", "").startswith(("/api/", "/apis/", "/lahar/"))]


def test_every_resource_has_its_place_in_the_order():
    assert sorted(ROUTE_ORDER) == sorted(resource.kind for resource in RESOURCES)


def test_the_vcjob_and_pod_routes_are_tried_before_every_other_api_route(server):
    routes = _api_routes(server.app)
    kinds = [next(r.kind for r in RESOURCES if route.path.startswith(f"{r.prefix}/") and f"/{r.plural}" in route.path) for route in routes[:13]]
    assert kinds == ["Job"] * 7 + ["Pod"] * 6, kinds
    first_api_route = server.app.router.routes.index(routes[0])
    assert _tried_before(server.app, "POST", JOBS) == first_api_route + 1  # after the list of jobs
    assert _tried_before(server.app, "GET", PODS) < _tried_before(server.app, "GET", "/apis/scheduling.volcano.sh/v1beta1/queues")


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda resource: resource.kind)
def test_each_resource_still_answers_its_own_paths(server, resource):
    base = f"{resource.prefix}/namespaces/default/{resource.plural}" if resource.namespaced else f"{resource.prefix}/{resource.plural}"
    listing = server.client.get(base)
    assert listing.status_code == 200 and listing.json()["kind"] == f"{resource.kind}List"
    missing = server.client.get(f"{base}/no-such-object")
    assert missing.status_code == 404, missing.text


def test_the_openapi_document_lists_the_resources_in_their_own_order(server):
    tags = [tag["name"] for tag in server.client.get("/openapi.json").json()["tags"]]
    assert tags[: len(RESOURCES)] == [resource.kind for resource in RESOURCES]
    assert "Lahar" in tags
