"""The CLI's one door to a Lahar server: ``LaharClient`` over httpx.

Every client command builds one ``LaharClient`` from ``--server`` / ``LAHAR_SERVER`` and
``--token`` / ``LAHAR_TOKEN`` (else the admin token a local server wrote to
``$LAHAR_HOME/token``), so the URL scheme, the bearer header and the translation of failures
live here and nowhere else:

* a Kubernetes ``Status`` answer (4xx / 5xx) becomes ``ServerError`` (exit 1) carrying the
  server's ``message`` as given and every ``details.causes[].message`` (one field error each);
* a server that cannot be reached becomes ``Unreachable`` (exit 3) naming the URL.

The route table mirrors ``lahar.server.app.RESOURCES`` (a test keeps the two equal) so that the
CLI does not import FastAPI just to spell a path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import httpx
import typer

from lahar.errors import LaharError

__all__ = [
    "LaharClient",
    "ServerError",
    "Unreachable",
    "Route",
    "ROUTES",
    "ServerOption",
    "TokenOption",
    "DEFAULT_SERVER",
    "connect",
    "token_from_home",
]

DEFAULT_SERVER = "http://127.0.0.1:8080"
EVENT_KIND = "LaharEvent"


@dataclass(frozen=True)
class Route:
    """Where a kind lives on the API: ``/apis/<group_version>[/namespaces/<ns>]/<plural>``."""

    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        prefix = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{namespace}"
        path = f"{prefix}/{self.plural}"
        return f"{path}/{name}" if name else path


ROUTES: dict[str, Route] = {
    "Queue": Route("scheduling.volcano.sh/v1beta1", "queues", False),
    "PodGroup": Route("scheduling.volcano.sh/v1beta1", "podgroups", True),
    "Job": Route("batch.volcano.sh/v1alpha1", "jobs", True),
    "Command": Route("bus.volcano.sh/v1alpha1", "commands", True),
    "PriorityClass": Route("scheduling.k8s.io/v1", "priorityclasses", False),
    "Node": Route("v1", "nodes", False),
    "Pod": Route("v1", "pods", True),
    EVENT_KIND: Route("lahar.dev/v1alpha1", "events", False),
}


class ServerError(LaharError):
    """The server answered with an error: its message as given, plus one line per field error."""

    def __init__(self, message: str, code: int, reason: str = "", causes: list[str] | None = None, hint: str = "") -> None:
        super().__init__(message)
        self.code, self.reason = code, reason
        self.causes = list(causes or [])
        self.hint = hint


class Unreachable(LaharError):
    """No answer at all from the server (refused, timed out, name unknown): exit code 3."""

    exit_code = 3

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"cannot reach the Lahar server at {url}: {detail}")
        self.url = url
        self.hint = "start one with `lahar server` (or point --server / LAHAR_SERVER at a running one)"


def token_from_home() -> str | None:
    """The token a local server wrote to ``$LAHAR_HOME/token`` (``~/.lahar/token``), if readable."""
    home = Path(os.environ.get("LAHAR_HOME") or Path.home() / ".lahar")
    try:
        text = (home / "token").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def _check_url(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise typer.BadParameter(f'"{value}" is not an http:// or https:// URL with a host')
    return value.rstrip("/")


ServerOption = Annotated[
    str,
    typer.Option(
        "--server",
        envvar="LAHAR_SERVER",
        callback=_check_url,
        help="Lahar server URL.",
        rich_help_panel="Connection",
    ),
]
TokenOption = Annotated[
    Optional[str],
    typer.Option(
        "--token",
        envvar="LAHAR_TOKEN",
        help="Bearer token (default: the token in $LAHAR_HOME/token, ~/.lahar/token).",
        rich_help_panel="Connection",
        show_default=False,
    ),
]


def connect(server: str, token: str | None) -> "LaharClient":
    """The client for a command's ``--server`` and ``--token``."""
    return LaharClient(server, token if token else token_from_home())


