"""``lahar queue``: vcctl's queue verbs (create, delete, operate, list, get) plus update and tree.

Flags keep vcctl's names (``-n/--name``, ``-w/--weight``, ``-S/--state``, ``-a/--action``) and
add what vcctl leaves to kubectl (capability, deserved, guarantee, parent, reclaimable,
priority). ``list`` and ``get`` print vcctl's table, column for column, with the podgroup
counts computed live from every podgroup in every namespace, as vcctl does; ``-o wide`` adds
deserved, allocated and capability. (One difference: a value wider than its column is followed
by a space, where vcctl runs it into the next column.) ``tree`` draws the hierarchy with one bar per resource,
every bar on the cluster's scale, so that queues can be compared at a glance.
"""

from __future__ import annotations

from collections import Counter
from enum import Enum
from typing import Optional

import typer

from lahar.cli.client import LaharClient, ServerOption, TokenOption, connect
from lahar.cli.output import OUTPUT_HELP, Output, amount_value, bar, emit, emit_document, fail, reports_errors, resource_text, table

__all__ = ["app", "parse_resources", "queue_table", "podgroup_counts", "complete_queue"]

app = typer.Typer(
    help="Create, change, operate and inspect queues (vcctl's queue verbs).",
    epilog="Examples:\n\nlahar queue create -n test -w 3\n\nlahar queue list -o wide\n\nlahar queue operate -n test -a suspend",
    no_args_is_help=True,
)

QUEUE_API = "scheduling.volcano.sh/v1beta1"
PHASES = ("inqueue", "pending", "running", "unknown", "completed")
VCCTL_HEADERS = ("Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed")
VCCTL_WIDTHS = (25, 8, 8, 8, 8, 8, 8, 8, 8)


class State(str, Enum):
    Open = "Open"
    Closed = "Closed"
    Suspended = "Suspended"


class Flag(str, Enum):
    true = "true"
    false = "false"


class Action(str, Enum):
    open = "open"
    close = "close"
    suspend = "suspend"
    resume = "resume"
    update = "update"


def parse_resources(text: Optional[str]) -> Optional[dict]:
    """``cpu=4,memory=4Gi`` as a resource list; ``""`` is an empty list (clears the field).
    Quantities are checked by the server (every bad one is reported with its field path)."""
    if text is None:
        return None
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise typer.BadParameter(f'"{part}" is not NAME=QUANTITY (e.g. cpu=4,memory=4Gi)')
        out[name.strip()] = value.strip()
    return out


def complete_queue(incomplete: str) -> list[str]:
    """Queue names for shell completion (nothing when the server does not answer)."""
    import os

    try:
        client = connect(os.environ.get("LAHAR_SERVER", "http://127.0.0.1:8080"), os.environ.get("LAHAR_TOKEN"))
        return [q["metadata"]["name"] for q in client.list("Queue") if q["metadata"]["name"].startswith(incomplete)]
    except Exception:  # noqa: BLE001 - completion must never fail loudly
        return []


NAME_HELP = "Queue name."
Resources = dict(metavar="NAME=QTY,...", callback=parse_resources)


# --------------------------------------------------------------------- table


def podgroup_counts(client: LaharClient) -> dict[str, Counter]:
    """Podgroups per queue and phase, counted now from every podgroup in every namespace."""
    counts: dict[str, Counter] = {}
    for group in client.list("PodGroup"):
        queue = (group.get("spec") or {}).get("queue") or "default"
        phase = ((group.get("status") or {}).get("phase") or "Pending").lower()
        counts.setdefault(queue, Counter())[phase] += 1
    return counts


def _state(queue: dict) -> str:
    return (queue.get("status") or {}).get("state") or (queue.get("spec") or {}).get("state") or "Open"


def queue_table(client: LaharClient, queues: list[dict], wide: bool) -> str:
    """vcctl's queue table (``-o wide``: with Deserved, Allocated and Capability)."""
    counts = podgroup_counts(client)
    shares = {q["name"]: q for q in client.tree()} if wide else {}
    rows = []
    for queue in queues:
        name, spec = queue["metadata"]["name"], queue.get("spec") or {}
        counted = counts.get(name, Counter())
        row = [name, spec.get("weight", 1), _state(queue), spec.get("parent"), *(counted[p] for p in PHASES)]
        if wide:
            share = shares.get(name, {})
            row += [resource_text(share.get("deserved") or spec.get("deserved")), resource_text((queue.get("status") or {}).get("allocated")), resource_text(spec.get("capability"))]
        rows.append(row)
    headers = VCCTL_HEADERS + (("Deserved", "Allocated", "Capability") if wide else ())
    if wide:
        return table(headers, rows, VCCTL_WIDTHS + (0, 0, 0))
    return table(headers, rows, VCCTL_WIDTHS, strip=False)


