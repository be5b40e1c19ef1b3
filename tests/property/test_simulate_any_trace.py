"""``lahar simulate --trace csv:FILE`` on logs drawn at random: columns in any order (and a few
that are not columns), cells from the ordinary to the absurd, clusters and speedups of every
kind. It replays and reports (exit status 0), or names the file, line and column, or the option,
that it refuses (a ``LaharError``, or a usage error), and never ends in a traceback."""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from test_simulate_any_manifest import run_simulate
from test_accepted_writes import digits, durations, quantities

REQUIRED = ["submit", "duration", "queue", "tasks"]
OPTIONAL = ["cpu", "memory", "gpu", "priority", "name", "minAvailable"]
_ORDINARY = {
    "submit": st.integers(min_value=0, max_value=10**5).map(str),
    "duration": st.sampled_from(["60", "90s", "10m", "1h30m", "2d"]),
    "queue": st.sampled_from(["", "default", "a", "b"]),
    "tasks": st.integers(min_value=1, max_value=8).map(str),
    "cpu": st.sampled_from(["500m", "1", "4", ""]),
    "memory": st.sampled_from(["1Gi", "64Gi", ""]),
    "gpu": st.sampled_from(["0", "1", "0.5", "8", ""]),
    "priority": st.sampled_from(["", "0", "100", "-5"]),
    "name": st.sampled_from(["", "mine-{row}"]),  # unique: the row's number goes in
    "minAvailable": st.sampled_from(["", "1", "2"]),
}
_ABSURD = {
    "submit": st.one_of(st.sampled_from(["2024-05-01 09:30:00", "2024-05-01T09:30:05Z", "-1", "nan", "inf", "1e400", ""]), digits),
    "duration": durations,
    "queue": st.sampled_from(["Not A Name", "x" * 300]),
    # past the bound, not below it: a job of 100,000 tasks is valid, and slow to replay here
    "tasks": st.one_of(st.sampled_from(["0", "-1", "1.5", "", "many", "1e20", "9" * 400]), st.integers(min_value=100_001, max_value=10**30).map(str)),
    "cpu": quantities,
    "memory": quantities,
    "gpu": st.one_of(st.sampled_from(["-1", "lots"]), quantities),
    "priority": st.one_of(st.integers(min_value=-(2**32), max_value=2**32).map(str), st.just("high")),
    "name": st.sampled_from(["Bad_Name", "a" * 300]),
    "minAvailable": st.one_of(st.integers(min_value=-1, max_value=9).map(str), st.just("all")),
}


def _cell(draw, column: str) -> str:
    """Nine cells in ten ordinary, so that most logs replay; the tenth anything."""
    if column not in _ORDINARY:
        return "x"
    kind = _ABSURD if draw(st.integers(min_value=0, max_value=9)) == 0 else _ORDINARY
    return draw(kind[column])


_GOOD_CLUSTERS = st.sampled_from(["2 x cpu=64,memory=512Gi,nvidia.com/gpu=8", "1 x cpu=4", "3 x cpu=8,memory=64Gi"])
_ODD_CLUSTERS = st.one_of(
    st.sampled_from(["0 x cpu=4", "x", "3 x cpu=lots", "2 x gpu=8", "1 x cpu=" + "9" * 30]),
    st.tuples(st.integers(min_value=-1, max_value=5), quantities).map(lambda p: f"{p[0]} x cpu={p[1]},memory=64Gi"),
)
# one option in ten at most against its rule, so that most runs replay
clusters = st.lists(st.one_of(*[_GOOD_CLUSTERS] * 9, _ODD_CLUSTERS), max_size=2)
speedups = st.one_of(*[st.sampled_from([None, "1", "1000", "0.001"])] * 9, st.sampled_from(["0", "-2", "nan", "inf"]))


@st.composite
def logs(draw) -> str:
    request = draw(st.sampled_from(["cpu", "memory", "gpu"]))
    header = REQUIRED + [request] + draw(st.lists(st.sampled_from([c for c in OPTIONAL if c != request]), unique=True))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        header.remove(draw(st.sampled_from(header)))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        header.append(draw(st.sampled_from(["colour", "CPU", ""])))
    header = draw(st.permutations(header))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in range(draw(st.integers(min_value=0, max_value=6))):
        writer.writerow([_cell(draw, column).replace("{row}", str(row)) for column in header])
    return out.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(log=logs(), cluster=clusters, speedup=speedups, until=st.sampled_from([None, "1h", "999999999999s"]))
def test_a_csv_trace_replays_or_names_what_is_wrong(tmp_path_factory, log, cluster, speedup, until):
    trace = tmp_path_factory.mktemp("trace") / "log.csv"
    trace.write_text(log)
    args = ["--trace", f"csv:{trace}", "-o", "json"]
    for spec in cluster:
        args += ["--cluster", spec]
    args += ["--speedup", speedup] if speedup is not None else []
    args += ["--until", until] if until is not None else []
    outcome, result = run_simulate(args)
    event(outcome)
    if outcome != "ran":
        return
    summary = json.loads(result.stdout)
    assert summary
