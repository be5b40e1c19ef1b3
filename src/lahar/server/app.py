"""The HTTP API: Kubernetes-style paths over ``ApiService``.

Volcano users' tools speak these paths already::

    /apis/scheduling.volcano.sh/v1beta1/queues[/{name}]
    /apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups[/{name}]
    /apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs[/{name}]
    /apis/bus.volcano.sh/v1alpha1/namespaces/{ns}/commands[/{name}]
    /apis/scheduling.k8s.io/v1/priorityclasses[/{name}]
    /api/v1/nodes[/{name}]   /api/v1/namespaces/{ns}/pods[/{name}]

A list takes ``?watch=true&resourceVersion=N`` and then streams one JSON event per line
(``{"type": "ADDED", "object": {...}}``) as Kubernetes does. Errors are Kubernetes ``Status``
objects: 400 unreadable, 404 not found, 409 already exists or stale ``resourceVersion``,
422 with every field error. Lahar adds queue actions
(``POST .../queues/{name}/open|close|suspend|resume``), why-pending
(``GET /lahar/v1/namespaces/{ns}/jobs/{name}/why``), the queue tree, ``/healthz`` and
``/metrics``.
"""

from __future__ import annotations

import inspect
import json
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from lahar import __version__
from lahar.errors import BadRequest, LaharError, NotFound
from lahar.scheduler.cache import format_time
from lahar.scheduler.reasons import quantities_text
from lahar.server import events, forecast_routes, openapi, usage_routes
from lahar.server.auth import AuthMiddleware, as_caller
from lahar.server.bodies import JSON_OBJECT_BODY, JsonAnswer, PathOnlyRoute, json_object
from lahar.server.limits import LimitsMiddleware
from lahar.server.service import EVENT_KIND, ApiService
from lahar.server.write_groups import WriteGroups, in_worker
from lahar.store.base import json_bytes, watch_through

T = TypeVar("T")

__all__ = ["create_app", "RESOURCES", "Resource"]


@dataclass(frozen=True)
class Resource:
    kind: str
    group_version: str
    plural: str
    namespaced: bool

    @property
    def prefix(self) -> str:
        return "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"


RESOURCES = (
    Resource("Queue", "scheduling.volcano.sh/v1beta1", "queues", False),
    Resource("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups", True),
    Resource("Job", "batch.volcano.sh/v1alpha1", "jobs", True),
    Resource("Command", "bus.volcano.sh/v1alpha1", "commands", True),
    Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False),
    Resource("Node", "v1", "nodes", False),
    Resource("Pod", "v1", "pods", True),
    Resource(EVENT_KIND, "lahar.dev/v1alpha1", "events", False),
)
# A request is matched against the routes in the order they were added, at about 11,000
# instructions a route tried (FastAPI's matching, measured with callgrind), so the busiest
# resources' routes are added first. A vcjob's create came after 18 routes; now after 5, which
# took 8.8% off its instructions (``bench/request.py`` under callgrind). The resources' paths do not overlap, so
# no path answers differently. The OpenAPI document still lists them in RESOURCES' order.
ROUTE_ORDER = ("Job", "Pod", "PodGroup", "Queue", "Node", "Command", "PriorityClass", EVENT_KIND)
QUEUE_ACTIONS = {"open": "OpenQueue", "close": "CloseQueue", "suspend": "SuspendQueue", "resume": "ResumeQueue"}


