"""Whatever the API accepts, the control loop goes on: writes drawn at random (nodes, queues and
vcjobs whose quantities, counts and annotations range from the ordinary to the absurd) are
either refused by admission with an error, or taken and scheduled; a tick never fails.

One accepted request that broke every tick afterwards (a job asking four hundred nines of cpu:
admitted, then a float overflow in each tick) stopped all scheduling on the server, for every
queue. The API's own fuzzing (``tests/server/test_schemathesis.py``) cannot find such a request:
it generates bodies from the OpenAPI document, where a manifest is any object, and never runs
the loop."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lahar.errors import LaharError
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore

_NAMES = itertools.count()
_SUFFIXES = ["", "m", "k", "M", "G", "E", "Ki", "Mi", "Gi", "Ei"]

digits = st.integers(min_value=1, max_value=400).map(lambda n: "9" * n) | st.integers(min_value=0, max_value=10**6).map(str)
absurd_quantities = st.one_of(
    st.tuples(digits, st.sampled_from(_SUFFIXES)).map("".join),
    st.tuples(st.integers(min_value=-3, max_value=999), st.integers(min_value=-35, max_value=35)).map(lambda p: f"{p[0]}e{p[1]}"),
    st.sampled_from(["-1", "1e99", "NaN", "lots", "", "9223372036854775807", "7Ei", "1n"]),
)
ordinary_quantities = st.sampled_from(["0", "100m", "500m", "1", "1.5", "2", "4", "4Gi", "64", "512Gi"])
# two draws in three ordinary, so that jobs are accepted and scheduled, not only refused
quantities = st.one_of(ordinary_quantities, ordinary_quantities, absurd_quantities)
durations = st.one_of(
    st.sampled_from(["10s", "90m", "1.5h", "2d", "0", "1"]), st.sampled_from(["soon", "-5", "", "inf"]), digits, digits.map(lambda d: d + "d")
)


def unique_name(prefix: str) -> str:
    """``prefix-N``, never the same twice in a run (every drawn object is created anew)."""
    return f"{prefix}-{next(_NAMES)}"


@st.composite
def nodes(draw) -> dict:
    allocatable = {"cpu": draw(quantities), "memory": draw(quantities), "pods": draw(st.sampled_from(["110", "110", "0", "9" * 30]))}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": unique_name("n")}, "status": {"allocatable": allocatable}}


@st.composite
def queues(draw) -> dict:
    spec: dict = {"weight": draw(st.integers(min_value=-1, max_value=2**40))}
    for field in draw(st.sets(st.sampled_from(["capability", "deserved", "guarantee"]))):
        key = "guarantee" if field == "guarantee" else field
        value = {"cpu": draw(quantities), "memory": draw(quantities)}
        spec[key] = {"resource": value} if field == "guarantee" else value
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": unique_name("q")}, "spec": spec}


@st.composite
def vcjobs(draw, queue_names: list[str]) -> dict:
    tasks = []
    for t in range(draw(st.integers(min_value=1, max_value=3))):
        requests = {"cpu": draw(quantities), "memory": draw(quantities)}
        container = {"name": "c", "resources": {"requests": requests}}
        tasks.append({"name": f"t{t}", "replicas": draw(st.integers(min_value=0, max_value=4)), "template": {"spec": {"containers": [container]}}})
    annotations = {key: draw(durations) for key in draw(st.sets(st.sampled_from(["lahar.dev/at", "lahar.dev/duration"])))}
    spec = {"queue": draw(st.sampled_from(queue_names or ["default"])), "tasks": tasks, "minAvailable": draw(st.integers(min_value=0, max_value=3))}
    if draw(st.booleans()):
        spec["priorityClassName"] = draw(st.sampled_from(["high", "none-such"]))
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": unique_name("j"), "annotations": annotations}, "spec": spec}


@st.composite
def bare_pods(draw) -> dict:
    container = {"name": "c", "resources": {"requests": {"cpu": draw(quantities), "memory": draw(quantities)}}}
    annotations = {key: draw(durations) for key in draw(st.sets(st.sampled_from(["lahar.dev/at", "lahar.dev/duration"])))}
    if draw(st.booleans()):
        annotations["scheduling.volcano.sh/queue-name"] = draw(st.sampled_from(["default", "none-such"]))
    spec: dict = {"containers": [container]}
    if draw(st.booleans()):
        spec["nodeName"] = draw(st.sampled_from(["none-such", "n-0"]))
    if draw(st.booleans()):
        spec["priorityClassName"] = draw(st.sampled_from(["high", "none-such"]))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": unique_name("p"), "annotations": annotations}, "spec": spec}


@st.composite
def writes(draw) -> list[dict]:
    roomy = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": unique_name("n")}, "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}
    made = [roomy] + draw(st.lists(nodes(), max_size=3)) + draw(st.lists(queues(), max_size=2))  # room for the ordinary jobs
    names = ["default"] + [w["metadata"]["name"] for w in made if w["kind"] == "Queue"]
    return made + draw(st.lists(vcjobs(names), min_size=1, max_size=4))


def _job(name: str, cpu: str, replicas: int = 1) -> dict:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    task = {"name": "t", "replicas": replicas, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": {"queue": "default", "tasks": [task]}}


_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "64", "memory": "512Gi"}}}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(writes())
@example([_NODE, _job("nines", "9" * 400), _job("small", "1")])  # once admitted: every tick failed
@example([_NODE, _job("widest", "9223372036854775807", replicas=2), _job("small", "1")])  # its podgroup asks past 2^63-1
def test_every_accepted_write_leaves_the_loop_working(documents):
    server = build_server(MemoryStore(), load_config(default_config_text()), auth=False)
    accepted = []
    for document in documents:
        try:
            server.service.create(document)
        except LaharError:
            continue  # refused, with an error: what admission is for
        accepted.append(document["metadata"]["name"])
    for _ in range(3):
        server.loop.tick()  # raises if the loop cannot take what was accepted
    stored = {item["metadata"]["name"] for kind in ("Node", "Queue", "Job") for item in server.service.store.list(kind)[0]}
    assert set(accepted) <= stored
