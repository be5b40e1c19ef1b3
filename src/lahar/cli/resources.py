"""``lahar apply``, ``lahar get`` and ``lahar delete``: kubectl's verbs over every Lahar kind.

``apply -f FILE`` reads every document first (nothing is sent when one cannot be read) and then
creates each object, or replaces it when it exists and the manifest asks for something the
stored object does not have, reporting ``queue/x created|configured|unchanged`` per object.
A manifest is *unchanged* when every field it sets (outside metadata, plus its labels and
annotations) equals the stored one: defaults the server filled in do not count as changes.

``get KIND [NAME]`` takes kubectl-style kind names (``queue``/``queues``/``q``, ``pg``,
``vcjob``/``job``, ``pod``/``po``, ``node``/``no``, ``command``, ``priorityclass``/``pc``,
``events``) and prints a table per kind, or the server's documents with ``-o json|yaml``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, List, Optional

import typer

from lahar.cli.client import EVENT_KIND, ROUTES, LaharClient, ServerError, ServerOption, TokenOption, connect
from lahar.cli.output import OUTPUT_HELP, Output, age, amount_text, emit, manifest_documents, print_error, reports_errors, resource_text, table
from lahar.errors import BadRequest, LaharError

__all__ = ["apply", "get", "delete", "resolve_kind", "apply_object", "KIND_NAMES"]

EVENT_NAMES = ("event", "events", "ev", "laharevent", "laharevents")
KIND_NAMES = ("queue", "podgroup", "job", "pod", "node", "command", "priorityclass", "events")


def resolve_kind(name: str) -> str:
    """The kind for a name a user typed (``q``, ``pods``, ``vcjob``...); a usage error otherwise."""
    if name.lower() in EVENT_NAMES:
        return EVENT_KIND
    from lahar.model.manifest import kind_class

    try:
        kind = kind_class(name).KIND
    except BadRequest:
        raise typer.BadParameter(f'unknown kind "{name}": expected one of {", ".join(KIND_NAMES)} (or their aliases)', param_hint="KIND") from None
    if kind not in ROUTES:
        raise typer.BadParameter(f"{kind} is not kept by the server (give it to lahar server --config)", param_hint="KIND")
    return kind


def _complete_kind(incomplete: str) -> list[str]:
    return [k for k in KIND_NAMES if k.startswith(incomplete.lower())]


# --------------------------------------------------------------------- apply


def _read_manifests(filenames: list[str]) -> list[dict]:
    """Every document of every file, checked for shape; raises before anything is sent."""
    from lahar.model.manifest import parse_object

    documents = []
    for filename in filenames:
        for i, document in enumerate(manifest_documents(filename)):
            obj = parse_object(document, f"{filename}#{i + 1}")
            if obj.kind not in ROUTES:
                raise BadRequest(f"{filename}#{i + 1}: kind {obj.kind} is not kept by the server (give it to lahar server --config)")
            documents.append(obj.dump())
    return documents


def _subset(wanted: Any, stored: Any) -> bool:
    """Whether everything ``wanted`` sets is in ``stored`` with the same value."""
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(_subset(v, stored.get(k)) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(stored, list) and len(wanted) == len(stored) and all(map(_subset, wanted, stored))
    return wanted == stored


def _unchanged(wanted: dict, stored: dict) -> bool:
    meta, stored_meta = wanted.get("metadata") or {}, stored.get("metadata") or {}
    for field in ("labels", "annotations"):
        if not _subset(meta.get(field) or {}, stored_meta.get(field) or {}):
            return False
    skipped = ("apiVersion", "kind", "metadata", "status")
    return all(_subset(v, stored.get(k)) for k, v in wanted.items() if k not in skipped)


def _merged(wanted: dict, stored: dict) -> dict:
    """The body to PUT: the manifest, with the stored resourceVersion (compare-and-swap) and the
    stored labels and annotations under the manifest's own."""
    body = json.loads(json.dumps(wanted))
    meta, stored_meta = body.setdefault("metadata", {}), stored.get("metadata") or {}
    meta["resourceVersion"] = stored_meta.get("resourceVersion")
    for field in ("labels", "annotations"):
        merged = {**(stored_meta.get(field) or {}), **(meta.get(field) or {})}
        if merged:
            meta[field] = merged
    return body


# How often ``apply`` reads an object again when it changed between the read and the write
# (the control loop writes a queue's status whenever its jobs move)
APPLY_ATTEMPTS = 5


