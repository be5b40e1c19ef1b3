"""``rfc3339`` (every object's creation time) remembers the text of the last whole second it
wrote: it must still write exactly what the clock's value formats to, whatever came before
(the same second, a second that rounds up, an earlier time, a time before 1970)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, strategies as st

from lahar.store.base import rfc3339


def _formatted(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_TIMES = st.one_of(
    st.floats(min_value=-10**9, max_value=4 * 10**9, allow_nan=False),
    st.floats(min_value=-2.0, max_value=2.0, allow_nan=False),  # around 1970 and the first second
    st.integers(min_value=0, max_value=4 * 10**9).map(lambda whole: whole + 0.9999996),  # rounds up to the next second
    st.integers(min_value=0, max_value=4 * 10**9).map(lambda whole: whole + 0.9999994),  # does not
    st.integers(min_value=-10**6, max_value=4 * 10**9).map(float),
)


@given(st.lists(_TIMES, min_size=1, max_size=20))
def test_rfc3339_writes_what_the_time_formats_to_after_any_other(times):
    for seconds in times + times[::-1]:
        assert rfc3339(seconds) == _formatted(seconds), seconds


def test_rfc3339_at_the_edge_of_a_second():
    assert rfc3339(1_764_000_000.2) == "2025-11-24T16:00:00Z"
    assert rfc3339(1_764_000_000.9999996) == "2025-11-24T16:00:01Z"  # a microsecond clock rounds it up
    assert rfc3339(1_764_000_000.5) == "2025-11-24T16:00:00Z"
