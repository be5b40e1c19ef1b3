"""The OpenAPI document as clients meet the server: every error is a Kubernetes ``Status``.

FastAPI documents only 200 and its own validation error; Lahar answers errors with Status JSON
(400 bad request, 401/403 auth, 404, 409 conflict, 413/415 limits, 422 admission), so the
document says so for every operation. Schema fuzzers then check answers against the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

STATUS_SCHEMA: dict[str, Any] = {
    "title": "Status",
    "type": "object",
    "description": "Kubernetes-style error: message names the field and the rule; details.causes lists field errors.",
    "properties": {
        "kind": {"type": "string", "enum": ["Status"]},
        "apiVersion": {"type": "string"},
        "status": {"type": "string"},
        "message": {"type": "string"},
        "reason": {"type": "string"},
        "code": {"type": "integer"},
        "details": {"type": "object"},
    },
    "required": ["kind", "message", "code"],
}
ERRORS = {
    "400": "Bad request: malformed parameters or body",
    "401": "No valid bearer token",
    "403": "Forbidden: the token's user is not admitted by the ACL named in the message",
    "404": "Not found",
    "409": "Conflict: stale resourceVersion or already exists",
    "413": "Request body too large",
    "415": "Unsupported content type (JSON only)",
    "422": "Invalid: admission refused the object; every field error is listed",
}


def install(app: FastAPI, first_tags: Sequence[str] = ()) -> None:
    """Replace ``app.openapi`` with one that documents Lahar's error answers on every operation.
    The document lists its tags (the groups of operations a reader of ``/docs`` sees) with
    ``first_tags`` first, then the others in the order of the routes."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        tags = list(dict.fromkeys([*first_tags, *(tag for route in app.routes for tag in getattr(route, "tags", None) or ())]))
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes, tags=[{"name": str(getattr(tag, "value", tag))} for tag in tags])
        doc.setdefault("components", {}).setdefault("schemas", {})["Status"] = STATUS_SCHEMA
        ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}
        for operations in doc.get("paths", {}).values():
            for operation in operations.values():
                if any(p.get("name") == "watch" for p in operation.get("parameters", [])):
                    ok = operation["responses"]["200"].setdefault("content", {})
                    ok["application/x-ndjson"] = {"schema": {"type": "string", "description": "one watch event per line"}}
                responses = operation.setdefault("responses", {})
                for code, text in ERRORS.items():
                    responses[code] = {"description": text, **ref}
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
