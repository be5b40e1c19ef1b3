"""Reading and writing manifests: one or many YAML / JSON documents per file.

``load_objects(text)`` turns text into typed objects. A document that is not an object, names
an unknown kind, or has fields of the wrong type is refused with every problem it has, each
with its path (``spec.weight: Invalid value: "x": must be an integer``). Value rules (ranges,
names, quantities) are admission's job, not this module's.

Kinds are looked up by ``apiVersion`` and ``kind``; a ``kind: List`` document with ``items`` is
read as its items. ``dump_yaml`` / ``dump_json`` write objects back with their unknown fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from lahar.errors import BadRequest, FieldError, Invalid
from lahar.model.base import ApiObject
from lahar.model.cluster import Command, Node, PriorityClass, SchedulerConfiguration
from lahar.model.job import Job
from lahar.model.queue import Queue
from lahar.model.workload import Pod, PodGroup

__all__ = [
    "KINDS",
    "kind_class",
    "parse_object",
    "load_documents",
    "check_shape",
    "load_objects",
    "load_files",
    "dump_yaml",
    "dump_json",
]

KINDS: dict[str, type[ApiObject]] = {
    cls.KIND: cls
    for cls in (Queue, PodGroup, Job, Pod, Node, Command, PriorityClass, SchedulerConfiguration)
}

# Names a user may type for a kind on the command line (kubectl style).
_ALIASES = {
    "queue": "Queue", "queues": "Queue", "q": "Queue",
    "podgroup": "PodGroup", "podgroups": "PodGroup", "pg": "PodGroup",
    "job": "Job", "jobs": "Job", "vcjob": "Job", "vcjobs": "Job", "vj": "Job",
    "pod": "Pod", "pods": "Pod", "po": "Pod",
    "node": "Node", "nodes": "Node", "no": "Node",
    "command": "Command", "commands": "Command",
    "priorityclass": "PriorityClass", "priorityclasses": "PriorityClass", "pc": "PriorityClass",
}  # fmt: skip

_TYPE_DETAILS = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be a boolean (true or false)",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "float_type": "must be a number",
}

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64  # nesting of mappings and lists, as for JSON bodies on the API
MAX_ALIAS_NODES = 100_000  # nodes that aliases may add when expanded (plain text is bounded by size)


def kind_class(name: str) -> type[ApiObject]:
    """The class for a kind given as ``Queue``, ``queues``, ``q``... Raises ``BadRequest``."""
    kind = _ALIASES.get(name.lower(), name)
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        raise BadRequest(f'unknown kind "{name}": expected one of {known}')
    return KINDS[kind]


def parse_object(data: Any, where: str = "") -> ApiObject:
    """A typed object from one decoded document. Raises ``BadRequest`` or ``Invalid``."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise BadRequest(f"{prefix}a manifest must be an object with apiVersion and kind, got {type(data).__name__}")
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not kind or not isinstance(kind, str):
        raise BadRequest(f"{prefix}kind: Required value: every manifest names its kind")
    if kind not in KINDS:
        raise BadRequest(f'{prefix}kind: Unsupported value: "{kind}": supported kinds: {", ".join(sorted(KINDS))}')
    cls = KINDS[kind]
    if api_version and api_version != cls.API_VERSION:
        raise BadRequest(f'{prefix}apiVersion: Unsupported value: "{api_version}": {kind} is {cls.API_VERSION}')
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        name = (data.get("metadata") or {}).get("name", "") if isinstance(data.get("metadata"), dict) else ""
        raise Invalid(kind, name, [_field_error(e) for e in exc.errors()]) from None


def _field_error(error: dict) -> FieldError:
    path = ""
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    detail = _TYPE_DETAILS.get(error["type"], error["msg"])
    return FieldError.invalid(path, error.get("input"), detail)


