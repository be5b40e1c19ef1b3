"""The HTTP API through FastAPI's test client: paths, status codes, admission messages."""

from __future__ import annotations

import json

import pytest

Q = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
NODES = "/api/v1/nodes"


def queue(name: str, **spec) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def job(name: str, queue_name: str = "default", cpu: str = "1", replicas: int = 1, **annotations) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "queue": queue_name,
            "tasks": [{"name": "main", "replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}],
        },
    }


def node(name: str, cpu: str = "4") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "16Gi"}}}


def test_builtin_queues_exist(server):
    names = [q["metadata"]["name"] for q in server.client.get(Q).json()["items"]]
    assert names == ["default", "root"]


def test_create_get_list_delete_queue(server):
    c = server.client
    created = c.post(Q, json=queue("research", weight=3))
    assert created.status_code == 201
    body = created.json()
    assert body["spec"]["reclaimable"] is True and body["status"]["state"] == "Open"
    assert body["metadata"]["resourceVersion"]
    assert c.get(f"{Q}/research").json()["spec"]["weight"] == 3
    listing = c.get(Q).json()
    assert listing["kind"] == "QueueList" and "resourceVersion" in listing["metadata"]
    refused = c.delete(f"{Q}/research")
    assert refused.status_code == 422
    assert "only a Closed queue can be deleted" in refused.json()["message"]
    assert c.post(f"{Q}/research/close").status_code == 200
    assert c.delete(f"{Q}/research").status_code == 200
    assert c.get(f"{Q}/research").status_code == 404


@pytest.mark.parametrize(
    "body,message",
    [
        (queue("bad", weight=0), "spec.weight: Invalid value: 0: must be in 1..2147483647"),
        (queue("Bad_Name"), "metadata.name: Invalid value: \"Bad_Name\""),
        (queue("q", capability={"cpu": "-1"}), 'spec.capability.cpu: Invalid value: "-1": must be greater than or equal to 0'),
        (queue("q", parent="nope"), 'spec.parent: Not found: "nope"'),
    ],
)
def test_admission_errors_are_422_with_field_paths(server, body, message):
    response = server.client.post(Q, json=body)
    assert response.status_code == 422
    status = response.json()
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert message in status["message"]
    assert status["details"]["causes"]


def test_every_field_error_at_once(server):
    response = server.client.post(Q, json=queue("Bad_Name", weight=0, capability={"cpu": "x"}))
    fields = [c["field"] for c in response.json()["details"]["causes"]]
    assert fields == ["metadata.name", "spec.weight", "spec.capability.cpu"]


def test_conflicts_and_not_found(server):
    c = server.client
    assert c.post(Q, json=queue("a")).status_code == 201
    assert c.post(Q, json=queue("a")).json()["reason"] == "AlreadyExists"
    stored = c.get(f"{Q}/a").json()
    stored["spec"]["weight"] = 2
    assert c.put(f"{Q}/a", json=stored).status_code == 200
    stale = dict(stored)
    stale["spec"] = {**stored["spec"], "weight": 5}
    response = c.put(f"{Q}/a", json=stale)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"
    assert c.get(f"{Q}/nope").status_code == 404


def test_bad_bodies_are_400_not_500(server):
    c = server.client
    assert c.post(Q, content=b"not json", headers={"content-type": "application/json"}).status_code in (400, 422)
    assert c.post(Q, json=[1, 2]).status_code == 400
    assert c.post(Q, json={"kind": "Pod", "metadata": {"name": "x"}}).status_code == 400


def test_job_to_closed_queue_is_rejected_with_queue_and_state(server):
    c = server.client
    c.post(Q, json=queue("q"))
    c.post(f"{Q}/q/close")
    response = c.post(JOBS, json=job("j", "q"))
    assert response.status_code == 422
    assert 'queue q is Closed and accepts no new jobs' in response.json()["message"]


