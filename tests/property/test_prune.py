"""What ``dump`` leaves out (``lahar.wire.prune``, compiled with the scheduling core when
installed): empty strings, maps and lists as map values, at any depth, and nothing else; lists
keep every item."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.wire import prune

leaves = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False), st.sampled_from(["", "a", "0"]))
trees = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)), max_leaves=25)
EMPTY = ("", {}, [])


def _meaningful(value) -> bool:
    """Whether a map would keep ``value`` (after pruning inside it)."""
    if isinstance(value, dict):
        return any(_meaningful(v) for v in value.values())
    if isinstance(value, list):
        return bool(value)
    return not (isinstance(value, str) and value == "")


def _check(original, pruned) -> None:
    if isinstance(original, dict):
        assert set(pruned) == {k for k, v in original.items() if _meaningful(v)}
        for key, value in pruned.items():
            assert not (isinstance(value, (str, dict, list)) and value in EMPTY)
            _check(original[key], value)
    elif isinstance(original, list):
        assert len(pruned) == len(original)
        for before, after in zip(original, pruned):
            _check(before, after)
    else:
        assert pruned is original


@settings(max_examples=500, deadline=None)
@given(trees)
def test_prune_drops_only_empty_map_values(tree):
    _check(tree, prune(tree))
