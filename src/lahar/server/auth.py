"""Authentication and authorisation for the HTTP API.

Every request except ``/healthz`` and the dashboard's static files must carry a valid bearer
token (``lahar.security``); the principal is kept on the request. Tokens are stored in the
store as ``Token`` objects holding only the hash of their secret. A new server with no token
creates an admin token, writes it with mode 0600 to ``$LAHAR_HOME/token`` (``~/.lahar/token``,
where the CLI looks) and prints where it is, once.

What a principal may do is decided by the service (``ApiService.authorize``) from the queue
ACLs; every change leaves an audit event naming who did what.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse

from lahar.errors import BadRequest, LaharError, NotFound, Unauthorized
from lahar.security import INVALID_TOKEN, Principal, TokenRecord, authenticate, bearer_token, new_token
from lahar.server.bodies import PathOnlyRoute

__all__ = ["TokenStore", "AuthMiddleware", "Credentials", "as_caller", "bootstrap_admin_token", "is_loopback", "token_request", "PUBLIC_PATHS"]

TOKEN_KIND = "Token"
MAX_GROUPS = 64
PUBLIC_PATHS = ("/healthz", "/ui", "/favicon.ico")


class TokenStore:
    """Token records kept in the store (kind ``Token``, named by token id)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def lookup(self, token_id: str) -> TokenRecord | None:
        try:
            body = self.store.get(TOKEN_KIND, token_id)
        except (NotFound, LaharError):
            return None
        return _record(body)

    def create(self, user: str, groups: list[str], admin: bool) -> tuple[str, TokenRecord]:
        if not user or len(user) > 253 or not all(c.isalnum() or c in "-_.@" for c in user):
            raise BadRequest(f'user: Invalid value: "{user[:200]}": use letters, digits and - _ . @ (at most 253)')
        token, record = new_token(user, groups, admin)
        self.store.create({"apiVersion": "lahar.dev/v1alpha1", "kind": TOKEN_KIND, "metadata": {"name": record.id}, **_body(record)})
        return token, record

    def revoke(self, token_id: str) -> TokenRecord:
        body = self.store.get(TOKEN_KIND, token_id)
        body["revoked"] = True
        body["metadata"].pop("resourceVersion", None)
        return _record(self.store.update(body))

    def list(self) -> list[dict]:
        return [{"id": r.id, "user": r.user, "groups": r.groups, "admin": r.admin, "revoked": r.revoked} for r in map(_record, self.store.list(TOKEN_KIND)[0])]

    def empty(self) -> bool:
        return not self.store.list(TOKEN_KIND)[0]


def token_request(body: dict) -> tuple[str, list[str], bool]:
    """``(user, groups, admin)`` from a token-create body, each field checked: ``groups`` is a
    list of names or one comma-separated string; ``admin`` must be a real boolean (the string
    ``"false"`` must never make an admin). Raises ``BadRequest`` naming the field."""
    user, groups, admin = body.get("user", ""), body.get("groups") or [], body.get("admin", False)
    if not isinstance(user, str):
        raise BadRequest(f"user: Invalid value: {json.dumps(user)[:200]}: must be a string")
    if isinstance(groups, str):
        groups = [g.strip() for g in groups.split(",") if g.strip()]
    if not isinstance(groups, list) or not all(isinstance(g, str) and g and all(c.isalnum() or c in "-_.@:" for c in g) for g in groups):
        raise BadRequest(f"groups: Invalid value: {json.dumps(groups)[:200]}: must be a list of group names (letters, digits and - _ . @ :)")
    if len(groups) > MAX_GROUPS:
        raise BadRequest(f"groups: Too many: {len(groups)}: at most {MAX_GROUPS}")
    if not isinstance(admin, bool):
        raise BadRequest(f"admin: Invalid value: {json.dumps(admin)[:200]}: must be true or false")
    return user, groups, admin


def _body(record: TokenRecord) -> dict:
    data = asdict(record)
    return {"user": data["user"], "groups": data["groups"], "admin": data["admin"], "secretHash": data["secret_hash"], "revoked": data["revoked"]}


def _record(body: dict) -> TokenRecord:
    return TokenRecord(body["metadata"]["name"], body["user"], list(body.get("groups") or []), bool(body.get("admin")), body.get("secretHash", ""), bool(body.get("revoked")))


def bootstrap_admin_token(tokens: TokenStore, home: Path) -> Path | None:
    """On a store without tokens, create an admin token and write it (0600) to ``home/token``."""
    if not tokens.empty():
        return None
    token, _ = tokens.create("admin", ["admins"], admin=True)
    home.mkdir(parents=True, exist_ok=True)
    path = home / "token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    os.chmod(path, 0o600)
    return path


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Credentials:
    """A write request's bearer credentials, checked once, where it is cheapest.

    The routes of the hot writes (a create, replace or patch of an object) check them in the
    write group that runs the write, where reading the token is a read in the group's open
    batch, not a transaction of its own on the event loop. Any other answer checks them first
    (``AuthMiddleware``), so a bad token is still refused before anything else is said.

    It stands in for the ``Principal`` on the request: reading any of its fields checks it, so
    a route that uses it unawares still sees the caller, or ``Unauthorized``."""

    __slots__ = ("header", "lookup", "_principal", "_refusal")

    def __init__(self, header: str | None, lookup: Callable[[str], TokenRecord | None]) -> None:
        self.header, self.lookup = header, lookup
        self._principal: Principal | None = None  # once checked, one of these two is set
        self._refusal: LaharError | None = None

    def principal(self) -> Principal:
        """The caller; ``Unauthorized`` for a missing, malformed, unknown or revoked token."""
        if self._principal is None and self._refusal is None:
            try:
                self._principal = authenticate(self.header, self.lookup)
            except LaharError as exc:
                self._refusal = exc
        if self._refusal is not None:
            raise self._refusal
        assert self._principal is not None
        return self._principal

    def refusal(self) -> LaharError | None:
        """Why the credentials are refused (checking them now if no one has), or None."""
        try:
            self.principal()
        except LaharError as exc:
            return exc
        return None

    @property
    def user(self) -> str:
        return self.principal().user

    @property
    def groups(self) -> tuple[str, ...]:
        return self.principal().groups

    @property
    def admin(self) -> bool:
        return self.principal().admin

    def describe(self) -> str:
        return self.principal().describe()