def test_root_cannot_be_closed(server):
    response = server.client.post(f"{Q}/root/close")
    assert response.status_code == 422
    assert response.json()["details"]["causes"][0]["field"] == "action"
    assert "the root queue can never be closed or suspended" in response.json()["message"]
    assert server.client.get(f"{Q}/root").json()["status"]["state"] == "Open"


def test_an_unknown_queue_action_is_refused_in_process_too(server):
    from lahar.errors import BadRequest

    version = server.store.current_version()
    with pytest.raises(BadRequest, match='action: Unsupported value: "Frobnicate": supported values: OpenQueue, CloseQueue'):
        server.service.queue_action("default", "Frobnicate")
    assert server.store.current_version() == version  # nothing written, not even an audit record
    assert server.client.post(f"{Q}/default/frobnicate").status_code == 400


def test_opening_a_queue_under_a_closed_parent_is_refused(server):
    c = server.client
    c.post(Q, json=queue("p"))
    c.post(Q, json=queue("child", parent="p"))
    assert c.post(f"{Q}/p/close").status_code == 200
    response = c.post(f"{Q}/child/open")
    assert response.status_code == 422
    assert "its parent queue p is Closed; open the parent first" in response.json()["message"]
    assert c.get(f"{Q}/child").json()["status"]["state"] == "Closed"


def test_job_runs_through_the_loop_and_why_explains_waiting(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="2"))
    assert c.post(JOBS, json=job("small", cpu="1")).status_code == 201
    assert c.post(JOBS, json=job("big", cpu="8")).status_code == 201
    server.loop.tick()
    server.loop.tick()
    pods = {p["metadata"]["name"]: p for p in c.get("/api/v1/namespaces/default/pods").json()["items"]}
    assert pods["small-main-0"]["spec"]["nodeName"] == "n1"
    assert pods["small-main-0"]["status"]["phase"] == "Running"
    assert "nodeName" not in pods["big-main-0"]["spec"]
    why = c.get("/lahar/v1/namespaces/default/jobs/big/why").json()
    assert why["reason"]["kind"] == "capability"
    assert "the cluster's size less other queues' guarantees" in why["reason"]["message"]
    assert why["reason"]["allocated"] == "cpu=1"  # what the queue holds, added when asked
    assert c.get("/lahar/v1/namespaces/default/jobs/small/why").json()["reason"] is None


def test_why_adds_the_queue_s_figures_to_a_deserved_reason_when_asked(server):
    """The stored reason leaves them out (they move with every task the queue starts or ends,
    and would rewrite every waiting job's reason); ``why`` reads them from the last cycle."""
    from lahar.scheduler.cache import format_time

    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    c.post(Q, json=queue("a"))
    c.post(Q, json=queue("b"))
    for name, queue_name, cpu in (("a1", "a", "2"), ("a2", "a", "1"), ("b1", "b", "3")):  # a deserves 2 CPUs of 4
        assert c.post(JOBS, json=job(name, queue_name, cpu=cpu)).status_code == 201
        server.clock.advance(1)  # a1 is older than a2: it starts first
    server.loop.tick()
    server.loop.tick()
    group = c.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/a2").json()
    stored = json.loads(group["metadata"]["annotations"]["lahar.dev/pending-reason"])
    assert stored["kind"] == "deserved" and "(" not in stored["message"]
    why = c.get("/lahar/v1/namespaces/default/jobs/a2/why").json()
    assert why["reason"]["message"] == stored["message"]
    assert (why["reason"]["allocated"], why["reason"]["deserved"]) == ("cpu=2", "cpu=2")
    assert why["reason"]["as_of"] == format_time(server.clock())  # when the last cycle ran


