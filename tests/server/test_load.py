"""Fifty clients against one real server for fifteen seconds: the scheduler keeps its promises.

The situation: a shared cluster on a busy morning, every team submitting vcjobs and podgroups,
deleting some, and queue admins opening, closing, suspending, resuming and re-weighting their
queues all at once. Afterwards every job the server acknowledged is there exactly once, no node
was ever over-committed (checked on samples during the run and at the end), no pod was bound
twice, and each queue's status.allocated is the sum of its running pods' requests.
"""

from __future__ import annotations

from loadgen import Load, ServerProcess, check_acknowledged, check_allocations_settle, check_nodes, free_port, seed_cluster

CLIENTS, SECONDS = 50, 15.0


def test_fifty_clients_keep_every_invariant(tmp_path):
    server = ServerProcess(tmp_path / "lahar.db", tmp_path / "home", free_port())
    server.start()
    try:
        seed_cluster(server)
        load = Load(server, clients=CLIENTS, seconds=SECONDS)
        load.run()
        assert not load.ledger.errors, load.ledger.errors[:10]
        assert not load.violations, load.violations[:10]
        with server.client() as c:
            counts = check_acknowledged(c, load.ledger)
            check_nodes(c)
            check_allocations_settle(c)
            load.follow(1)  # the watch catches up with the settled state
            final = c.get("/api/v1/pods").json()["items"]
            assert not load.check_final(final) and not load.violations
        sent = load.ledger.sent
        print(f"\nload: {CLIENTS} clients, {SECONDS:g} s, {sent} requests ({sent / SECONDS:.0f}/s), {load.samples} samples, "
              f"{load.watch_events} watch events, {len(load.bound)} pods bound ({load.rebinds} again after an eviction); stored {counts}; answers {dict(sorted(load.ledger.requests.items()))}")
        assert load.samples >= 5 and load.watch_events > 0
        assert load.ledger.requests["POST Job 201"] >= 50 and len(load.ledger.deleted_jobs) >= 5
        assert sum(v for k, v in load.ledger.requests.items() if k.startswith("POST queue/")) >= 10
        assert len(load.bound) > 10
    finally:
        server.stop()