def as_caller(who: Any) -> Principal | None:
    """The principal a request's ``who`` stands for (``Credentials`` are checked here)."""
    return who.principal() if isinstance(who, Credentials) else who


def _refused(exc: LaharError) -> JSONResponse:
    return JSONResponse(exc.to_status(), status_code=exc.http_status, headers={"WWW-Authenticate": "Bearer"})


class SeenTokens:
    """What this server has read of token records, to refuse a write's credentials before its
    write group when they cannot be valid: a token's secret never changes, and a revoked token
    is never valid again. It never accepts: credentials it does not refuse are still checked
    against the stored record, in the write group. Only records read from the store are kept,
    so it holds no more entries than there are tokens."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens
        self._seen: dict[str, TokenRecord] = {}  # by token id, as last read

    def lookup(self, token_id: str) -> TokenRecord | None:
        """The stored record (``TokenStore.lookup``), remembered."""
        record = self.tokens.lookup(token_id)
        if record is None:
            self._seen.pop(token_id, None)
        else:
            self._seen[token_id] = record
        return record

    def known(self, token_id: str, secret: str) -> bool:
        """True for a token seen stored, live, with this secret; False for one never seen;
        ``Unauthorized`` for one seen revoked or with another secret."""
        seen = self._seen.get(token_id)
        if seen is None:
            return False
        if not seen.admits(secret):
            raise Unauthorized(INVALID_TOKEN)
        return True


class AuthMiddleware:
    """Every HTTP request but the public paths carries a valid bearer token; its principal is
    kept on the request (``request.state.principal``).

    A request for one of ``routes``' ``PathOnlyRoute`` routes (the hot writes) whose token
    this server has seen stored, live and with this secret (``SeenTokens``) gets its
    ``Credentials`` there instead, unchecked: the route checks them in its write group. If
    the app answers such a request, or fails, before they are checked, they are checked then,
    before anything is sent: refused, the 401 is the whole answer. Credentials that cannot be
    valid are refused here, so they never take the writer's locks.

    A plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` runs the rest of the app in a
    task of its own and copies the response through a stream, which cost about 0.5 ms of CPU a
    request (measured: an authenticated vcjob create, in-process, 1.32 against 0.75 ms without
    authentication)."""

    def __init__(self, app: Any, tokens: TokenStore, routes: list | None = None) -> None:
        self.app = app
        self.seen = SeenTokens(tokens)
        self.routes = routes if routes is not None else []
        self._checked_in_route: dict[str, re.Pattern] | None = None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = request.url.path
        if path == "/healthz" or path.startswith(("/ui", "/favicon")):
            await self.app(scope, receive, send)
            return
        header = request.headers.get("authorization")
        try:
            deferred = self._checks_in_route(scope["method"], path) and self.seen.known(*bearer_token(header))
            request.state.principal = Credentials(header, self.seen.lookup) if deferred else authenticate(header, self.seen.lookup)
        except LaharError as exc:
            await _refused(exc)(scope, receive, send)
            return
        if deferred:
            await _answer_checked(self.app, request.state.principal, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _checks_in_route(self, method: str, path: str) -> bool:
        if self._checked_in_route is None:  # the routes are all there by the first request
            self._checked_in_route = _path_only_patterns(self.routes)
        pattern = self._checked_in_route.get(method)
        return pattern is not None and pattern.fullmatch(path) is not None


def _path_only_patterns(routes: list) -> dict[str, re.Pattern]:
    """A pattern for each method, matching the paths of the ``PathOnlyRoute`` routes among
    ``routes`` that take it (their own path patterns, without their named groups)."""
    paths: dict[str, list[str]] = {}
    for route in routes:
        if isinstance(route, PathOnlyRoute):
            bare = re.sub(r"\(\?P<\w+>", "(?:", route.path_regex.pattern.removeprefix("^").removesuffix("$"))
            for method in route.methods or ():
                paths.setdefault(method, []).append(f"(?:{bare})")
    return {method: re.compile("|".join(found)) for method, found in paths.items()}


async def _answer_checked(app: Any, credentials: Credentials, scope: dict, receive: Any, send: Any) -> None:
    """``app``'s answer, unless ``credentials`` are refused: then the 401 alone."""
    started = refused = False

    async def send_checked(message: dict) -> None:
        nonlocal started, refused
        if refused:
            return  # the rest of the app's answer
        if message["type"] == "http.response.start":
            refusal = credentials.refusal()
            if refusal is not None:
                refused = True
                await _send_whole(_refused(refusal), send)
                return
            started = True
        await send(message)

    try:
        await app(scope, receive, send_checked)
    except Exception:
        if refused:
            return  # the 401 has been sent whole
        refusal = None if started else credentials.refusal()
        if refusal is None:
            raise
        await _send_whole(_refused(refusal), send)


async def _send_whole(response: JSONResponse, send: Any) -> None:
    await send({"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