def load_documents(text: str, where: str = "") -> list[dict]:
    """Decode every YAML (or JSON) document in ``text``; empty documents are skipped.

    Hostile text is refused before anything is built from it (``check_shape``): more than
    ``MAX_DOCUMENT_BYTES``, nesting deeper than ``MAX_DEPTH``, or aliases that would add more
    than ``MAX_ALIAS_NODES`` nodes when expanded (a "billion laughs" document). ``where`` names
    the source."""
    prefix = f"{where}: " if where else ""
    if len(text.encode("utf-8", "ignore")) > MAX_DOCUMENT_BYTES:
        raise BadRequest(f"{prefix}document too large: at most {MAX_DOCUMENT_BYTES} bytes")
    try:
        check_shape(text, prefix)
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise BadRequest(f"{prefix}not valid YAML or JSON: {exc}") from None
    except RecursionError:  # a last resort: check_shape keeps the composer far from the limit
        raise BadRequest(f"{prefix}nested too deeply to read") from None
    out: list[dict] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(doc["items"])
        else:
            out.append(doc)
    return out


def check_shape(text: str, prefix: str = "") -> None:
    """Refuse YAML that is too deep or expands too much, reading only its event stream.

    PyYAML's parser is iterative, so this pass costs memory in proportion to the text; its
    composer and constructor recurse and share aliased nodes, and what walks the result later
    (validation, JSON) copies every alias. So each anchor's expanded size and height are kept,
    and an alias counts for all of it. Raises ``BadRequest`` naming the line and the limit."""
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (nodes when expanded, height)
    frames: list[list] = []  # open collections: [nodes so far, highest child, anchor]
    copied = 0  # nodes added by expanding aliases

    def count(nodes: int, height: int, mark: Any) -> None:
        """``nodes`` more nodes, reaching ``height`` levels below the open collections."""
        if len(frames) + height > MAX_DEPTH:
            raise BadRequest(f"{prefix}line {mark.line + 1}, column {mark.column + 1}: nested deeper than {MAX_DEPTH} levels; refused")
        if frames:
            frames[-1][0] += nodes
            frames[-1][1] = max(frames[-1][1], height)

    def alias(nodes: int, height: int, mark: Any) -> None:
        nonlocal copied
        copied += nodes
        if copied > MAX_ALIAS_NODES:
            raise BadRequest(f"{prefix}line {mark.line + 1}: aliases would expand the document by more than {MAX_ALIAS_NODES} nodes "
                             "(aliases of aliases, as in a \"billion laughs\" document); refused")  # fmt: skip
        count(nodes, height, mark)

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            anchors.clear()  # anchors do not cross documents
        elif isinstance(event, yaml.CollectionStartEvent):
            count(1, 1, event.start_mark)
            frames.append([0, 0, event.anchor])
        elif isinstance(event, yaml.CollectionEndEvent):
            nodes, highest, anchor = frames.pop()
            if frames:  # the collection itself was counted when it started
                frames[-1][0] += nodes
                frames[-1][1] = max(frames[-1][1], highest + 1)
            if anchor:
                anchors[anchor] = (nodes + 1, highest + 1)
        elif isinstance(event, yaml.ScalarEvent):
            count(1, 0, event.start_mark)
            if event.anchor:
                anchors[event.anchor] = (1, 0)
        elif isinstance(event, yaml.AliasEvent):
            nodes, height = anchors.get(event.anchor, (1, 0))  # an unknown alias fails later
            alias(nodes, height, event.start_mark)


def load_objects(text: str, where: str = "") -> list[ApiObject]:
    """Every object in ``text``, typed. ``Invalid`` lists the errors of the first bad document."""
    docs = load_documents(text, where)
    return [parse_object(doc, f"{where}#{i + 1}" if where else f"document {i + 1}") for i, doc in enumerate(docs)]


def load_files(paths: Iterable[str | Path]) -> list[ApiObject]:
    """Objects from each file in order; ``-`` reads standard input."""
    import sys

    objects: list[ApiObject] = []
    for path in paths:
        if str(path) == "-":
            objects += load_objects(sys.stdin.read(), "stdin")
            continue
        file = Path(path)
        if not file.is_file():
            raise BadRequest(f"{path}: no such file")
        objects += load_objects(file.read_text(encoding="utf-8"), str(path))
    return objects


def dump_yaml(objects: Iterable[ApiObject]) -> str:
    """Objects as a multi-document YAML stream."""
    return yaml.safe_dump_all([obj.dump() for obj in objects], sort_keys=False, explicit_start=True)


def dump_json(objects: list[ApiObject]) -> str:
    """One object as JSON, several as a ``List``."""
    if len(objects) == 1:
        return json.dumps(objects[0].dump(), indent=2)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [o.dump() for o in objects]}, indent=2)
