"""Every object's uid is written without ``uuid.UUID`` (``store.base.uid_text``): the same text
as ``str(uuid.UUID(bytes=raw, version=4))`` for any 16 bytes, and fresh ones are version 4."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from lahar.store.base import new_uid, uid_text


@given(st.binary(min_size=16, max_size=16))
def test_uid_text_writes_what_the_uuid_module_writes(raw):
    assert uid_text(raw) == str(uuid.UUID(bytes=raw, version=4))


def test_every_variant_digit_and_the_version_digit():
    for high in range(256):  # the byte that holds the variant bits: every value
        raw = bytes(8) + bytes([high]) + bytes(7)
        assert uid_text(raw) == str(uuid.UUID(bytes=raw, version=4))
    assert uid_text(b"\xff" * 16) == "ffffffff-ffff-4fff-bfff-ffffffffffff"
    assert uid_text(bytes(16)) == "00000000-0000-4000-8000-000000000000"


def test_new_uids_are_random_version_4_uuids():
    made = [new_uid() for _ in range(2000)]
    assert len(set(made)) == len(made)
    for text in made:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