@pytest.mark.parametrize("written", ['"x"', "[1, 2]", "{not json", '{"kind": "deserved", "queue": ["a"], "message": "m"}'])
def test_why_of_a_reason_annotation_someone_else_wrote_is_an_answer(server, written):
    """Anyone may write the annotation: what is not a reason object is shown as its text."""
    c = server.client
    assert c.post(JOBS, json=job("odd", cpu="1")).status_code == 201
    server.loop.tick()
    group = server.service.get("PodGroup", "default/odd")
    group["metadata"].setdefault("annotations", {})["lahar.dev/pending-reason"] = written
    server.service.update_status(group)
    response = c.get("/lahar/v1/namespaces/default/jobs/odd/why")
    assert response.status_code == 200
    reason = response.json()["reason"]
    assert reason == ({"kind": "unreadable", "message": written} if not written.startswith('{"') else json.loads(written))


def test_watch_streams_changes_after_a_version(server):
    c = server.client
    version = int(c.get(Q).json()["metadata"]["resourceVersion"])
    c.post(Q, json=queue("w1"))
    c.post(Q, json=queue("w2"))
    lines = c.get(Q, params={"watch": "true", "resourceVersion": version, "timeoutSeconds": 0.5}).text.strip().splitlines()
    import json

    events = [json.loads(line) for line in lines]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1"), ("ADDED", "w2")]


def test_metrics_and_openapi_and_healthz(server):
    c = server.client
    c.post(NODES, json=node("n1"))
    c.post(JOBS, json=job("j"))
    server.loop.tick()
    text = c.get("/metrics").text
    assert "volcano_queue_allocated_milli_cpu" in text and "volcano_queue_share" in text
    assert c.get("/openapi.json").json()["info"]["title"] == "Lahar"
    assert c.get("/healthz").json()["status"] == "ok"


def test_hostile_bodies_are_refused_cleanly(server):
    c = server.client
    huge = c.post(Q, content=b"{" + b" " * (2 * 1024 * 1024) + b"}", headers={"content-type": "application/json"})
    assert huge.status_code == 413 and huge.json()["reason"] == "RequestEntityTooLarge"
    wrong_type = c.post(Q, content=b"kind: Queue", headers={"content-type": "application/yaml"})
    assert wrong_type.status_code == 415
    deep = b"[" * 5000 + b"]" * 5000
    nested = c.post(Q, content=deep, headers={"content-type": "application/json"})
    assert nested.status_code == 400 and "nested deeper" in nested.json()["message"]
    many = queue("labels")
    many["metadata"]["labels"] = {f"k{i}": "v" for i in range(100)}
    too_many = c.post(Q, json=many)
    assert too_many.status_code == 422 and "metadata.labels: Too long" in too_many.json()["message"]
    assert c.get("/healthz").status_code == 200


def test_deleting_a_job_deletes_its_podgroup_and_pods(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    assert c.post(JOBS, json=job("gone", replicas=2)).status_code == 201
    assert c.post(JOBS, json=job("kept")).status_code == 201
    server.loop.tick()
    assert len(c.get("/api/v1/namespaces/default/pods", params={"labelSelector": "volcano.sh/job-name=gone"}).json()["items"]) == 2
    assert c.delete(f"{JOBS}/gone").status_code == 200
    server.loop.tick()
    names = {p["metadata"]["name"] for p in c.get("/api/v1/namespaces/default/pods").json()["items"]}
    assert names == {"kept-main-0"}
    assert c.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/gone").status_code == 404
    assert c.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/kept").status_code == 200


def test_a_node_capacity_change_through_put_is_kept(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="2"))
    stored = c.get(f"{NODES}/n1").json()
    stored["status"]["allocatable"]["cpu"] = "16"
    assert c.put(f"{NODES}/n1", json=stored).status_code == 200
    assert c.get(f"{NODES}/n1").json()["status"]["allocatable"]["cpu"] == "16"