def apply_object(client: LaharClient, wanted: dict, namespace: Optional[str] = None) -> str:
    """Create or update one object; returns ``created``, ``configured`` or ``unchanged``.

    The update is a compare-and-swap on the version read. When the object changed in between
    (409 Conflict: usually the control loop writing its status), it is read and compared
    again, up to ``APPLY_ATTEMPTS`` times: the manifest still says what the object should be."""
    kind, meta = wanted["kind"], wanted.setdefault("metadata", {})
    if ROUTES[kind].namespaced:
        meta["namespace"] = namespace or meta.get("namespace") or "default"
    for attempt in range(1, APPLY_ATTEMPTS + 1):
        stored = client.find(kind, meta["name"], meta.get("namespace")) if meta.get("name") else None
        if stored is None:
            created = client.create(wanted, meta.get("namespace"))
            meta["name"] = created["metadata"]["name"]
            return "created"
        if kind == "Node" and not _subset(wanted.get("status") or {}, stored.get("status") or {}):
            raise LaharError(f'node/{meta["name"]}: the server keeps a node\'s status (allocatable) on update; delete the node and apply it again')
        if _unchanged(wanted, stored):
            return "unchanged"
        try:
            client.replace(_merged(wanted, stored), meta.get("namespace"))
        except ServerError as exc:
            if exc.code != 409 or attempt == APPLY_ATTEMPTS:
                raise
            continue
        return "configured"
    raise AssertionError("unreachable")


APPLY_EPILOG = "Examples:\n\nlahar apply -f cluster.yaml\n\ncat queues.yaml | lahar apply -f -\n\nlahar apply -f examples/seeds/1-weights-split.yaml"


