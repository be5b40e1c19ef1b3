"""``lahar job``: submit vcjobs, list them with their place in the queue, and say why they wait.

``run`` takes a vcjob YAML (``-f``, like vcctl) or builds one from flags (one task of
``--replicas`` pods, each asking ``--cpu`` / ``--memory`` / ``--gpu``; the words after ``--``
become the container's command). ``list`` adds what vcctl cannot show: a waiting job's
position in its queue (pending and inqueue podgroups of the queue, in every namespace, by
priority class value, highest first, then by creation time, then by name). ``why`` prints the
structured pending reason the scheduler leaves on the job's podgroup. ``delete`` removes the
job; the server deletes what it created (its podgroup and pods) with it.

The job's name is ``-n`` (also ``-N``, vcctl's spelling); the namespace is ``--namespace``.
"""

from __future__ import annotations

from typing import List, Optional

import typer

from lahar.cli.client import LaharClient, ServerOption, TokenOption, connect
from lahar.cli.output import OUTPUT_HELP, Output, age, emit, emit_document, manifest_documents, reports_errors, resource_text, table
from lahar.cli.queue import complete_queue, parse_resources
from lahar.errors import BadRequest

__all__ = ["app", "positions", "job_table", "quick_job"]

app = typer.Typer(
    help="Submit, list, inspect and delete vcjobs; ask why one waits.",
    epilog="Examples:\n\nlahar job run -n train -q test --replicas 4 --cpu 1 -- python train.py\n\nlahar job list -q test\n\nlahar job why -n train",
    no_args_is_help=True,
)

JOB_API = "batch.volcano.sh/v1alpha1"
JOB_LABEL = "volcano.sh/job-name"
WAITING = ("Pending", "Inqueue")
NS_HELP = "Namespace of the job."


# --------------------------------------------------------------------- run


def quick_job(name: str, namespace: str, queue: Optional[str], replicas: int, min_available: Optional[int], requests: dict, image: str, command: list[str], priority_class: Optional[str], duration: Optional[str]) -> dict:
    """The vcjob of ``job run``'s quick form: one task ``main`` of ``replicas`` identical pods."""
    container: dict = {"name": "main", "image": image, "resources": {"requests": requests}}
    if command:
        container["command"] = list(command)
    spec: dict = {"tasks": [{"name": "main", "replicas": replicas, "template": {"spec": {"containers": [container], "restartPolicy": "Never"}}}]}
    for key, value in (("queue", queue), ("minAvailable", min_available), ("priorityClassName", priority_class)):
        if value is not None:
            spec[key] = value
    metadata: dict = {"name": name, "namespace": namespace}
    if duration:
        metadata["annotations"] = {"lahar.dev/duration": duration}
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": metadata, "spec": spec}


def _jobs_from_file(filename: str) -> list[dict]:
    """Every vcjob document in a file (``-`` is standard input), checked for shape locally."""
    from lahar.model.manifest import parse_object

    documents = manifest_documents(filename)
    if not documents:
        raise BadRequest(f"{filename}: no documents")
    jobs = []
    for i, document in enumerate(documents):
        obj = parse_object(document, f"{filename}#{i + 1}")
        if obj.kind != "Job":
            raise BadRequest(f"{filename}#{i + 1}: kind {obj.kind}: job run takes vcjobs (kind Job); use lahar apply -f for other kinds")
        jobs.append(obj.dump())
    return jobs


def _requests(cpu: str, memory: Optional[str], gpu: Optional[int], extra: Optional[str]) -> dict:
    requests = {"cpu": cpu} if cpu else {}
    if memory:
        requests["memory"] = memory
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    requests.update(parse_resources(extra) or {})
    return requests


RUN_EPILOG = (
    "Examples:\n\nlahar job run -f job.yaml\n\n"
    "lahar job run -n train -q research --replicas 4 --min 4 --cpu 1 --memory 1Gi -- python train.py --epochs 3\n\n"
    "lahar job run -n sleepy -q test --cpu 2 --duration 30s"
)


