"""``lahar simulate --trace alibaba:FOLDER`` on a pod list and a node list drawn at random (cells
from the ordinary to the absurd, one in ten): it replays and reports (exit status 0) or names
the file, line and column that it refuses, and never ends in a traceback."""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from test_simulate_any_manifest import run_simulate
from test_accepted_writes import digits

POD_COLUMNS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"]
NODE_COLUMNS = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
_NUMBERS = st.one_of(st.sampled_from(["-1", "1.5", "", "lots", "nan", "inf", "1e30", "1e400"]), digits)
_ORDINARY = {
    "name": st.sampled_from(["p-{row}"]),
    "sn": st.sampled_from(["n-{row}"]),
    "cpu_milli": st.sampled_from(["0", "500", "12000", "96000"]),
    "memory_mib": st.sampled_from(["0", "1024", "262144"]),
    "num_gpu": st.sampled_from(["0", "1", "2", "8"]),
    "gpu_milli": st.sampled_from(["0", "460", "1000"]),
    "gpu": st.sampled_from(["0", "2", "8"]),
    "gpu_spec": st.sampled_from(["", "V100", "A10|T4"]),
    "qos": st.sampled_from(["LS", "BE", "Burstable", ""]),
    "model": st.sampled_from(["", "V100", "T4"]),
    "pod_phase": st.just("Running"),
    "creation_time": st.integers(min_value=0, max_value=10**6).map(str),
    "deletion_time": st.integers(min_value=10**6, max_value=2 * 10**6).map(str),
    "scheduled_time": st.just("0"),
}
_ABSURD = {**{column: _NUMBERS for column in _ORDINARY}, "name": st.sampled_from(["", "p-0", "Bad Name"]), "sn": st.sampled_from(["", "n-0"])}


def _table(draw, columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in range(draw(st.integers(min_value=0, max_value=5))):
        cells = []
        for column in columns:
            kind = _ABSURD if draw(st.integers(min_value=0, max_value=9)) == 0 else _ORDINARY
            cells.append(draw(kind[column]).replace("{row}", str(row)))
        writer.writerow(cells)
    return out.getvalue()


@st.composite
def trace_files(draw) -> tuple[str, str | None]:
    pods = _table(draw, POD_COLUMNS)
    nodes = _table(draw, NODE_COLUMNS) if draw(st.booleans()) else None
    return pods, nodes


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=trace_files(), queue_key=st.sampled_from(["qos", "gpu_spec"]), until=st.sampled_from([None, "1h", "999999999999s"]))
def test_an_alibaba_trace_replays_or_names_what_is_wrong(tmp_path_factory, files, queue_key, until):
    folder = tmp_path_factory.mktemp("alibaba")
    (folder / "openb_pod_list_default.csv").write_text(files[0])
    if files[1] is not None:
        (folder / "openb_node_list_all_node.csv").write_text(files[1])
    args = ["--trace", f"alibaba:{folder}", "--queue-key", queue_key, "-o", "json"]
    args += ["--until", until] if until is not None else []
    if files[1] is None:
        args += ["--cluster", "2 x cpu=96,memory=512Gi,nvidia.com/gpu=8"]
    outcome, result = run_simulate(args)
    event(outcome)
    if outcome != "ran":
        return
    assert json.loads(result.stdout)["trace"]["source"] == f"alibaba:{folder}"
