"""JSON in and out: request bodies that must be one JSON object (read, parsed and refused alike
on every route), and the answers of the object routes.

The middleware in front (``server.limits``) has already checked the size, the content type
and the nesting depth when a route reads its body here.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from lahar.errors import BadRequest
from lahar.store.base import json_bytes

__all__ = ["JSON_OBJECT_BODY", "JsonAnswer", "json_object"]

# A JSON object request body as the OpenAPI document describes it, for routes that read it
# with ``json_object`` instead of declaring a ``Body`` parameter (``openapi_extra``).
JSON_OBJECT_BODY = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True, "title": "Body"}}}}
}
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def _not_a_number(name: str) -> None:
    """Python's reader takes ``NaN`` and ``Infinity`` for numbers; JSON has neither (and a store
    could keep them only as null)."""
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite(text: str) -> float:
    """A number too large for a float (``1e999``) reads as infinity, which JSON cannot hold."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is too large a number (it would be infinity)")
    return value


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
        value = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body: must be a JSON object, not {_JSON_TYPES.get(type(value), 'another value')}")
    return value


class JsonAnswer(Response):
    """An answer of JSON data as the store gives it back (plain dicts, lists, strings, numbers):
    written at once by ``json_bytes``. A route that returns data instead has FastAPI walk all of
    it first (``jsonable_encoder``) and the standard library write it: a list of 10,000 pods
    took about a second that way."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json_bytes(content)