def create_app(
    service: ApiService,
    loop: Any = None,
    metrics: Callable[[], str] | None = None,
    tokens: Any = None,
    on_write_group: Callable[[int], None] | None = None,
    on_write_held: Callable[[float], None] | None = None,
) -> FastAPI:
    """The application; with ``tokens`` (a ``TokenStore``) every request needs a bearer token.
    ``on_write_group(writes)`` is told of each group of write requests run together, and
    ``on_write_held(seconds)`` of how long the group held the service's lock."""
    app = FastAPI(title="Lahar", version=__version__, description="Queue-based batch scheduling for shared clusters.")
    app.state.service, app.state.loop = service, loop
    app.add_middleware(LimitsMiddleware)
    if tokens is not None:  # added last, runs first: who asks is settled before what they sent
        app.add_middleware(AuthMiddleware, tokens=tokens, routes=app.router.routes)  # the list, filled in below
        _add_token_routes(app, tokens)

    @app.exception_handler(LaharError)
    async def _lahar_error(request: Request, exc: LaharError) -> JSONResponse:
        return JSONResponse(exc.to_status(), status_code=exc.http_status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = "body: not valid JSON" if "parsing the body" in str(exc.detail) else str(exc.detail)
        reasons = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed"}
        status = BadRequest(message).to_status() | {"code": exc.status_code, "reason": reasons.get(exc.status_code, "Failure")}
        return JSONResponse(status, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return JSONResponse(BadRequest(f"bad request: {problems}").to_status(), status_code=400)

    writer = WriteGroups(service, on_group=on_write_group, on_held=on_write_held)
    for resource in sorted(RESOURCES, key=lambda resource: ROUTE_ORDER.index(resource.kind)):
        _add_resource_routes(app, service, resource, writer)
    _add_lahar_routes(app, service, loop, metrics)
    usage_routes.install(app, service, loop)
    events.install(app, service)
    forecast_routes.install(app, service, loop)
    openapi.install(app, first_tags=[resource.kind for resource in RESOURCES])
    return app


def _list_document(resource: Resource, items: list[dict], version: int) -> dict:
    return {
        "apiVersion": resource.group_version,
        "kind": f"{resource.kind}List",
        "metadata": {"resourceVersion": str(version)},
        "items": items,
    }


def _watch_stream(service: ApiService, resource: Resource, since: int, namespace: str | None, timeout: float, who: Any = None) -> Iterator[bytes]:
    """Changes after ``since``; a non-admin ``who`` sees only what a list would show them."""
    deadline = time.monotonic() + timeout
    version = since
    filtered = who is not None and not who.admin
    while time.monotonic() < deadline:
        events, seen = watch_through(service.store, version, {resource.kind}, timeout=min(1.0, max(0.0, deadline - time.monotonic())))
        if filtered and events:
            service.view()
        for event in events:
            if namespace and event.object.get("metadata", {}).get("namespace") != namespace:
                continue
            if filtered and not service.access.may_read(who, event.object):
                continue
            yield json_bytes({"type": event.type, "object": event.object}) + b"\n"
        version = seen  # everything of the kind up to here was read: not read again


def _add_resource_routes(app: FastAPI, service: ApiService, resource: Resource, writer: WriteGroups) -> None:
    tag = [resource.kind]
    base = f"{resource.prefix}/namespaces/{{namespace}}/{resource.plural}" if resource.namespaced else f"{resource.prefix}/{resource.plural}"

    def key(namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if resource.namespaced else name

    def list_objects(
        request: Request,
        namespace: str | None = None,
        watch: bool = Query(False, description="Stream changes after resourceVersion, one JSON event per line."),
        resourceVersion: int = Query(0, ge=0),
        timeoutSeconds: float = Query(30.0, ge=0, le=3600),
        labelSelector: str | None = Query(None, description="k=v[,k=v]"),
    ):
        if watch:
            stream = _watch_stream(service, resource, resourceVersion, namespace, timeoutSeconds, _who(request))
            return StreamingResponse(stream, media_type="application/x-ndjson")
        labels = _labels(labelSelector)
        items, version = service.list(resource.kind, namespace, labels, who=_who(request))
        return JsonAnswer(_list_document(resource, items, version))

    async def create_object(request: Request, namespace: str | None = None) -> JsonAnswer:
        body = await json_object(request)
        body.setdefault("kind", resource.kind)
        body.setdefault("apiVersion", resource.group_version)
        if body.get("kind") != resource.kind:
            raise BadRequest(f'kind "{body.get("kind")}" cannot be created at {resource.plural}')
        return JsonAnswer(await _in_group(writer, request, service.create, body, namespace), status_code=201)

    def get_object(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
        return JsonAnswer(service.get(resource.kind, key(namespace, name), who=_who(request)))

    async def replace_object(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
        body = await json_object(request)
        body.setdefault("kind", resource.kind)
        body.setdefault("apiVersion", resource.group_version)
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):  # as a patch answers one
            raise BadRequest("metadata: must be an object")
        if meta.get("name", name) != name:
            raise BadRequest(f'metadata.name "{meta.get("name")}" does not match the path\'s name "{name}"')
        meta["name"] = name
        return JsonAnswer(await _in_group(writer, request, service.update, body, namespace))

    async def patch_object(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
        """JSON merge patch (RFC 7386): only the fields sent change; null removes one. Without
        metadata.resourceVersion in the patch it applies to the object as stored now."""
        body = await json_object(request)
        return JsonAnswer(await _in_group(writer, request, service.patch, resource.kind, key(namespace, name), body))

    def delete_object(request: Request, name: str, namespace: str | None = None) -> JsonAnswer:
        return JsonAnswer(service.delete(resource.kind, key(namespace, name), who=_who(request)))

    # The routes answer with JsonAnswer; the documented answer is still a JSON object (dict)
    app.get(base, tags=tag, summary=f"List or watch {resource.plural}")(list_objects)
    # the writes read their own body and take only the path's parameters (PathOnlyRoute)
    writes = {"openapi_extra": JSON_OBJECT_BODY, "route_class_override": PathOnlyRoute, "tags": tag}
    if not resource.namespaced:
        create_object, replace_object, patch_object = map(_without_namespace, (create_object, replace_object, patch_object))
    app.router.add_api_route(base, create_object, methods=["POST"], summary=f"Create a {resource.kind}", status_code=201, **writes)
    app.get(f"{base}/{{name}}", tags=tag, summary=f"Read a {resource.kind}", response_model=dict)(get_object)
    app.router.add_api_route(f"{base}/{{name}}", replace_object, methods=["PUT"], summary=f"Replace a {resource.kind}", response_model=dict, **writes)
    app.router.add_api_route(f"{base}/{{name}}", patch_object, methods=["PATCH"], summary=f"Change fields of a {resource.kind} (JSON merge patch)", response_model=dict, **writes)
    app.delete(f"{base}/{{name}}", tags=tag, summary=f"Delete a {resource.kind}", response_model=dict)(delete_object)
    if resource.namespaced:
        def list_all(request: Request, labelSelector: str | None = Query(None)) -> JsonAnswer:
            return JsonAnswer(_list_document(resource, *service.list(resource.kind, None, _labels(labelSelector), who=_who(request))))

        app.get(f"{resource.prefix}/{resource.plural}", tags=tag, summary=f"List {resource.plural} in all namespaces", response_model=dict)(list_all)


def _without_namespace(endpoint: Callable) -> Callable:
    """``endpoint`` as the route of a kind without namespaces shows it to FastAPI: without its
    ``namespace`` parameter (which keeps its default, None), so that it is neither documented
    nor expected of the request."""
    signature = inspect.signature(endpoint)
    endpoint.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "namespace"])  # type: ignore[attr-defined]
    return endpoint


def _who(request: Request):
    return getattr(request.state, "principal", None)


async def _in_group(writer: WriteGroups, request: Request, call: Callable[..., T], *args: Any) -> T:
    """``call(*args, who=...)`` in the writer's next group (``in_worker``), as the caller: a
    token not yet checked (``Credentials``) is checked there, first, in the group's batch."""
    return await in_worker(writer, _as_caller_call, _who(request), call, *args)


def _as_caller_call(who: Any, call: Callable[..., T], *args: Any) -> T:
    return call(*args, who=as_caller(who))


def _labels(selector: str | None) -> dict[str, str] | None:
    if not selector:
        return None
    labels = {}
    for part in selector.split(","):
        if "=" not in part:
            raise BadRequest(f'labelSelector: "{part}" is not k=v')
        k, v = part.split("=", 1)
        labels[k.strip()] = v.strip()
    return labels


def _add_lahar_routes(app: FastAPI, service: ApiService, loop: Any, metrics: Callable[[], str] | None) -> None:
    @app.get("/healthz", tags=["Lahar"], summary="Liveness: 200 when the server answers")
    def healthz() -> dict:
        return {"status": "ok", "version": __version__}

    @app.post("/apis/scheduling.volcano.sh/v1beta1/queues/{name}/{action}", tags=["Queue"], summary="open, close, suspend or resume a queue")
    def queue_action(request: Request, name: str, action: str) -> dict:
        if action not in QUEUE_ACTIONS:
            raise BadRequest(f'action: Unsupported value: "{action}": supported values: {", ".join(QUEUE_ACTIONS)}')
        events = service.queue_action(name, QUEUE_ACTIONS[action], "api", who=_who(request))
        return {"queue": service.get("Queue", name), "events": [e.to_json() for e in events]}

    @app.post("/queues/{name}/{action}", tags=["Queue"], summary="Short form of the queue action")
    def queue_action_short(request: Request, name: str, action: str) -> dict:
        return queue_action(request, name, action)

    @app.get("/lahar/v1/namespaces/{namespace}/jobs/{name}/why", tags=["Lahar"], summary="Why a job waits")
    def why(request: Request, namespace: str, name: str) -> dict:
        service.get("PodGroup" if service.exists("PodGroup", f"{namespace}/{name}") else "Job", f"{namespace}/{name}", who=_who(request))
        return _why(service, namespace, name, loop)

    @app.get("/lahar/v1/queues/tree", tags=["Lahar"], summary="The queue hierarchy with shares")
    def tree() -> dict:
        return {"queues": queue_shares(service, loop)}

    @app.get("/metrics", tags=["Lahar"], summary="Prometheus metrics", response_class=PlainTextResponse)
    def metrics_text() -> str:
        return metrics() if metrics else ""

    @app.get("/lahar/v1/whoami", tags=["Lahar"], summary="The caller as the server sees it")
    def whoami(request: Request) -> dict:
        principal = getattr(request.state, "principal", None)
        if principal is None:
            return {"user": "anonymous", "groups": [], "admin": True, "authentication": "off"}
        return {"user": principal.user, "groups": list(principal.groups), "admin": principal.admin, "authentication": "on"}

    ui = Path(__file__).parent / "ui"
    app.mount("/ui", StaticFiles(directory=ui, html=True), name="ui")


def _add_token_routes(app: FastAPI, tokens: Any) -> None:
    from lahar.errors import Forbidden

    def admin_only(request: Request) -> None:
        who = _who(request)
        if who is not None and not who.admin:
            raise Forbidden(f"{who.describe()} may not manage tokens: only admins may")

    @app.post("/lahar/v1/tokens", tags=["Lahar"], summary="Create a token (admins); the token is shown only in this answer", status_code=201, openapi_extra=JSON_OBJECT_BODY)
    def create_token(request: Request, body: dict = Depends(json_object)) -> dict:
        from lahar.server.auth import token_request

        admin_only(request)
        token, record = tokens.create(*token_request(body))
        return {"token": token, "id": record.id, "user": record.user, "groups": record.groups, "admin": record.admin}

    @app.get("/lahar/v1/tokens", tags=["Lahar"], summary="List tokens (admins; secrets are never shown)")
    def list_tokens(request: Request) -> dict:
        admin_only(request)
        return {"items": tokens.list()}

    @app.delete("/lahar/v1/tokens/{token_id}", tags=["Lahar"], summary="Revoke a token (admins)")
    def revoke_token(request: Request, token_id: str) -> dict:
        admin_only(request)
        record = tokens.revoke(token_id)
        return {"id": record.id, "user": record.user, "revoked": record.revoked}


def _why(service: ApiService, namespace: str, name: str, loop: Any = None) -> dict:
    from lahar.server.loop import REASON_ANNOTATION

    key = f"{namespace}/{name}"
    try:
        group = service.get("PodGroup", key)
    except NotFound:
        service.get("Job", key)  # raises NotFound for an unknown job
        return {"job": key, "phase": "Pending", "reason": {"kind": "not-yet-seen", "message": "the job was accepted; the controller has not created its podgroup yet"}}
    text = group.get("metadata", {}).get("annotations", {}).get(REASON_ANNOTATION)
    return {
        "job": key,
        "queue": group.get("spec", {}).get("queue", "default"),
        "phase": group.get("status", {}).get("phase", "Pending"),
        "reason": queue_figures(_stored_reason(text), loop) if text else None,
        "conditions": group.get("status", {}).get("conditions", []),
    }


def _stored_reason(text: str) -> dict:
    """The reason annotation as stored: the scheduler writes a JSON object, but anyone may write
    the annotation; what is not a JSON object is shown as its text."""
    try:
        reason = json.loads(text)
    except ValueError:
        reason = None
    return reason if isinstance(reason, dict) else {"kind": "unreadable", "message": text}


def queue_figures(reason: dict, loop: Any) -> dict:
    """A ``deserved`` or ``capability`` reason with its queue's figures as the last cycle this
    server ran found them (what the queue holds, what it deserves, and that cycle's time: on a
    server that is not the leader, the last cycle it ran may be long ago): the stored reason
    leaves them out, as they move with every task the queue starts or ends and a changed reason
    is written again for every waiting job. Any other reason as it is."""
    if reason.get("kind") not in ("deserved", "capability") or loop is None or loop.last is None:
        return reason
    queue = reason.get("queue")
    attr = loop.last.session.queue_attrs.get(queue) if isinstance(queue, str) else None
    if attr is None:
        return reason
    figures = {"allocated": quantities_text(attr.allocated), "deserved": quantities_text(attr.deserved)}
    return {**reason, **figures, "as_of": format_time(loop.last.session.now)}  # a follower's may be old


def queue_shares(service: ApiService, loop: Any) -> list[dict]:
    """Every queue with its parent, state, weight, deserved, allocated and capability (JSON units)."""
    from lahar.resources import Resource as Vector

    attrs = loop.last.session.queue_attrs if loop is not None and loop.last is not None else {}
    out = []
    for item in service.list("Queue")[0]:
        spec, status, name = item.get("spec", {}), item.get("status", {}), item["metadata"]["name"]
        attr = attrs.get(name)
        out.append(
            {
                "name": name,
                "parent": spec.get("parent") if name != "root" else None,
                "state": status.get("state", "Open"),
                "weight": spec.get("weight", 1),
                "deserved": {k: v for k, v in (attr.deserved.to_json() if attr else {}).items() if k != "pods"},
                "allocated": {k: v for k, v in Vector.from_list(status.get("allocated") or {}).to_json().items() if k != "pods"},
                "capability": {k: v for k, v in Vector.from_list(spec.get("capability") or {}).to_json().items() if k != "pods"},
                "counts": {k: status.get(k, 0) for k in ("pending", "inqueue", "running", "unknown", "completed")},
            }
        )
    return out
