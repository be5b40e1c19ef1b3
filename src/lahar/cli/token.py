"""``lahar token``: create, list and revoke the bearer tokens of a Lahar server (admins only).

Why a command of its own: a server hands out its first admin token in ``$LAHAR_HOME/token``;
every other user needs a token made for them, and a token that leaks must be revoked without
restarting anything. The server keeps only a hash of each secret, so ``create`` is the one and
only time a token is shown: it goes alone on stdout (``TOKEN=$(lahar token create ...)`` works)
and a note about it on stderr.

``revoke`` takes a token id (``lahar token list`` shows them) or a user name; a user name
revokes every live token of that user. Revoking is idempotent: a revoked token stays listed as
revoked. Non-admins get the server's 403 message and exit code 1, like every other command.
"""

from __future__ import annotations

from typing import Optional

import typer

from lahar.cli.client import LaharClient, ServerError, ServerOption, TokenOption, connect
from lahar.cli.output import OUTPUT_HELP, Output, emit, emit_document, reports_errors, table
from lahar.errors import NotFound

__all__ = ["app", "TOKENS_PATH"]

TOKENS_PATH = "/lahar/v1/tokens"

app = typer.Typer(
    help="Create, list and revoke bearer tokens (admins only).",
    epilog="Examples:\n\nlahar token create --user alice --groups ml,vision\n\nlahar token list\n\nlahar token revoke alice",
    no_args_is_help=True,
)


def _groups(text: Optional[str]) -> list[str]:
    """``ml,vision`` as a sorted list without blanks or repeats."""
    groups = sorted({g.strip() for g in (text or "").split(",") if g.strip()})
    for group in groups:
        if not all(c.isalnum() or c in "-_.@:" for c in group):
            raise typer.BadParameter(f'"{group}" is not a group name: use letters, digits and - _ . @ :', param_hint="--groups")
    return groups


@app.command(epilog="Examples:\n\nlahar token create --user alice --groups ml,vision\n\nlahar token create --user ops --admin\n\nexport LAHAR_TOKEN=$(lahar token create --user bob)")
@reports_errors
def create(
    user: str = typer.Option(..., "--user", "-u", help="The user the token stands for (letters, digits, - _ . @)."),
    groups: Optional[str] = typer.Option(None, "--groups", "-g", help="Comma-separated groups, as named in ACLs (group:ml)."),
    admin: bool = typer.Option(False, "--admin", help="Give the token the admin role (everything is allowed)."),
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help="table prints the token alone; json or yaml the whole answer."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Create a token. The token is printed once, now: the server keeps only its hash."""
    made = connect(server, token).request("POST", TOKENS_PATH, {"user": user, "groups": _groups(groups), "admin": admin})
    if output in (Output.JSON, Output.YAML):
        emit_document(made, output)
        return
    typer.echo(made["token"])
    role = "admin " if made.get("admin") else ""
    groups_note = f" (groups {', '.join(made.get('groups') or [])})" if made.get("groups") else ""
    typer.echo(f"created {role}token {made['id']} for user {made['user']}{groups_note}; it is shown only this once", err=True)


@app.command("list", epilog="Examples:\n\nlahar token list\n\nlahar token list -o json")
@reports_errors
def list_tokens(
    output: Output = typer.Option(Output.TABLE, "--output", "-o", help=OUTPUT_HELP),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Every token: id, user, groups, role and whether it is revoked (never the secret)."""
    document = connect(server, token).request("GET", TOKENS_PATH)
    items = sorted(document.get("items", []), key=lambda t: (t.get("user", ""), t.get("id", "")))
    emit({**document, "items": items}, output, lambda wide: token_table(items))


def token_table(items: list[dict]) -> str:
    rows = [[t["id"], t["user"], ",".join(t.get("groups") or []) or "-", "admin" if t.get("admin") else "user", "yes" if t.get("revoked") else "no"] for t in items]
    return table(["ID", "User", "Groups", "Role", "Revoked"], rows)


@app.command(epilog="Examples:\n\nlahar token revoke 3f9a1c0b7d2e   (one token, by id)\n\nlahar token revoke alice   (every token of user alice)")
@reports_errors
def revoke(
    name: str = typer.Argument(..., metavar="ID|USER", help="A token id (see lahar token list) or a user name (all their live tokens)."),
    server: ServerOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
) -> None:
    """Revoke a token by id, or every live token of a user. Requests with a revoked token get 401."""
    client = connect(server, token)
    for token_id in _targets(client, name):
        revoked = client.request("DELETE", f"{TOKENS_PATH}/{token_id}")
        typer.echo(f"token/{revoked['id']} revoked (user {revoked['user']})")


def _targets(client: LaharClient, name: str) -> list[str]:
    """The ids to revoke: ``name`` itself when it is a token id, else the user's live tokens."""
    items = client.request("GET", TOKENS_PATH).get("items", [])
    if any(t["id"] == name for t in items):
        return [name]
    ids = sorted(t["id"] for t in items if t["user"] == name and not t.get("revoked"))
    if ids:
        return ids
    if any(t["user"] == name for t in items):
        raise ServerError(f'every token of user "{name}" is already revoked', 404, NotFound.reason)
    raise ServerError(f'no token has the id "{name}" and no user is called "{name}"', 404, NotFound.reason, hint="lahar token list shows ids and users")
