"""``lahar token`` against a real server with authentication on: an admin hands tokens out,
users work with them, a non-admin is refused with the server's message, and a revoked token
stops working at once. Also where the CLI finds its token: ``--token``, ``LAHAR_TOKEN``,
``$LAHAR_HOME/token`` and ``~/.lahar/token``. Users here are called ``tk-...``."""

from __future__ import annotations

import json

import yaml
from test_queue_cli import flat, make_cli, rows, shared_server, subprocess_cli

import pytest


@pytest.fixture(scope="module")
def live():
    return shared_server()


@pytest.fixture(scope="module")
def cli(live):
    return make_cli(live)


def create(cli, *args: str) -> str:
    result = cli("token", "create", *args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lahar_"), result.stdout
    return lines[0]


def test_admin_creates_a_token_that_works_and_is_shown_once(cli):
    token = create(cli, "--user", "tk-alice", "--groups", "vision,ml")
    result = cli("token", "create", "--user", "tk-alice2", "--groups", "ml")
    assert "shown only this once" in result.stderr and "user tk-alice2 (groups ml)" in result.stderr
    who = cli("queue", "list", env={"LAHAR_TOKEN": token})
    assert who.exit_code == 0, who.output
    listed = json.loads(cli("token", "list", "-o", "json").stdout)["items"]
    mine = [t for t in listed if t["user"] == "tk-alice"]
    assert len(mine) == 1 and mine[0]["groups"] == ["ml", "vision"] and mine[0]["admin"] is False
    secret = token.removeprefix("lahar_").partition("_")[2]  # the secret itself may hold "_"
    assert len(secret) > 20 and secret not in json.dumps(listed)  # the secret is never listed
    table = rows(cli("token", "list").stdout)
    assert table[mine[0]["id"]][1:] == ["tk-alice", "ml,vision", "user", "no"]
    as_yaml = yaml.safe_load(cli("token", "create", "--user", "tk-yaml", "-o", "yaml").stdout)
    assert as_yaml["user"] == "tk-yaml" and as_yaml["token"].startswith("lahar_")


def test_a_user_may_not_manage_tokens_and_sees_the_servers_message(cli):
    token = create(cli, "--user", "tk-bob", "--groups", "ml")
    for args in (("token", "create", "--user", "tk-eve", "--admin"), ("token", "list"), ("token", "revoke", "tk-bob")):
        result = cli(*args, env={"LAHAR_TOKEN": token})
        assert result.exit_code == 1, result.output
        assert "error: user tk-bob (groups ml) may not manage tokens: only admins may" in flat(result.stderr)
        assert "Traceback" not in result.output


def test_an_admin_token_may_manage_tokens(cli):
    ops = create(cli, "--user", "tk-ops", "--admin")
    result = cli("token", "list", env={"LAHAR_TOKEN": ops})
    assert result.exit_code == 0 and "tk-ops" in result.stdout
    assert rows(result.stdout)[next(t["id"] for t in json.loads(cli("token", "list", "-o", "json").stdout)["items"] if t["user"] == "tk-ops")][3] == "admin"


def test_revoke_by_user_and_by_id_then_401_with_exit_code_1(cli):
    first, second = create(cli, "--user", "tk-carol"), create(cli, "--user", "tk-carol")
    dave = create(cli, "--user", "tk-dave")
    result = cli("token", "revoke", "tk-carol")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) == 2 and all("revoked (user tk-carol)" in line for line in result.stdout.splitlines())
    for token in (first, second):
        denied = cli("queue", "list", env={"LAHAR_TOKEN": token})
        assert denied.exit_code == 1 and "error: invalid or revoked token" in denied.stderr and "hint: pass --token" in denied.stderr
    dave_id = next(t["id"] for t in json.loads(cli("token", "list", "-o", "json").stdout)["items"] if t["user"] == "tk-dave")
    assert cli("token", "revoke", dave_id).stdout.strip() == f"token/{dave_id} revoked (user tk-dave)"
    assert cli("queue", "list", env={"LAHAR_TOKEN": dave}).exit_code == 1
    again = cli("token", "revoke", "tk-carol")
    assert again.exit_code == 1 and 'every token of user "tk-carol" is already revoked' in again.stderr
    unknown = cli("token", "revoke", "tk-nobody")
    assert unknown.exit_code == 1 and 'no token has the id "tk-nobody" and no user is called "tk-nobody"' in unknown.stderr


def test_bad_input_is_refused_with_the_field_named(cli):
    bad_user = cli("token", "create", "--user", "tk bad/user")
    assert bad_user.exit_code == 1 and 'user: Invalid value: "tk bad/user"' in bad_user.stderr
    bad_group = cli("token", "create", "--user", "tk-ok", "--groups", "ml,a b")
    assert bad_group.exit_code == 2 and "--groups" in flat(bad_group.output)
    assert cli("token", "create").exit_code == 2  # --user is required


def test_where_the_cli_finds_its_token(cli, live, tmp_path):
    empty = tmp_path / "empty-home"
    empty.mkdir()
    anonymous = cli("queue", "list", env={"LAHAR_HOME": str(empty)})
    assert anonymous.exit_code == 1 and "error: authentication required" in anonymous.stderr
    assert "hint: pass --token or set LAHAR_TOKEN" in anonymous.stderr
    token = create(cli, "--user", "tk-files")
    assert cli("queue", "list", "--token", token, env={"LAHAR_HOME": str(empty)}).exit_code == 0
    assert cli("queue", "list", env={"LAHAR_HOME": str(empty), "LAHAR_TOKEN": token}).exit_code == 0
    (empty / "token").write_text(token + "\n")
    assert cli("queue", "list", env={"LAHAR_HOME": str(empty)}).exit_code == 0
    home = tmp_path / "user-home"
    (home / ".lahar").mkdir(parents=True)
    (home / ".lahar" / "token").write_text(token + "\n")
    found = subprocess_cli(live, "queue", "list", env={"HOME": str(home), "LAHAR_HOME": ""})
    assert found.returncode == 0, found.stderr
    refused = subprocess_cli(live, "token", "list", env={"HOME": str(home), "LAHAR_HOME": ""})
    assert refused.returncode == 1 and refused.stderr.startswith("error: user tk-files may not manage tokens"), refused.stderr
    assert "Traceback" not in refused.stderr
