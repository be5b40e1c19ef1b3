"""Each application hands its writes to its own writer thread: a write waiting on one server's
lock (its control loop's tick, say) never holds up the writes to another server in the same
process (tests, or a program that embeds two)."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def _post_in_thread(client: TestClient, name: str, answers: dict) -> threading.Thread:
    def post() -> None:
        answers[name] = client.post(QUEUES, json={"kind": "Queue", "metadata": {"name": name}}).status_code

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


def test_a_write_waiting_on_one_servers_lock_does_not_hold_up_another_servers(tmp_path):
    conf = load_config(default_config_text())
    first = build_server(MemoryStore(), conf, auth=False, home=tmp_path / "first")
    second = build_server(MemoryStore(), conf, auth=False, home=tmp_path / "second")
    answers: dict[str, int] = {}
    first.service.lock.acquire()  # as a tick of the first server's loop holds it
    try:
        waiting = _post_in_thread(TestClient(first.app), "waits", answers)
        waiting.join(0.3)
        assert waiting.is_alive()  # the first server's write waits for its lock
        other = _post_in_thread(TestClient(second.app), "goes-on", answers)
        other.join(5.0)
        assert answers.get("goes-on") == 201  # the second server's write did not wait
    finally:
        first.service.lock.release()
    waiting.join(5.0)
    assert answers == {"goes-on": 201, "waits": 201}
