"""Lahar's one exception tree, and field errors.

Every failure a user can cause maps to one class here, and each class to one HTTP status and one
CLI exit code, so that the API, the CLI and the simulator report the same problem the same way::

    LaharError                 base; never raised itself        HTTP 500  exit 1
    +-- BadRequest             malformed document or request    HTTP 400  exit 1
    +-- Invalid                rejected by admission; carries   HTTP 422  exit 1
    |                          every FieldError at once
    +-- NotFound               no such object                   HTTP 404  exit 1
    +-- AlreadyExists          create of an existing name       HTTP 409  exit 1
    +-- Conflict               stale resourceVersion            HTTP 409  exit 1
    +-- Forbidden              authenticated, not allowed       HTTP 403  exit 1
    +-- Unauthorized           no valid credentials             HTTP 401  exit 1

Expected scheduling outcomes (a job that cannot start yet) are *not* exceptions: they are
statuses with reasons on the job.

``FieldError`` follows Kubernetes' ``field.Error`` wording, so messages read like kubectl's:
``spec.weight: Invalid value: 0: must be in 1..2147483647``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

__all__ = [
    "ErrorType",
    "FieldError",
    "LaharError",
    "BadRequest",
    "Invalid",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Forbidden",
    "Unauthorized",
]


class ErrorType(str, Enum):
    """The kind of a field error; the value is the phrase printed after the path."""

    INVALID = "Invalid value"
    REQUIRED = "Required value"
    UNSUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    NOT_FOUND = "Not found"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"


_NO_VALUE = object()


@dataclass(frozen=True)
class FieldError:
    """One broken rule on one field: ``path`` (``spec.tasks[0].replicas``), ``type``, ``value``, ``detail``."""

    path: str
    type: ErrorType
    detail: str = ""
    value: Any = _NO_VALUE

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> "FieldError":
        return cls(path, ErrorType.INVALID, detail, value)

    @classmethod
    def required(cls, path: str, detail: str = "") -> "FieldError":
        return cls(path, ErrorType.REQUIRED, detail)

    @classmethod
    def unsupported(cls, path: str, value: Any, supported: Iterable[str]) -> "FieldError":
        options = ", ".join(f'"{s}"' for s in supported)
        return cls(path, ErrorType.UNSUPPORTED, f"supported values: {options}", value)

    @classmethod
    def forbidden(cls, path: str, detail: str) -> "FieldError":
        return cls(path, ErrorType.FORBIDDEN, detail)

    @classmethod
    def duplicate(cls, path: str, value: Any) -> "FieldError":
        return cls(path, ErrorType.DUPLICATE, "", value)

    @classmethod
    def not_found(cls, path: str, value: Any, detail: str = "") -> "FieldError":
        return cls(path, ErrorType.NOT_FOUND, detail, value)

    def __str__(self) -> str:
        text = f"{self.path}: {self.type.value}"
        if self.value is not _NO_VALUE and self.type in (
            ErrorType.INVALID,
            ErrorType.UNSUPPORTED,
            ErrorType.NOT_FOUND,
            ErrorType.DUPLICATE,
        ):
            text += f": {_show(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The Kubernetes ``StatusCause`` shape: ``{"field", "reason", "message"}``."""
        reason = "Field" + self.type.name.title().replace("_", "")
        return {"field": self.path, "reason": reason, "message": str(self)}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, default=str)


class LaharError(Exception):
    """Base of every error Lahar reports to a user."""

    http_status = 500
    reason = "InternalError"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_status(self) -> dict[str, Any]:
        """A Kubernetes ``Status`` object describing this error."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.http_status,
        }


class BadRequest(LaharError):
    """The request or document could not be read at all (not YAML, not an object, unknown kind)."""

    http_status = 400
    reason = "BadRequest"


class Invalid(LaharError):
    """Admission rejected an object. ``errors`` holds every broken rule, with its field path."""

    http_status = 422
    reason = "Invalid"

    def __init__(self, kind: str, name: str, errors: list[FieldError]) -> None:
        self.kind, self.name, self.errors = kind, name, list(errors)
        listed = ", ".join(str(e) for e in self.errors)
        body = listed if len(self.errors) == 1 else f"[{listed}]"
        super().__init__(f'{kind} "{name}" is invalid: {body}')

    def to_status(self) -> dict[str, Any]:
        status = super().to_status()
        status["details"] = {
            "name": self.name,
            "kind": self.kind,
            "causes": [e.to_json() for e in self.errors],
        }
        return status


class NotFound(LaharError):
    http_status = 404
    reason = "NotFound"

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        super().__init__(f'{kind} "{name}" not found')


class AlreadyExists(LaharError):
    http_status = 409
    reason = "AlreadyExists"

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        super().__init__(f'{kind} "{name}" already exists')


class Conflict(LaharError):
    """A write based on a stale ``metadata.resourceVersion``; re-read and try again."""

    http_status = 409
    reason = "Conflict"


class Forbidden(LaharError):
    http_status = 403
    reason = "Forbidden"


class Unauthorized(LaharError):
    http_status = 401
    reason = "Unauthorized"
