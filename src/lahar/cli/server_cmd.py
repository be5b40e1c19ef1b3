"""``lahar server``: the API server with its store, controllers and scheduling loop."""

from __future__ import annotations

from typing import Optional

import typer

from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest


def server(
    db: Optional[str] = typer.Option(None, "--db", help="Database: a SQLite file path (default ~/.lahar/lahar.db), memory://, or postgresql://..."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="Port to listen on."),
    period: str = typer.Option("1s", "--period", help="Time between scheduling cycles."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help="Scheduler configuration file or bundled name (default, capacity, capacity-hierarchy, volcano)."),
    demo: bool = typer.Option(False, "--demo", help="Load a demo cluster (nodes, queues, jobs) into an empty database."),
    no_auth: bool = typer.Option(False, "--no-auth", help="Accept requests without a token (only on a loopback address)."),
    runtime: str = typer.Option("simulated", "--runtime", help="simulated: a task ends lahar.dev/duration after it starts; local: each task's container command runs as a process on this machine (logs in ~/.lahar/logs)."),
) -> None:
    """Start the Lahar server: HTTP API, durable store, controllers and the scheduler.

    Every accepted write is on disk before the answer. Stop it with Ctrl-C; start it again on
    the same --db and it resumes where it stopped. Every request needs a bearer token: on its
    first start the server creates an admin token in ~/.lahar/token (the CLI reads it there).
    """
    from lahar.server.main import build_server, serve
    from lahar.sim.inputs import resolve_config
    from lahar.store import default_db_path, open_store

    try:
        seconds = parse_duration(period)
    except DurationError as exc:
        raise BadRequest(f"--period: {exc}") from None
    if seconds <= 0:
        raise BadRequest("--period: must be greater than 0")
    from lahar.server.auth import is_loopback

    if no_auth and not is_loopback(host):
        raise BadRequest(f"--no-auth is only allowed on a loopback address, not --host {host}")
    from lahar.server.runtime import RUNTIMES

    if runtime not in RUNTIMES:
        raise BadRequest(f'--runtime: Unsupported value: "{runtime}": supported values: {", ".join(RUNTIMES)}')
    conf = resolve_config(config, [])
    store = open_store(db or str(default_db_path()))
    from lahar.server.leader import file_lease_for

    try:
        lease = file_lease_for(store)  # one server per SQLite file
    except Exception:
        store.close()
        raise
    built = build_server(store, conf, seconds, auth=not no_auth, runtime=runtime)
    if built.admin_token_path is not None:
        typer.echo(f"created the admin token; it is in {built.admin_token_path} (mode 0600), where the lahar CLI finds it", err=True)
    if demo:
        _load_demo(built.service)
    from lahar.store.postgres import is_postgres_url, public_url

    shown = public_url(db) if db and is_postgres_url(db) else (db or default_db_path())
    typer.echo(f"lahar server listening on http://{host}:{port} (database: {shown}); dashboard: http://{host}:{port}/ui/", err=True)
    try:
        serve(built, host, port)
    finally:
        if lease is not None:
            lease.release()


def _load_demo(service) -> None:
    """Create the bundled demo objects, unless the database already holds nodes."""
    from importlib import resources

    from lahar.model.manifest import load_objects
    from lahar.security import server_principal

    if service.list("Node")[0]:
        typer.echo("--demo: the database already holds nodes; nothing loaded", err=True)
        return
    text = (resources.files("lahar") / "examples" / "demo.yaml").read_text(encoding="utf-8")
    seeder = server_principal("lahar server --demo")  # audited as the server's, not anonymous
    for obj in load_objects(text, "demo.yaml"):
        service.create(obj.dump(), who=seeder)
    typer.echo("--demo: loaded 4 nodes, 3 queues and 4 jobs", err=True)
