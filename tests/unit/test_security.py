"""Tokens and queue ACLs (pure rules; the server wiring is tested over HTTP)."""

import pytest
from builders import queue

from lahar.errors import Forbidden, Unauthorized
from lahar.security import (
    Principal,
    acl_admits,
    authenticate,
    check_admin,
    check_submit,
    new_token,
    parse_acl,
)


def test_token_round_trip_and_only_hash_stored():
    token, record = new_token("alice", ["ml", "vision", "ml"])
    assert token.startswith("lahar_") and record.secret_hash not in token
    assert record.groups == ["ml", "vision"]
    found = authenticate(f"Bearer {token}", {record.id: record}.get)
    assert found == Principal("alice", ("ml", "vision"), False)


@pytest.mark.parametrize(
    "header",
    [None, "", "Basic abc", "Bearer nope", "Bearer lahar_", "Bearer lahar_unknown_secret"],
)
def test_bad_credentials(header):
    _, record = new_token("alice")
    with pytest.raises(Unauthorized):
        authenticate(header, {record.id: record}.get)


def test_wrong_secret_and_revoked():
    token, record = new_token("alice")
    tampered = token[:-2] + ("aa" if not token.endswith("aa") else "bb")
    with pytest.raises(Unauthorized):
        authenticate(f"Bearer {tampered}", {record.id: record}.get)
    record.revoked = True
    with pytest.raises(Unauthorized, match="revoked"):
        authenticate(f"Bearer {token}", {record.id: record}.get)


def test_parse_acl():
    assert parse_acl("alice, group:ml ,bob") == ({"alice", "bob"}, {"ml"}, False)
    assert parse_acl("*")[2] is True
    assert parse_acl(None) == (set(), set(), False)


@pytest.mark.parametrize(
    "acl,who,expected",
    [
        ("alice", Principal("alice"), True),
        ("alice", Principal("bob"), False),
        ("group:ml", Principal("bob", ("ml",)), True),
        ("*", Principal("anyone"), True),
        ("", Principal("alice"), False),
    ],
)
def test_acl_admits(acl, who, expected):
    assert acl_admits(acl, who) is expected


def _queues(*builders):
    objs = {b.build().name: b.build() for b in builders}
    return objs.get


def test_submit_acl_inherited_down_the_tree():
    lookup = _queues(
        queue("root"),
        queue("org").parent("root").annotation("lahar.dev/submit-acl", "group:ml"),
        queue("team").parent("org"),
        queue("open"),
    )
    check_submit(Principal("bob", ("ml",)), "team", lookup)  # admitted by the parent's ACL
    with pytest.raises(Forbidden) as err:
        check_submit(Principal("eve"), "team", lookup)
    assert "user eve may not submit to queue team" in err.value.message and "group:ml" in err.value.message
    check_submit(Principal("eve"), "open", lookup)  # no ACL anywhere: open to all
    check_submit(Principal("root-user", admin=True), "team", lookup)


def test_admin_acl_needed_to_operate():
    lookup = _queues(queue("root"), queue("q").annotation("lahar.dev/admin-acl", "alice"))
    check_admin(Principal("alice"), "q", lookup, "close")
    with pytest.raises(Forbidden) as err:
        check_admin(Principal("bob"), "q", lookup, "close")
    assert "user bob may not close queue q" in err.value.message and "alice" in err.value.message
    with pytest.raises(Forbidden):
        check_admin(Principal("bob"), "default-like", _queues(queue("root"), queue("default-like")), "suspend")
