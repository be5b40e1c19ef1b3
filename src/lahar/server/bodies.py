"""JSON in and out: request bodies that must be one JSON object (read, parsed and refused alike
on every route), and the answers of the object routes; and the route class that calls the
write routes without FastAPI's parameter solving (their worker: ``server.write_groups``).

The middleware in front (``server.limits``) has already checked the size, the content type
and the nesting depth when a route reads its body here.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from typing import Any, Callable

from fastapi import Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from lahar.errors import BadRequest
from lahar.store.base import from_json, json_bytes

__all__ = ["JSON_OBJECT_BODY", "JsonAnswer", "PathOnlyRoute", "json_object"]


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


# What reads a body that orjson refused or might misread: the standard library, refusing what
# JSON cannot hold (orjson refuses NaN, Infinity and 1e999 itself: they come here and are
# named), so every refusal's message is the standard library's
_strict_loads = functools.partial(json.loads, parse_constant=_not_a_number, parse_float=_finite)


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
        value = from_json(raw, _strict_loads)
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


class PathOnlyRoute(APIRoute):
    """A route whose endpoint is a coroutine taking the request and the path's parameters (all
    text, as the path matched them) and reading anything else itself (its body with
    ``json_object``), answering with a ``Response``: it is called with them at once.

    FastAPI's own handler would solve the endpoint's parameters against the request first
    (about a tenth of a create's CPU in-process, ``bench/request.py``: the hot write routes
    take nothing it could check). The route is still FastAPI's: matched, documented in the
    OpenAPI document and covered by the application's error handlers as any other. An endpoint
    that declares anything else (a query parameter, a header, a body, a dependency) is refused
    when the route is made: it would be documented and never read."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        endpoint = self.endpoint
        if not inspect.iscoroutinefunction(endpoint):
            raise TypeError(f"{self.path}: a PathOnlyRoute's endpoint must be a coroutine function")
        declared = self.dependant
        unread = [field.name for kind in _NOT_PATH for field in getattr(declared, kind, ())]
        unread += [f"a dependency ({dependency.call})" for dependency in declared.dependencies]
        unread += [name for name in _SPECIAL if getattr(declared, name, None)]
        if unread:
            raise TypeError(f"{self.path}: a PathOnlyRoute's endpoint takes only the request and path parameters, not {', '.join(map(str, unread))}")

        async def handler(request: Request) -> Response:
            return await endpoint(request, **request.path_params)

        return handler


_NOT_PATH = ("query_params", "header_params", "cookie_params", "body_params")
_SPECIAL = ("response_param_name", "background_tasks_param_name", "security_scopes_param_name", "websocket_param_name")