# --------------------------------------------------------------------- commands


def _spec_changes(weight, capability, deserved, guarantee, parent, state, reclaimable, priority) -> dict:
    spec: dict = {}
    for key, value in (("weight", weight), ("capability", capability), ("deserved", deserved), ("parent", parent), ("priority", priority)):
        if value is not None:
            spec[key] = value
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    if state is not None:
        spec["state"] = state.value
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable is Flag.true
    return spec


@app.command(epilog="Examples:\n\nlahar queue create -n test -w 3\n\nlahar queue create -n capped --capability cpu=2,memory=4Gi --reclaimable false")
@reports_errors
def create(
    name: str = typer.Option(..., "--name", "-n", help=NAME_HELP),
    weight: Optional[int] = typer.Option(None, "--weight", "-w", help="Share of the cluster relative to other queues (default 1)."),
    capability: Optional[str] = typer.Option(None, "--capability", help="Hard cap, e.g. cpu=4,memory=4Gi.", **Resources),
    deserved: Optional[str] = typer.Option(None, "--deserved", help="Deserved share (capacity mode), e.g. cpu=2.", **Resources),
    guarantee: Optional[str] = typer.Option(None, "--guarantee", help="Reserved, never lent (capacity mode), e.g. cpu=1.", **Resources),
    parent: Optional[str] = typer.Option(None, "--parent", help="Parent queue (hierarchy; default root)."),
    state: Optional[State] = typer.Option(None, "--state", "-S", case_sensitive=False, metavar="Open|Closed|Suspended", help="Open, Closed or Suspended (default Open)."),
    reclaimable: Optional[Flag] = typer.Option(None, "--reclaimable", case_sensitive=False, help="May others take back what it uses above its deserved share (default true)."),
    priority: Optional[int] = typer.Option(None, "--priority", help="Queue priority."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Create a queue. Prints queue/NAME created."""
    spec = _spec_changes(weight, capability, deserved, guarantee, parent, state, reclaimable, priority)
    connect(server, token).create({"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    typer.echo(f"queue/{name} created")


@app.command(epilog="Examples:\n\nlahar queue update -n test -w 5\n\nlahar queue update -n test --capability cpu=8 --state Suspended\n\nlahar queue update -n test --capability ''   (removes the capability)")
@reports_errors
def update(
    name: str = typer.Option(..., "--name", "-n", help=NAME_HELP, autocompletion=complete_queue),
    weight: Optional[int] = typer.Option(None, "--weight", "-w", help="New weight."),
    capability: Optional[str] = typer.Option(None, "--capability", help="New hard cap ('' removes it).", **Resources),
    deserved: Optional[str] = typer.Option(None, "--deserved", help="New deserved share ('' removes it).", **Resources),
    guarantee: Optional[str] = typer.Option(None, "--guarantee", help="New guarantee ('' removes it).", **Resources),
    parent: Optional[str] = typer.Option(None, "--parent", help="New parent queue."),
    state: Optional[State] = typer.Option(None, "--state", "-S", case_sensitive=False, metavar="Open|Closed|Suspended", help="Open, Closed or Suspended (through the lifecycle: a busy queue closes as Closing)."),
    reclaimable: Optional[Flag] = typer.Option(None, "--reclaimable", case_sensitive=False, help="true or false."),
    priority: Optional[int] = typer.Option(None, "--priority", help="New priority."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Change a queue's spec; flags not given keep their value. Prints queue/NAME updated."""
    changes = _spec_changes(weight, capability, deserved, guarantee, parent, state, reclaimable, priority)
    if not changes:
        raise typer.BadParameter("nothing to update: give at least one of -w, --capability, --deserved, --guarantee, --parent, --state, --reclaimable, --priority")
    client = connect(server, token)
    spec = client.get("Queue", name).get("spec") or {}
    patch: dict = {}
    for key, value in changes.items():
        if value in ({}, {"resource": {}}):
            patch[key] = None
        elif isinstance(value, dict) and isinstance(spec.get(key), dict):  # the flag gives the whole map
            patch[key] = {**{k: None for k in spec[key] if k not in value}, **value}
        else:
            patch[key] = value
    updated = client.patch("Queue", name, {"spec": patch})  # no version: the loop's status writes cannot make it stale
    typer.echo(f"queue/{name} updated (state {_state(updated)})")


@app.command(epilog="Example: lahar queue delete -n test   (close it first: lahar queue operate -n test -a close)")
@reports_errors
def delete(
    name: str = typer.Option(..., "--name", "-n", help=NAME_HELP, autocompletion=complete_queue),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Delete a Closed queue (and its descendants). Prints queue/NAME deleted."""
    connect(server, token).delete("Queue", name)
    typer.echo(f"queue/{name} deleted")


@app.command(epilog="Examples:\n\nlahar queue operate -n test -a close\n\nlahar queue operate -n test -a suspend\n\nlahar queue operate -n test -a update -w 4")
@reports_errors
def operate(
    name: str = typer.Option(..., "--name", "-n", help=NAME_HELP, autocompletion=complete_queue),
    action: Action = typer.Option(..., "--action", "-a", case_sensitive=False, help="open, close, suspend, resume, or update (with -w)."),
    weight: int = typer.Option(0, "--weight", "-w", help="New weight, for -a update."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Open, close, suspend or resume a queue now (descendants first), or update its weight.

    Prints the state change, e.g. queue/test: Open -> Closing. A refused action (the root
    queue, a parent that is Closed) exits with code 1 and says why."""
    if action is Action.update and weight <= 0:
        raise typer.BadParameter(f"when update queue {name}, weight must be specified, the value must be greater than 0", param_hint="'-w'")
    client = connect(server, token)
    before = client.get("Queue", name)
    if action is Action.update:
        client.patch("Queue", name, {"spec": {"weight": weight}})
        typer.echo(f"queue/{name}: weight {weight}")
        return
    answer = client.queue_action(name, action.value)
    _report_action(name, _state(before), answer)


def _report_action(name: str, before: str, answer: dict) -> None:
    refused = [e["message"] for e in answer.get("events", []) if e.get("type") == "Warning"]
    for event in answer.get("events", []):
        if event.get("type") != "Warning" and event.get("queue") != name:
            typer.echo(f"  {event.get('message')}")
    if refused:
        fail("; ".join(refused))
    after = _state(answer.get("queue") or {})
    ignored = [e["message"] for e in answer.get("events", []) if e.get("queue") == name and e.get("message", "").startswith("ignored")]
    typer.echo(f"queue/{name}: {before} -> {after}" + (f" ({ignored[0]})" if ignored else ""))


@app.command("list", epilog="Examples:\n\nlahar queue list\n\nlahar queue list -o wide\n\nlahar queue list -o json")
@reports_errors
def list_queues(
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help=OUTPUT_HELP),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Every queue: Name, Weight, State, Parent and its podgroups per phase (vcctl's columns)."""
    client = connect(server, token)
    document = client.list_document("Queue")
    if not document.get("items") and output in (Output.TABLE, Output.WIDE):
        typer.echo("No resources found")
        return
    emit(document, output, lambda wide: queue_table(client, document["items"], wide))


@app.command(epilog="Examples:\n\nlahar queue get -n default\n\nlahar queue get -n test -o yaml")
@reports_errors
def get(
    name: str = typer.Option(..., "--name", "-n", help=NAME_HELP, autocompletion=complete_queue),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help=OUTPUT_HELP),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """One queue, as a row of the list table (or the whole object with -o json|yaml)."""
    client = connect(server, token)
    queue = client.get("Queue", name)
    emit(queue, output, lambda wide: queue_table(client, [queue], wide))


# --------------------------------------------------------------------- tree


@app.command(epilog="Examples:\n\nlahar queue tree\n\nlahar queue tree -o json")
@reports_errors
def tree(
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help="table, or json / yaml (the server's /lahar/v1/queues/tree)."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """The queue hierarchy with a bar per resource: allocated (█, ▓ above deserved), deserved (│),
    capability (┊; blank cells are out of the queue's reach), on the scale of the whole cluster."""
    client = connect(server, token)
    queues = client.tree()
    if output in (Output.JSON, Output.YAML):
        emit_document({"queues": queues}, output)
        return
    total = _cluster_total(client.list("Node"))
    for line in tree_lines([_root_is_cluster(q, total) for q in queues], total):
        typer.echo(line)


def _root_is_cluster(queue: dict, total: dict[str, float]) -> dict:
    """The root queue deserves the whole cluster and is capped by it (SPEC section 1)."""
    if queue["name"] != "root":
        return queue
    return {**queue, "deserved": queue.get("deserved") or dict(total), "capability": queue.get("capability") or dict(total)}


def _cluster_total(nodes: list[dict]) -> dict[str, float]:
    total: dict[str, float] = {}
    for node in nodes:
        status = node.get("status") or {}
        for name, value in (status.get("allocatable") or status.get("capacity") or {}).items():
            if name != "pods":
                total[name] = total.get(name, 0.0) + amount_value(value)
    return total


def tree_lines(queues: list[dict], total: dict[str, float]) -> list[str]:
    """The tree as text: one line per queue and resource, children in name order."""
    by_parent: dict[str | None, list[dict]] = {}
    names = {q["name"] for q in queues}
    for queue in sorted(queues, key=lambda q: q["name"]):
        parent = queue.get("parent")
        if parent not in names or parent == queue["name"]:
            parent = None
        by_parent.setdefault(parent, []).append(queue)
    dims = _dimensions(queues, total)
    label_width = max([len(q["name"]) + 4 * _depth(q, queues) for q in queues] + [5]) + 4
    lines = [f"{'QUEUE'.ljust(label_width)}{'STATE'.ljust(11)}{'WEIGHT'.ljust(8)}{'RESOURCE'.ljust(16)}{'ALLOCATED / DESERVED / CAPABILITY'}"]
    for root in by_parent.get(None, []):
        lines += _subtree(root, by_parent, "", "", dims, total, label_width)
    scale = ", ".join(f"{d} {_amount(d, total[d])}" for d in dims) or "no nodes"
    lines.append(f"bars: the cluster ({scale}); █ allocated, ▓ allocated above deserved, │ deserved, ┊ capability")
    return lines


def _dimensions(queues: list[dict], total: dict[str, float]) -> list[str]:
    """Resources worth a bar: those some queue (other than root) allocates, deserves or caps;
    cpu when none does. cpu, memory and GPUs first, then the others by name."""
    named = ("cpu", "memory", "nvidia.com/gpu")
    used = {d for q in queues if q["name"] != "root" for f in ("allocated", "deserved", "capability") for d, v in (q.get(f) or {}).items() if amount_value(v)}
    dims = [d for d in named if d in used] + sorted(used - set(named))
    return dims or [d for d in ("cpu",) if total.get(d)]


def _depth(queue: dict, queues: list[dict]) -> int:
    parents = {q["name"]: q.get("parent") for q in queues}
    depth, name = 0, queue["name"]
    while parents.get(name) and parents.get(name) in parents and depth < len(queues):
        depth, name = depth + 1, parents[name]
    return depth


def _subtree(queue: dict, by_parent: dict, first: str, rest: str, dims: list[str], total: dict, width: int) -> list[str]:
    state, weight = queue.get("state", "Open"), str(queue.get("weight", 1))
    lines = []
    for i, dim in enumerate(dims or [""]):
        label = (first + queue["name"]) if i == 0 else rest + ("│   " if by_parent.get(queue["name"]) else "    ")
        head = f"{label.ljust(width)}{(state if i == 0 else '').ljust(11)}{(weight if i == 0 else '').ljust(8)}"
        lines.append((head + _bar_cell(queue, dim, total)).rstrip())
    children = by_parent.get(queue["name"], [])
    for j, child in enumerate(children):
        last = j == len(children) - 1
        lines += _subtree(child, by_parent, rest + ("└── " if last else "├── "), rest + ("    " if last else "│   "), dims, total, width)
    return lines


def _bar_cell(queue: dict, dim: str, total: dict) -> str:
    if not dim:
        return ""
    allocated = amount_value((queue.get("allocated") or {}).get(dim, 0))
    deserved = amount_value((queue.get("deserved") or {}).get(dim, 0))
    cap_raw = (queue.get("capability") or {}).get(dim)
    capability = amount_value(cap_raw) if cap_raw is not None else None
    numbers = f"{_amount(dim, allocated)} / {_amount(dim, deserved)} / {_amount(dim, capability) if capability is not None else '-'}"
    return f"{dim.ljust(16)}{bar(allocated, deserved, capability, total.get(dim, 0.0))}  {numbers}"


def _amount(dim: str, value: float) -> str:
    from lahar.cli.output import amount_text

    return amount_text(dim, float(value))
