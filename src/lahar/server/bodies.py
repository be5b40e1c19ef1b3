"""Request bodies that must be one JSON object: read, parsed and refused alike on every route.

The middleware in front (``server.limits``) has already checked the size, the content type
and the nesting depth when a route reads its body here.
"""

from __future__ import annotations

import json

from fastapi import Request

from lahar.errors import BadRequest

__all__ = ["JSON_OBJECT_BODY", "json_object"]

# A JSON object request body as the OpenAPI document describes it, for routes that read it
# with ``json_object`` instead of declaring a ``Body`` parameter (``openapi_extra``).
JSON_OBJECT_BODY = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True, "title": "Body"}}}}
}
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


async def json_object(request: Request) -> dict:
    """The request's body: one JSON object, or a ``BadRequest`` naming what it is instead.

    Every route that takes a JSON object reads it here (the other routes as a dependency,
    ``Depends(json_object)``), so a bad body gets the same answer everywhere. The hot write
    routes call it themselves rather than declare a parameter: FastAPI's parsing, validation
    and dependency solving cost about 0.1 ms of every create."""
    raw = await request.body()
    if not raw.strip():
        raise BadRequest("body: required: send a JSON object")
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body: must be a JSON object, not {_JSON_TYPES.get(type(value), 'another value')}")
    return value