@reports_errors
def apply(
    filenames: List[str] = typer.Option(..., "--filename", "-f", help="Manifest file, many documents each (- for stdin); repeat -f for more files."),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="Namespace for namespaced objects that name none (default: default)."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Create or update every object of manifest files (every kind, many documents per file).

    Prints one line per object: queue/x created, configured (changed) or unchanged. Nothing is
    sent when a document cannot be read; an object the server refuses is reported and the
    others go on (exit code 1 at the end). An object that changed between its read and its write
    (the control loop writes a queue's status as its jobs move) is read and compared again."""
    documents = _read_manifests(filenames)
    client = connect(server, token)
    failed = 0
    for document in documents:
        try:
            result = apply_object(client, document, namespace)
        except LaharError as exc:
            if exc.exit_code != 1:
                raise
            print_error(exc)
            failed += 1
            continue
        typer.echo(f"{document['kind'].lower()}/{document['metadata']['name']} {result}")
    if failed:
        raise typer.Exit(1)


# --------------------------------------------------------------------- get


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _podgroup_row(obj: dict, wide: bool) -> list:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    row = [_meta(obj)["name"], spec.get("queue") or "default", status.get("phase") or "Pending", spec.get("minMember", 0), status.get("running", 0), status.get("succeeded", 0), age(_meta(obj).get("creationTimestamp"))]
    if wide:
        text = (_meta(obj).get("annotations") or {}).get("lahar.dev/pending-reason")
        row += [spec.get("priorityClassName"), resource_text(spec.get("minResources")), json.loads(text).get("message") if text else None]
    return row


def _pod_requests(pod: dict) -> dict:
    total: dict = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, []) + [value]
    return {k: v[0] if len(v) == 1 else "+".join(map(str, v)) for k, v in total.items()}


def _pod_row(obj: dict, wide: bool) -> list:
    meta, spec = _meta(obj), obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    group = annotations.get("scheduling.k8s.io/group-name") or annotations.get("scheduling.volcano.sh/group-name")
    row = [meta["name"], (obj.get("status") or {}).get("phase") or "Pending", spec.get("nodeName"), group, age(meta.get("creationTimestamp"))]
    return row + [resource_text(_pod_requests(obj)), spec.get("priorityClassName")] if wide else row


def _node_status(obj: dict) -> str:
    ready = all(str(c.get("status", "True")) == "True" for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready")
    text = "Ready" if ready else "NotReady"
    return text + ",SchedulingDisabled" if (obj.get("spec") or {}).get("unschedulable") else text


def _node_row(obj: dict, wide: bool) -> list:
    status = obj.get("status") or {}
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    row = [_meta(obj)["name"], _node_status(obj), amount_text("cpu", allocatable["cpu"]) if "cpu" in allocatable else None]
    row += [allocatable.get("memory"), allocatable.get("nvidia.com/gpu"), age(_meta(obj).get("creationTimestamp"))]
    return row + [resource_text(allocatable), ",".join(f"{k}={v}" for k, v in sorted((_meta(obj).get("labels") or {}).items())) or None] if wide else row


def _command_row(obj: dict, wide: bool) -> list:
    target = obj.get("target") or {}
    return [_meta(obj)["name"], obj.get("action"), f"{target.get('kind', '-')}/{target.get('name', '-')}", age(_meta(obj).get("creationTimestamp"))]


def _priority_row(obj: dict, wide: bool) -> list:
    row = [_meta(obj)["name"], obj.get("value", 0), bool(obj.get("globalDefault", False)), age(_meta(obj).get("creationTimestamp"))]
    return row + [obj.get("preemptionPolicy"), obj.get("description")] if wide else row


def _event_row(obj: dict, wide: bool) -> list:
    involved = obj.get("involvedObject") or {}
    row = [age(_meta(obj).get("creationTimestamp")), obj.get("type"), obj.get("reason"), f"{str(involved.get('kind', '-')).lower()}/{involved.get('name', '-')}", obj.get("message")]
    return row + [_meta(obj).get("name"), obj.get("user")] if wide else row


TABLES: dict[str, tuple[list[str], list[str], Callable[[dict, bool], list]]] = {
    "PodGroup": (["Name", "Queue", "Phase", "MinMember", "Running", "Succeeded", "Age"], ["Priority", "MinResources", "Reason"], _podgroup_row),
    "Pod": (["Name", "Phase", "Node", "PodGroup", "Age"], ["Requests", "Priority"], _pod_row),
    "Node": (["Name", "Status", "CPU", "Memory", "GPU", "Age"], ["Allocatable", "Labels"], _node_row),
    "Command": (["Name", "Action", "Target", "Age"], [], _command_row),
    "PriorityClass": (["Name", "Value", "GlobalDefault", "Age"], ["PreemptionPolicy", "Description"], _priority_row),
    EVENT_KIND: (["Age", "Type", "Reason", "Object", "Message"], ["Name", "User"], _event_row),
}


def render(client: LaharClient, kind: str, items: list[dict], namespace: Optional[str], wide: bool) -> str:
    """The table for ``items`` of ``kind`` (namespace None: a Namespace column first)."""
    if kind == "Queue":
        from lahar.cli.queue import queue_table

        return queue_table(client, items, wide)
    if kind == "Job":
        from lahar.cli.job import job_table

        return job_table(client, items, namespace, wide)
    headers, extra, row = TABLES[kind]
    if kind == EVENT_KIND:
        items = sorted(items, key=lambda e: (e.get("timestamp") or 0, _meta(e).get("name", "")))
    rows = [row(item, wide) for item in items]
    headers = headers + (extra if wide else [])
    if ROUTES[kind].namespaced and namespace is None:
        headers = ["Namespace", *headers]
        rows = [[_meta(item).get("namespace", "default"), *r] for item, r in zip(items, rows)]
    return table(headers, rows)


GET_EPILOG = "Examples:\n\nlahar get queues\n\nlahar get q test -o yaml\n\nlahar get pods -A -o wide\n\nlahar get events\n\nlahar get events --for queue/team-a\n\nlahar get events --for job/etl --namespace default"


@reports_errors
def get(
    kind: str = typer.Argument(..., help="queue|q, podgroup|pg, job|vcjob, pod|po, node|no, command, priorityclass|pc, events.", autocompletion=_complete_kind),
    name: Optional[str] = typer.Argument(None, help="One object (default: all)."),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help=OUTPUT_HELP),
    namespace: str = typer.Option("default", "--namespace", help="Namespace, for namespaced kinds."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace, for namespaced kinds."),
    for_: Optional[str] = typer.Option(None, "--for", help="Events only: those of queue/NAME (and its jobs) or job/NAME (in --namespace)."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """List objects of a kind, or show one, as a table or as the server's JSON / YAML."""
    kind = resolve_kind(kind)
    if for_ is not None and kind != EVENT_KIND:
        raise typer.BadParameter("--for applies to events only", param_hint="--for")
    client = connect(server, token)
    if for_ is not None and not name:
        return _events_for(client, for_, namespace, output)
    ns = None if all_namespaces and not name else namespace
    if name:
        obj = client.get(kind, name, ns)
        emit(obj, output, lambda wide: render(client, kind, [obj], ns, wide))
        return
    document = client.list_document(kind, ns if ROUTES[kind].namespaced else None)
    if not document.get("items") and output in (Output.TABLE, Output.WIDE):
        typer.echo("No resources found")
        return
    emit(document, output, lambda wide: render(client, kind, document["items"], ns, wide))


def _events_for(client: LaharClient, for_: str, namespace: str, output: Output) -> None:
    """``get events --for queue/NAME|job/NAME``: the server selects (``/lahar/v1/events?for=``)."""
    kind, _, rest = for_.partition("/")
    if kind.lower() in ("job", "vcjob", "podgroup", "pg") and rest and "/" not in rest:
        for_ = f"{kind}/{namespace}/{rest}"
    document = client.request("GET", "/lahar/v1/events", params={"for": for_})
    if not document.get("items") and output in (Output.TABLE, Output.WIDE):
        typer.echo("No resources found")
        return
    emit(document, output, lambda wide: render(client, EVENT_KIND, document["items"], None, wide))


# --------------------------------------------------------------------- delete


@reports_errors
def delete(
    kind: str = typer.Argument(..., help="A kind, as for lahar get.", autocompletion=_complete_kind),
    names: List[str] = typer.Argument(..., help="Names of the objects to delete."),
    namespace: str = typer.Option("default", "--namespace", help="Namespace, for namespaced kinds."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Delete objects by kind and name.

    A job goes with its podgroup and pods. Prints kind/name deleted."""
    kind = resolve_kind(kind)
    client = connect(server, token)
    for name in names:
        client.delete(kind, name, namespace)  # a Job's podgroup and pods go with it, on the server
        typer.echo(f"{kind.lower()}/{name} deleted")
