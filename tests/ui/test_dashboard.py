"""The dashboard at /ui in a real browser, against a real server holding the demo cluster.

The situation: an administrator opens the dashboard of a fresh ``lahar server --demo`` with
authentication on, signs in with the admin token, reads the queue tree (state badges, deserved /
allocated / capability bars), sees why a job waits and where it stands in its queue, suspends a
queue from the page (and the API agrees), and tries an invalid weight, which the server refuses
with an admission error shown next to the queue. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

CHROMIUM = os.environ.get("LAHAR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium binary at {CHROMIUM} (set LAHAR_CHROMIUM; CI installs the distribution's chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DemoServer:
    """``lahar server --demo`` on a free loopback port, authentication on, its own LAHAR_HOME."""

    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "LAHAR_HOME": str(home)}
        command = [sys.executable, "-m", "lahar.cli.main", "server", "--db", str(home / "lahar.db"), "--port", str(self.port), "--demo", "--period", "0.2s"]
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=0.5).status_code == 200 and self.allocated("team-a"):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"the demo server did not start: {self.proc.stderr.read().decode()[-2000:]}")

    @property
    def token(self) -> str:
        return (self.home / "token").read_text(encoding="utf-8").strip()

    def get(self, path: str) -> dict:
        answer = httpx.get(self.url + path, headers={"Authorization": f"Bearer {self.token}"}, timeout=10)
        answer.raise_for_status()
        return answer.json()

    def allocated(self, queue: str) -> dict:
        if not (self.home / "token").exists():
            return {}
        return self.get(f"{QUEUES}/{queue}").get("status", {}).get("allocated") or {}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    demo = DemoServer(tmp_path_factory.mktemp("ui-home"))
    yield demo
    demo.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server.url}/ui/?token={server.token}")
    page.wait_for_selector(".queue-row[data-queue=team-a] .bar")
    yield page
    context.close()
    assert not errors, errors


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_signing_in_with_a_pasted_token(browser, server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/ui/")
    page.wait_for_selector("#login:not([hidden])")
    assert "authentication required" in page.inner_text("#login-error")
    page.fill("#token", "lahar_not-a-token")
    page.click("#login-form button")
    page.wait_for_function("document.getElementById('login-error').textContent.includes('token')")
    page.fill("#token", server.token)
    page.click("#login-form button")
    page.wait_for_selector("#login", state="hidden")
    assert page.inner_text("#who") == "admin (admin)"
    assert page.evaluate("localStorage.getItem('lahar.token')") == server.token
    context.close()


def test_the_tree_shows_every_queue_with_its_state_and_bars(page, server):
    assert "token=" not in page.url  # ?token= is kept in localStorage, not left in the address bar
    rows = page.locator(".queue-row")
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.queue)")) == ["default", "research", "root", "team-a", "team-b"]
    for name in ("default", "research", "team-a", "team-b"):
        assert page.inner_text(f".queue-row[data-queue={name}] .badge") == "Open"
    # research is capped at 16 cpu and holds 16: the label reads allocated / deserved / capability
    page.wait_for_function("[...document.querySelectorAll('.queue-row[data-queue=research] .bars .bar-label')].some(l => l.textContent.startsWith('cpu 16 / ') && l.textContent.endsWith(' / 16'))")
    research_bars = page.locator(".queue-row[data-queue=research] .bar")
    assert research_bars.count() == 3  # cpu, memory, nvidia.com/gpu
    width = page.eval_on_selector(".queue-row[data-queue=research] .bar .capability", "e => e.style.width")
    assert width == "100%"
    allocated = server.allocated("team-a")
    assert allocated.get("cpu") and page.locator(".queue-row[data-queue=team-a] .bar .allocated").count() >= 2
    assert page.locator(".queue-row[data-queue=team-a] .bars .bar-label").first.inner_text().startswith(f"cpu {allocated['cpu']} / ")
    # children sit inside their parent's block
    assert page.locator(".queue:has(> .queue-row[data-queue=root]) .queue-row[data-queue=team-b]").count() == 1
    shot(page, "dashboard-queues")


def test_a_queue_shows_its_waiting_jobs_in_order_with_reasons_and_events(page):
    page.click(".queue-row[data-queue=research] .queue-name")
    page.wait_for_selector("#queue-panel tr[data-job='default/train']")
    train = page.locator("#queue-panel tr[data-job='default/train']")
    assert train.get_attribute("data-position") == "1"
    assert "capability" in train.locator(".reason").inner_text()
    page.wait_for_selector("#queue-panel table.events tr[data-reason=Bound]")
    shot(page, "dashboard-queue-panel")

    page.click("#queue-panel a:text('default/train')")
    page.wait_for_selector("#task-table tr[data-task='train-trainer-0']")
    assert page.locator("#task-table tbody tr").count() == 2
    assert "PendingReason" in page.inner_text("#job-detail")
    shot(page, "dashboard-jobs")


def test_suspending_a_queue_from_the_page(page, server):
    page.click(".queue-row[data-queue=team-b] button[data-action=suspend]")
    page.wait_for_selector(".queue-row[data-queue=team-b] .badge[data-state=Suspended]")
    assert server.get(f"{QUEUES}/team-b")["status"]["state"] == "Suspended"
    shot(page, "dashboard-suspended")
    page.click(".queue-row[data-queue=team-b] button[data-action=resume]")
    page.wait_for_selector(".queue-row[data-queue=team-b] .badge[data-state=Open]")
    assert server.get(f"{QUEUES}/team-b")["status"]["state"] == "Open"
    events = server.get("/lahar/v1/events?for=queue/team-b")["items"]
    assert [e["message"] for e in events if e["type"] != "Audit" and e["reason"] in ("SuspendQueue", "ResumeQueue")][-2:] == ["queue team-b: Open -> Suspended", "queue team-b: Suspended -> Open"]


def test_an_admission_error_is_shown_next_to_the_queue_and_stays(page, server):
    page.fill(".queue-row[data-queue=team-a] input.weight", "0")
    page.click(".queue-row[data-queue=team-a] button[data-action=weight]")
    error = page.locator("[data-error-for=team-a]")
    error.filter(has_text="spec.weight").wait_for()
    assert "spec.weight: Invalid value: 0: must be in 1..2147483647" in error.inner_text()
    page.wait_for_timeout(2500)  # the page refreshes every 2 s: the error is still there
    assert "spec.weight" in page.inner_text("[data-error-for=team-a]")
    assert page.inner_text("[data-error-for=team-b]") == ""
    assert server.get(f"{QUEUES}/team-a")["spec"]["weight"] == 3
    shot(page, "dashboard-admission-error")

    page.fill(".queue-row[data-queue=team-a] input.weight", "4")
    page.click(".queue-row[data-queue=team-a] button[data-action=weight]")
    page.wait_for_function("document.querySelector('.queue-row[data-queue=team-a]').textContent.includes('w 4')")
    assert page.inner_text("[data-error-for=team-a]") == ""
    assert server.get(f"{QUEUES}/team-a")["spec"]["weight"] == 4


def test_events_and_usage_views(page):
    page.click("nav a[data-view=events]")
    page.wait_for_selector("#event-list tr[data-reason=Bound]")
    page.fill("#event-for", "job/default/etl")
    page.click("#event-form button")
    page.wait_for_function("[...document.querySelectorAll('#event-list tbody tr')].every(r => r.textContent.includes('default/etl'))")
    page.fill("#event-for", "node/x")
    page.click("#event-form button")
    page.wait_for_function("document.getElementById('event-error').textContent.includes('is not queue/NAME')")
    shot(page, "dashboard-events")

    page.click("nav a[data-view=usage]")
    page.wait_for_selector("#usage-table tr[data-queue=team-a]")
    page.wait_for_selector(".chart-box[data-resource=cpu] svg polyline", state="attached")  # a flat line has no height
    shot(page, "dashboard-usage")


def test_a_user_who_may_not_administer_a_queue_sees_why_in_place(browser, server):
    answer = httpx.post(server.url + "/lahar/v1/tokens", json={"user": "alice"}, headers={"Authorization": f"Bearer {server.token}"}, timeout=10)
    assert answer.status_code == 201, answer.text
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/ui/?token={answer.json()['token']}")
    page.wait_for_selector(".queue-row[data-queue=team-a] button[data-action=suspend]")
    assert page.inner_text("#who") == "alice"
    page.click(".queue-row[data-queue=team-a] button[data-action=suspend]")
    error = page.locator("[data-error-for=team-a]")
    error.filter(has_text="alice").wait_for()
    assert "may not" in error.inner_text()
    assert page.inner_text(".queue-row[data-queue=team-a] .badge") == "Open"
    assert server.get(f"{QUEUES}/team-a")["status"]["state"] == "Open"
    context.close()