class LaharClient:
    """Typed calls on the Lahar HTTP API. Every method raises ``ServerError`` or ``Unreachable``."""

    def __init__(self, server: str = DEFAULT_SERVER, token: str | None = None, timeout: float = 15.0, transport: Any = None) -> None:
        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout, transport=transport)

    # ----------------------------------------------------------------- plumbing

    def request(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        try:
            response = self.http.request(method, path, json=body, params=params)
        except httpx.TransportError as exc:
            raise Unreachable(self.server, _transport_detail(exc)) from None
        except httpx.InvalidURL as exc:
            raise Unreachable(self.server, f"not a usable URL ({exc})") from None
        if response.status_code >= 400:
            raise _server_error(response)
        try:
            return response.json() if response.content else {}
        except ValueError:
            raise ServerError(f"{self.server}{path} did not answer with JSON: is it a Lahar server?", response.status_code) from None

    # ----------------------------------------------------------------- objects

    def list(self, kind: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> list[dict]:
        """Every object of ``kind`` (in ``namespace``; in all namespaces when None)."""
        params = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else None
        return self.list_document(kind, namespace, params).get("items", [])

    def list_document(self, kind: str, namespace: str | None = None, params: dict | None = None) -> dict:
        """The server's ``<Kind>List`` document, as it sent it."""
        return self.request("GET", ROUTES[kind].path(namespace), params=params)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        return self.request("GET", ROUTES[kind].path(namespace or "default", name))

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """Like ``get``, but None when there is no such object."""
        try:
            return self.get(kind, name, namespace)
        except ServerError as exc:
            if exc.code == 404:
                return None
            raise

    def create(self, document: dict, namespace: str | None = None) -> dict:
        kind = document["kind"]
        ns = namespace or (document.get("metadata") or {}).get("namespace") or "default"
        return self.request("POST", ROUTES[kind].path(ns), document)

    def replace(self, document: dict, namespace: str | None = None) -> dict:
        kind, meta = document["kind"], document.get("metadata") or {}
        ns = namespace or meta.get("namespace") or "default"
        return self.request("PUT", ROUTES[kind].path(ns, meta["name"]), document)

    def patch(self, kind: str, name: str, patch: dict, namespace: str | None = None) -> dict:
        """A JSON merge patch: only the fields given change, on the object as stored now."""
        return self.request("PATCH", ROUTES[kind].path(namespace or "default", name), patch)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> dict:
        return self.request("DELETE", ROUTES[kind].path(namespace or "default", name))

    # ----------------------------------------------------------------- Lahar's own routes

    def queue_action(self, name: str, action: str) -> dict:
        """``open``, ``close``, ``suspend`` or ``resume``: ``{"queue": {...}, "events": [...]}``."""
        return self.request("POST", f"{ROUTES['Queue'].path()}/{name}/{action}")

    def why(self, name: str, namespace: str = "default") -> dict:
        return self.request("GET", f"/lahar/v1/namespaces/{namespace}/jobs/{name}/why")

    def dry_run(self, document: dict, namespace: str | None = None) -> dict:
        """Would the server admit this vcjob now, and when would it start? Nothing is stored."""
        ns = namespace or (document.get("metadata") or {}).get("namespace") or "default"
        return self.request("POST", f"/lahar/v1/namespaces/{ns}/jobs/dry-run", document)

    def estimate(self, name: str, namespace: str = "default") -> dict:
        return self.request("GET", f"/lahar/v1/namespaces/{namespace}/jobs/{name}/estimate")

    def tree(self) -> list[dict]:
        return self.request("GET", "/lahar/v1/queues/tree").get("queues", [])

    def close(self) -> None:
        self.http.close()


def _transport_detail(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in str(exc).lower() or not str(exc) else str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    return str(exc) or type(exc).__name__


def _server_error(response: httpx.Response) -> ServerError:
    try:
        status = response.json()
    except ValueError:
        status = None
    if not isinstance(status, dict) or "message" not in status:
        text = response.text.strip()[:300]
        return ServerError(f"HTTP {response.status_code}: {text or response.reason_phrase}", response.status_code)
    causes = [c.get("message") or f"{c.get('field')}: {c.get('reason')}" for c in (status.get("details") or {}).get("causes", [])]
    hint = ""
    if response.status_code == 401:
        hint = "pass --token or set LAHAR_TOKEN; a local server writes its admin token to ~/.lahar/token ($LAHAR_HOME/token)"
    return ServerError(str(status["message"]), response.status_code, str(status.get("reason", "")), causes, hint)
