"""Usage ledger: resource-seconds per queue and user, finished jobs, retention, CSV."""

from lahar.accounting import BUCKET_SECONDS, UsageLedger, rows_csv
from lahar.resources import Resource


def cpu(cores: float, gpus: float = 0.0) -> Resource:
    res = Resource.from_list({"cpu": str(cores), "memory": "1Gi"})
    if gpus:
        res.set_scalar("nvidia.com/gpu", gpus * 1000)
    return res


def test_resource_seconds_are_charged_for_elapsed_time():
    ledger = UsageLedger()
    ledger.observe(0.0, [("a", "alice", cpu(2))])  # first call: nothing elapsed
    ledger.observe(10.0, [("a", "alice", cpu(2)), ("b", "bob", cpu(1, gpus=1))])
    ledger.observe(15.0, [("b", "bob", cpu(1, gpus=1))])
    rows = {(r["queue"], r["user"]): r for r in ledger.rows()}
    assert rows[("a", "alice")]["usage"]["cpu"] == 20.0  # 2 cores x 10 s
    assert rows[("b", "bob")]["usage"]["cpu"] == 15.0  # 1 core x (10 + 5) s
    assert rows[("b", "bob")]["usage"]["nvidia.com/gpu"] == 15.0
    assert rows[("a", "alice")]["usage"]["memory"] == 10.0 * 2**30  # 1Gi x 10 s


def test_finished_jobs_and_waits():
    ledger = UsageLedger()
    ledger.job_finished(100.0, "a", "alice", wait=10.0, run=50.0)
    ledger.job_finished(200.0, "a", "alice", wait=30.0, run=10.0)
    (row,) = ledger.rows(queue="a")
    assert (row["jobs"], row["waitMean"], row["waitMax"], row["runSum"]) == (2, 20.0, 30.0, 60.0)


def test_since_filter_and_retention():
    ledger = UsageLedger(retention=2 * BUCKET_SECONDS)
    ledger.observe(0.0, [("a", "u", cpu(1))])
    ledger.observe(100.0, [("a", "u", cpu(1))])
    ledger.observe(10 * BUCKET_SECONDS, [("a", "u", cpu(1))])
    assert [r["start"] for r in ledger.snapshot()] == [10 * BUCKET_SECONDS]  # the first hour expired
    assert ledger.rows(since=11 * BUCKET_SECONDS) == []


def test_snapshot_restore_and_csv_and_series():
    ledger = UsageLedger()
    ledger.observe(0.0, [("a", "u", cpu(1))])
    ledger.observe(60.0, [("a", "u", cpu(1))])
    copy = UsageLedger()
    copy.restore(ledger.snapshot())
    assert copy.rows() == ledger.rows()
    text = rows_csv(ledger.rows())
    assert text.splitlines()[0].startswith("queue,user,jobs,wait_mean_s,wait_max_s,run_s,cpu_seconds")
    assert ledger.series_json()["cpu"]["a"] == [[0.0, 1.0], [60.0, 1.0]]