def test_a_vcjob_status_follows_its_podgroup(server):
    c = server.client
    c.post(NODES, json=node("n1", cpu="4"))
    assert c.post(JOBS, json=job("counted", replicas=2, **{"lahar.dev/duration": "1m"})).status_code == 201
    assert c.post(JOBS, json=job("blocked", cpu="8")).status_code == 201
    server.loop.tick()
    server.loop.tick()
    status = c.get(f"{JOBS}/counted").json()["status"]
    assert (status["state"]["phase"], status["running"], status["pending"]) == ("Running", 2, 0)
    assert c.get(f"{JOBS}/blocked").json()["status"]["state"]["phase"] == "Pending"
    server.clock.advance(61)
    server.loop.tick()
    server.loop.tick()
    status = c.get(f"{JOBS}/counted").json()["status"]
    assert (status["state"]["phase"], status["running"], status["succeeded"]) == ("Completed", 0, 2)


def test_merge_patch_changes_only_the_fields_sent(server):
    c = server.client
    c.post(Q, json=queue("pq", weight=2, capability={"cpu": "8"}))
    server.loop.tick()  # the loop writes the queue's status: the version moves on
    patched = c.patch(f"{Q}/pq", json={"spec": {"weight": 5}}, headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    stored = c.get(f"{Q}/pq").json()
    assert stored["spec"]["weight"] == 5 and stored["spec"]["capability"] == {"cpu": "8"}
    assert c.patch(f"{Q}/pq", json={"spec": {"capability": None}}).json()["spec"].get("capability") is None
    invalid = c.patch(f"{Q}/pq", json={"spec": {"weight": 0}})
    assert invalid.status_code == 422 and "spec.weight" in invalid.json()["message"]
    stale = c.patch(f"{Q}/pq", json={"metadata": {"resourceVersion": "1"}, "spec": {"weight": 3}})
    assert stale.status_code == 409
    assert c.patch(f"{Q}/pq", json={"metadata": {"name": "other"}}).status_code == 400
    assert c.patch(f"{Q}/nope", json={"spec": {"weight": 3}}).status_code == 404


def test_json_values_come_back_exactly_through_the_api(server):
    """Fields Lahar does not know are kept as sent, whatever JSON number or text they hold, in
    every answer: create, read, list, replace, watch."""
    c = server.client
    extra = {"big": 2**70, "largest64": 2**64 - 1, "text": "é ☃ 😀 \u2028", "floats": [0.1, 1e300, 5e-324], "n": None}
    created = c.post(Q, json=queue("exact", weight=1, **extra))
    assert created.status_code == 201, created.text
    assert {k: created.json()["spec"].get(k) for k in extra} == extra
    version = created.json()["metadata"]["resourceVersion"]
    assert {k: c.get(f"{Q}/exact").json()["spec"].get(k) for k in extra} == extra
    listed = {q["metadata"]["name"]: q for q in c.get(Q).json()["items"]}
    assert {k: listed["exact"]["spec"].get(k) for k in extra} == extra
    replaced = c.put(f"{Q}/exact", json={**created.json(), "spec": {**created.json()["spec"], "weight": 2}})
    assert replaced.status_code == 200 and {k: replaced.json()["spec"].get(k) for k in extra} == extra
    streamed = c.get(f"{Q}?watch=true&resourceVersion={int(version) - 1}&timeoutSeconds=0.5")
    first = json.loads(streamed.text.splitlines()[0])
    assert first["object"]["metadata"]["name"] == "exact" and {k: first["object"]["spec"].get(k) for k in extra} == extra


def test_a_watch_stream_is_one_event_a_line_whatever_the_text_holds(server):
    """U+2028, U+2029 and U+0085 are line ends to ``str.splitlines`` (and to httpx's
    ``iter_lines``): inside an object's text they must not cut a watch event in two."""
    c = server.client
    version = int(c.get(Q).json()["metadata"]["resourceVersion"])
    odd = "a\u2028b\u2029c\x85d"
    body = queue("lines", weight=1)
    body["metadata"]["annotations"] = {"note": odd}
    assert c.post(Q, json=body).status_code == 201
    lines = c.get(Q, params={"watch": "true", "resourceVersion": version, "timeoutSeconds": 0.5}).text.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["object"]["metadata"]["name"] for e in events] == ["lines"]
    assert events[0]["object"]["metadata"]["annotations"]["note"] == odd
    assert c.get(f"{Q}/lines").json()["metadata"]["annotations"]["note"] == odd