@app.command(epilog=RUN_EPILOG)
@reports_errors
def run(
    command: Optional[List[str]] = typer.Argument(None, help="The container's command, after --."),
    filename: Optional[str] = typer.Option(None, "--filename", "-f", help="vcjob YAML file (- for stdin); the other job flags are then ignored."),
    name: Optional[str] = typer.Option(None, "--name", "-n", "-N", help="Job name (required without -f)."),
    queue: Optional[str] = typer.Option(None, "--queue", "-q", help="Queue (default: default).", autocompletion=complete_queue),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="Namespace (default: the file's, else default)."),
    replicas: int = typer.Option(1, "--replicas", "-r", help="Pods in the job."),
    min_available: Optional[int] = typer.Option(None, "--min", "-m", help="Pods that must start together (gang; default: all)."),
    cpu: str = typer.Option("1", "--cpu", help="CPU per pod."),
    memory: Optional[str] = typer.Option(None, "--memory", help="Memory per pod, e.g. 1Gi."),
    gpu: Optional[int] = typer.Option(None, "--gpu", help="GPUs per pod (nvidia.com/gpu)."),
    requests: Optional[str] = typer.Option(None, "--requests", "-R", metavar="NAME=QTY,...", help="Other requests per pod, e.g. example.com/fpga=1."),
    image: str = typer.Option("busybox", "--image", "-i", help="Container image."),
    priority_class: Optional[str] = typer.Option(None, "--priority-class", help="PriorityClass name."),
    duration: Optional[str] = typer.Option(None, "--duration", help="Lahar: each pod succeeds this long after it starts (lahar.dev/duration), e.g. 10m."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Submit nothing: say whether the server would admit the job now and when it is expected to start."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Submit a vcjob from a file, or build one from flags. Prints run job NAME successfully.

    With --dry-run nothing is stored: the server simulates forward from its present state and
    answers 'would start now', 'expected to start in 8m00s' or 'would be refused: ...' (exit 1)."""
    if filename:
        jobs = _jobs_from_file(filename)
    elif not name:
        raise typer.BadParameter("job name cannot be left blank", param_hint="'-n' / '--name'")
    else:
        jobs = [quick_job(name, namespace or "default", queue, replicas, min_available, _requests(cpu, memory, gpu, requests), image, command or [], priority_class, duration)]
    client = connect(server, token)
    for job in jobs:
        if dry_run:
            _report_dry_run(client.dry_run(job, namespace))
            continue
        created = client.create(job, namespace)
        typer.echo(f"run job {created['metadata']['name']} successfully")


def _report_dry_run(answer: dict) -> None:
    typer.echo(f"job {answer['job']}: {answer['summary']} (dry run, nothing submitted)")
    if not answer.get("admitted"):
        raise typer.Exit(1)
    if not answer.get("startsNow"):
        for note in answer.get("assumptions") or []:
            typer.echo(f"  assumes {note}")


# --------------------------------------------------------------------- list


def priority_values(classes: list[dict]) -> tuple[dict[str, int], int]:
    """PriorityClass values by name, and the value of a job that names none (the global default)."""
    values = {c["metadata"]["name"]: int(c.get("value", 0)) for c in classes}
    default = next((int(c.get("value", 0)) for c in classes if c.get("globalDefault")), 0)
    return values, default


def positions(podgroups: list[dict], classes: list[dict]) -> dict[str, tuple[int, int]]:
    """``namespace/name`` of each waiting podgroup -> (position, waiting in its queue), 1-based.
    Waiting: Pending or Inqueue, and fewer than minMember of its pods running."""
    values, default = priority_values(classes)
    by_queue: dict[str, list[tuple]] = {}
    for group in podgroups:
        meta, spec, status = group["metadata"], group.get("spec") or {}, group.get("status") or {}
        if (status.get("phase") or "Pending") not in WAITING or status.get("running", 0) >= max(1, spec.get("minMember", 1)):
            continue
        priority = values.get(spec.get("priorityClassName") or "", default)
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        by_queue.setdefault(spec.get("queue") or "default", []).append((-priority, meta.get("creationTimestamp") or "", key))
    out = {}
    for waiting in by_queue.values():
        for index, (_, _, key) in enumerate(sorted(waiting)):
            out[key] = (index + 1, len(waiting))
    return out


def _pod_counts(pods: list[dict]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for pod in pods:
        meta = pod["metadata"]
        job = (meta.get("labels") or {}).get(JOB_LABEL)
        if job:
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            bucket = counts.setdefault(f"{meta.get('namespace', 'default')}/{job}", {})
            bucket[phase] = bucket.get(phase, 0) + 1
    return counts


def _key(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"


def job_table(client: LaharClient, jobs: list[dict], namespace: Optional[str], wide: bool) -> str:
    """The job table: phase from the podgroup, pod counts by phase, position while waiting."""
    groups = client.list("PodGroup")
    places = positions(groups, client.list("PriorityClass"))
    group_of = {_key(g): g for g in groups}
    pods = _pod_counts(client.list("Pod", namespace))
    rows = []
    for job in jobs:
        key, spec = _key(job), job.get("spec") or {}
        group = group_of.get(key) or {}
        counted = pods.get(key, {})
        place = places.get(key)
        row = [job["metadata"]["name"], spec.get("queue") or "default", (group.get("status") or {}).get("phase") or "Pending"]
        row += [sum(t.get("replicas", 1) for t in spec.get("tasks") or []), (group.get("spec") or {}).get("minMember", spec.get("minAvailable", "-"))]
        row += [counted.get(p, 0) for p in ("Pending", "Running", "Succeeded", "Failed")]
        row += [f"{place[0]}/{place[1]}" if place else "-", age(job["metadata"].get("creationTimestamp"))]
        if wide:
            row += [spec.get("priorityClassName"), _reason_text(group)]
        if namespace is None:
            row.insert(0, job["metadata"].get("namespace", "default"))
        rows.append(row)
    headers = ["Name", "Queue", "Phase", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Position", "Age"]
    headers += ["Priority", "Reason"] if wide else []
    return table(["Namespace", *headers] if namespace is None else headers, rows)


def _reason_text(group: dict) -> str:
    import json

    text = ((group.get("metadata") or {}).get("annotations") or {}).get("lahar.dev/pending-reason")
    if not text:
        return "-"
    try:
        return json.loads(text).get("message", text)
    except ValueError:
        return text


@app.command("list", epilog="Examples:\n\nlahar job list\n\nlahar job list -q test -o wide\n\nlahar job list -A -o json")
@reports_errors
def list_jobs(
    queue: Optional[str] = typer.Option(None, "--queue", "-q", help="Only jobs of this queue.", autocompletion=complete_queue),
    namespace: str = typer.Option("default", "--namespace", help="Namespace to list."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="List jobs in every namespace."),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help=OUTPUT_HELP),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Jobs with their phase, pods per phase and position in their queue (1/3: first of three waiting)."""
    client = connect(server, token)
    ns = None if all_namespaces else namespace
    document = client.list_document("Job", ns)
    items = [j for j in document.get("items", []) if queue is None or ((j.get("spec") or {}).get("queue") or "default") == queue]
    document = {**document, "items": items}
    if not items and output in (Output.TABLE, Output.WIDE):
        typer.echo("No resources found")
        return
    emit(document, output, lambda wide: job_table(client, items, ns, wide))


# --------------------------------------------------------------------- view, why, delete


def _why_text(why: dict, place: Optional[tuple[int, int]]) -> list[str]:
    queue, phase, reason = why.get("queue", "-"), why.get("phase", "Pending"), why.get("reason")
    head = f"job {why['job']} (queue {queue}) is {phase}"
    if not reason:
        return [head + ": it is not waiting" if phase in ("Running", "Completed") else head + ": no reason recorded yet"]
    lines = [head + (f": position {place[0]} of {place[1]} in queue {queue}" if place else "")]
    lines += [f"reason: {reason.get('kind', '-')}", f"  {reason.get('message', '')}"]
    for key, value in reason.items():
        if key not in ("kind", "message", "job", "queue"):
            lines.append(f"  {key}: {', '.join(map(str, value)) if isinstance(value, list) else value}")
    conditions = why.get("conditions") or []
    if conditions:
        lines.append("conditions:")
        lines += [f"  {c.get('type')} ({c.get('reason', '-')}): {c.get('message', '')}" for c in conditions]
    return lines


def _place(client: LaharClient, key: str) -> Optional[tuple[int, int]]:
    return positions(client.list("PodGroup"), client.list("PriorityClass")).get(key)


@app.command(epilog="Examples:\n\nlahar job why -n job2\n\nlahar job why -n job2 -o json")
@reports_errors
def why(
    name: str = typer.Option(..., "--name", "-n", "-N", help="Job name."),
    namespace: str = typer.Option("default", "--namespace", help=NS_HELP),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help="table, json or yaml."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Why a job waits: the scheduler's structured reason (kind and message), its position in
    the queue and its podgroup's conditions."""
    client = connect(server, token)
    answer = client.why(name, namespace)
    place = _place(client, answer.get("job", f"{namespace}/{name}"))
    estimate = client.estimate(name, namespace) if answer.get("reason") else None
    document = {**answer, "position": {"index": place[0], "waiting": place[1]} if place else None, "estimate": estimate}
    emit(document, output, lambda wide: "\n".join(_why_text(answer, place) + _estimate_lines(estimate)))


def _estimate_lines(estimate: Optional[dict]) -> list[str]:
    if not estimate:
        return []
    return [f"estimate: {estimate['summary']}"] + [f"  assumes {note}" for note in estimate.get("assumptions") or []]


def _view_text(client: LaharClient, job: dict) -> str:
    meta, spec = job["metadata"], job.get("spec") or {}
    ns = meta.get("namespace", "default")
    group = client.find("PodGroup", meta["name"], ns) or {}
    pods = client.list("Pod", ns, {JOB_LABEL: meta["name"]})
    fields = [
        ("Name", meta["name"]), ("Namespace", ns), ("Queue", spec.get("queue") or "default"),
        ("Phase", (group.get("status") or {}).get("phase") or "Pending"),
        ("Created", f"{meta.get('creationTimestamp', '-')} ({age(meta.get('creationTimestamp'))} ago)"),
        ("Min available", (group.get("spec") or {}).get("minMember", spec.get("minAvailable", "-"))),
        ("Priority class", spec.get("priorityClassName") or "-"), ("Waiting", _reason_text(group)),
    ]  # fmt: skip
    lines = [f"{label + ':':<16}{value}" for label, value in fields]
    tasks = [[t.get("name", "-"), t.get("replicas", 1), _image(t), _task_requests(t)] for t in spec.get("tasks") or []]
    lines += ["Tasks:", _indent(table(["Name", "Replicas", "Image", "Requests"], tasks))]
    pod_rows = [[p["metadata"]["name"], (p.get("status") or {}).get("phase") or "Pending", (p.get("spec") or {}).get("nodeName")] for p in pods]
    lines += ["Pods:", _indent(table(["Name", "Phase", "Node"], pod_rows))]
    return "\n".join(lines + _event_lines(client, f"{ns}/{meta['name']}"))


def _image(task: dict) -> str:
    containers = ((task.get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("image") or "-" for c in containers) or "-"


def _task_requests(task: dict) -> str:
    containers = ((task.get("template") or {}).get("spec") or {}).get("containers") or []
    total: dict = {}
    for container in containers:
        total.update((container.get("resources") or {}).get("requests") or {})
    return resource_text(total)


def _event_lines(client: LaharClient, key: str) -> list[str]:
    events = [e for e in client.list("LaharEvent") if (e.get("involvedObject") or {}).get("name") == key]
    events.sort(key=lambda e: e.get("timestamp") or 0)
    if not events:
        return ["Events:        <none>"]
    rows = [[e.get("type"), e.get("reason"), e.get("message")] for e in events]
    return ["Events:", _indent(table(["Type", "Reason", "Message"], rows))]


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


@app.command(epilog="Examples:\n\nlahar job view -n job1\n\nlahar job view -n job1 -o yaml")
@reports_errors
def view(
    name: str = typer.Option(..., "--name", "-n", "-N", help="Job name."),
    namespace: str = typer.Option("default", "--namespace", help=NS_HELP),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help="table, json or yaml."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """A job in detail: queue, phase, tasks, pods and where they run, why it waits, its events."""
    client = connect(server, token)
    job = client.get("Job", name, namespace)
    if output in (Output.JSON, Output.YAML):
        emit_document(job, output)
        return
    typer.echo(_view_text(client, job))


@app.command(epilog="Example: lahar job delete -n job1")
@reports_errors
def delete(
    name: str = typer.Option(..., "--name", "-n", "-N", help="Job name."),
    namespace: str = typer.Option("default", "--namespace", help=NS_HELP),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Delete a job with its podgroup and pods. Prints delete job NAME successfully."""
    connect(server, token).delete("Job", name, namespace)  # the server deletes its podgroup and pods with it
    typer.echo(f"delete job {name} successfully")

