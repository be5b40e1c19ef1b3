"""Who may do what: bearer tokens, principals, and queue access-control lists. Pure functions.

Tokens look like ``lahar_<id>_<secret>``: the id finds the stored record, the secret is checked
against its SHA-256 hash (tokens are 256-bit random values, so an unsalted hash is as strong as
a password hash and comparisons are constant-time). Only the hash is ever stored.

Queue ACLs live in annotations, so a Queue manifest stays valid Kubernetes YAML:

- ``lahar.dev/submit-acl``: who may submit jobs to the queue;
- ``lahar.dev/admin-acl``: who may operate it (open, close, suspend, resume, update, delete).

An ACL is a comma-separated list of entries: ``alice`` (a user), ``group:ml`` (a group) or ``*``
(everyone). ACLs are inherited down the hierarchy: an entry on a queue also admits to all its
descendants. A queue with no submit ACL on itself or any ancestor accepts every authenticated
user; operating a queue needs an admin ACL entry or the admin role. Admins may do everything.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Callable, Iterable

from lahar.errors import Forbidden, Unauthorized
from lahar.model.queue import ROOT, Queue

__all__ = [
    "Principal",
    "TokenRecord",
    "new_token",
    "hash_secret",
    "authenticate",
    "parse_acl",
    "acl_admits",
    "check_submit",
    "check_admin",
    "SUBMIT_ACL",
    "ADMIN_ACL",
    "OWNER",
    "ServerPrincipal",
    "bearer_token",
    "INVALID_TOKEN",
    "server_principal",
]

SUBMIT_ACL = "lahar.dev/submit-acl"
ADMIN_ACL = "lahar.dev/admin-acl"
OWNER = "lahar.dev/owner"
_PREFIX = "lahar_"
INVALID_TOKEN = "invalid or revoked token"


@dataclass(frozen=True)
class Principal:
    user: str
    groups: tuple[str, ...] = ()
    admin: bool = False

    def describe(self) -> str:
        groups = f" (groups {', '.join(self.groups)})" if self.groups else ""
        return f"{'admin ' if self.admin else ''}user {self.user}{groups}"


@dataclass(frozen=True)
class ServerPrincipal(Principal):
    """The server acting on its own account (``lahar server --demo`` seeding its objects): an
    admin whose user name no token can carry (a token's user cannot hold ``:``)."""

    doing: str = ""

    def describe(self) -> str:
        return f"the server ({self.doing})"


def server_principal(doing: str) -> ServerPrincipal:
    return ServerPrincipal("system:lahar-server", admin=True, doing=doing)


@dataclass
class TokenRecord:
    id: str
    user: str
    groups: list[str] = field(default_factory=list)
    admin: bool = False
    secret_hash: str = ""
    revoked: bool = False

    def principal(self) -> Principal:
        return Principal(self.user, tuple(self.groups), self.admin)

    def admits(self, secret: str) -> bool:
        """Whether ``secret`` is this token's, and the token is not revoked."""
        return not self.revoked and hmac.compare_digest(self.secret_hash, hash_secret(secret))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token(user: str, groups: Iterable[str] = (), admin: bool = False) -> tuple[str, TokenRecord]:
    """A fresh token (shown once) and the record to store (which holds only the hash)."""
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    record = TokenRecord(token_id, user, sorted(set(groups)), admin, hash_secret(secret))
    return f"{_PREFIX}{token_id}_{secret}", record


def bearer_token(header: str | None) -> tuple[str, str]:
    """``(token id, secret)`` from an ``Authorization: Bearer <token>`` header (either may be
    empty); ``Unauthorized`` when there is no header or it is not a Lahar bearer token."""
    if not header:
        raise Unauthorized("authentication required: send Authorization: Bearer <token> (see `lahar token create`)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(_PREFIX):
        raise Unauthorized("malformed credentials: expected Authorization: Bearer lahar_<id>_<secret>")
    token_id, _, secret = token[len(_PREFIX) :].partition("_")
    return token_id, secret


def authenticate(header: str | None, lookup: Callable[[str], TokenRecord | None]) -> Principal:
    """The principal behind an ``Authorization: Bearer <token>`` header, or ``Unauthorized``."""
    token_id, secret = bearer_token(header)
    record = lookup(token_id) if token_id and secret else None
    if record is None or not record.admits(secret):
        raise Unauthorized(INVALID_TOKEN)
    return record.principal()


def parse_acl(text: str | None) -> tuple[set[str], set[str], bool]:
    """(users, groups, everyone) from ``alice, group:ml, *``."""
    users, groups, everyone = set(), set(), False
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        if entry == "*":
            everyone = True
        elif entry.startswith("group:"):
            groups.add(entry[len("group:") :].strip())
        else:
            users.add(entry)
    return users, groups, everyone


def acl_admits(text: str | None, who: Principal) -> bool:
    users, groups, everyone = parse_acl(text)
    return everyone or who.user in users or bool(groups & set(who.groups))


def _path(queue: str, queues: Callable[[str], Queue | None]) -> list[Queue]:
    """The queue and its ancestors, nearest first (cycles cut)."""
    out, seen = [], set()
    current = queues(queue)
    while current is not None and current.name not in seen:
        seen.add(current.name)
        out.append(current)
        if current.name == ROOT:
            break
        current = queues(current.parent_name or ROOT)
    return out


def check_submit(who: Principal, queue: str, queues: Callable[[str], Queue | None]) -> None:
    """Raise ``Forbidden`` unless ``who`` may submit to ``queue``."""
    if who.admin:
        return
    path = _path(queue, queues)
    acls = [q.annotations.get(SUBMIT_ACL) for q in path if q.annotations.get(SUBMIT_ACL) is not None]
    if not acls or any(acl_admits(acl, who) for acl in acls):
        return
    if any(acl_admits(q.annotations.get(ADMIN_ACL), who) for q in path):
        return
    raise Forbidden(f"{who.describe()} may not submit to queue {queue}: not admitted by {SUBMIT_ACL} ({'; '.join(acls)})")


def check_admin(who: Principal, queue: str, queues: Callable[[str], Queue | None], action: str) -> None:
    """Raise ``Forbidden`` unless ``who`` may operate ``queue`` (``action`` names the attempt)."""
    if who.admin:
        return
    path = _path(queue, queues)
    if any(acl_admits(q.annotations.get(ADMIN_ACL), who) for q in path):
        return
    acls = [f"{q.name}: {q.annotations.get(ADMIN_ACL)}" for q in path if q.annotations.get(ADMIN_ACL)]
    detail = "; ".join(acls) if acls else "no admin ACL on the queue or its ancestors"
    raise Forbidden(f"{who.describe()} may not {action} queue {queue}: not admitted by {ADMIN_ACL} ({detail})")