@pytest.mark.parametrize("metadata", [None, "n1", ["n1"], 7])
def test_a_replace_whose_metadata_is_not_an_object_is_400(server, metadata):
    c = server.client
    c.post(NODES, json=node("n1"))
    answer = c.put(f"{NODES}/n1", json={"metadata": metadata})
    assert answer.status_code == 400 and answer.json()["message"] == "metadata: must be an object"
    created = c.post(NODES, json={"metadata": metadata})
    assert created.status_code in (400, 422) and "metadata" in created.json()["message"]
    assert c.get(f"{NODES}/n1").json()["status"]["allocatable"]["cpu"] == "4"  # nothing stored changed


@pytest.mark.parametrize("path", ["/lahar/v1/usage", "/lahar/v1/usage/series"])
@pytest.mark.parametrize("since", ["INFINITY", "1e400", "nan", "9" * 400, "9" * 400 + "d"])
def test_usage_since_no_time_is_a_400_naming_the_rule(server, path, since):
    answer = server.client.get(path, params={"since": since})
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"].startswith(f'since: "{since}" is not a duration (90m, 7d) or a Unix time')
    assert server.client.get(path, params={"since": "1h"}).status_code == 200


def test_a_request_too_large_for_any_quantity_is_refused_and_the_loop_goes_on(server):
    """Four hundred nines of cpu were admitted, and then every tick of the control loop failed
    on a float overflow: nothing was scheduled again, not even the jobs beside it."""
    c = server.client
    c.post(NODES, json=node("n1", cpu="2"))
    huge = c.post(JOBS, json=job("huge", cpu="9" * 400))
    assert huge.status_code == 422, huge.text
    assert "must be at most 9223372036854775807 (2^63-1)" in huge.json()["message"]
    # the largest a quantity may be, twice: the job's podgroup asks for their sum, past the bound
    assert c.post(JOBS, json=job("widest", cpu="9223372036854775807", replicas=2)).status_code == 201
    assert c.post(JOBS, json=job("small", cpu="1")).status_code == 201
    server.loop.tick()
    server.loop.tick()
    pods = {p["metadata"]["name"]: p for p in c.get("/api/v1/namespaces/default/pods").json()["items"]}
    assert set(pods) == {"small-main-0", "widest-main-0", "widest-main-1"}
    assert pods["small-main-0"]["spec"]["nodeName"] == "n1"
    assert "nodeName" not in pods["widest-main-0"]["spec"]


def test_a_queue_holding_past_int64_milli_units_reads_back(server):
    """A job of 10^16 CPUs is admitted (a quantity is at most 2^63-1) and bound on a node that
    big; its queue then holds 10^19 milli-CPUs, past what a 64-bit count of them holds. The
    loop wrote that as ``allocated: {cpu: unlimited}``, which is no quantity: the queue tree
    answered 500 from then on. It is written as the quantity it is."""
    c = server.client
    big = "10000000000000000"
    c.post(NODES, json=node("n1", cpu=big))
    assert c.post(JOBS, json=job("vast", cpu=big)).status_code == 201
    server.loop.tick()
    server.loop.tick()
    assert c.get("/apis/scheduling.volcano.sh/v1beta1/queues/default").json()["status"]["allocated"]["cpu"] == "10P"  # 10^16
    tree = c.get("/lahar/v1/queues/tree")
    assert tree.status_code == 200, tree.text
    assert "cpu" in {q["name"]: q["allocated"] for q in tree.json()["queues"]}["default"]
