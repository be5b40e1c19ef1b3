"""The HTML report renders in a real headless Chromium: every plot is an image that loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("LAHAR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no chromium binary (CI installs the distribution's chromium)")

TRACE = """submit,duration,queue,tasks,cpu,gpu
0,10m,research,2,4,1
0,20m,research,1,4,2
60,5m,prod,4,2,1
120,15m,prod,1,8,4
300,30m,research,2,4,1
"""

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: prod}
spec: {weight: 3}
"""


def test_the_report_opens_in_chromium_and_its_plots_render(tmp_path):
    from playwright.sync_api import sync_playwright

    (tmp_path / "trace.csv").write_text(TRACE)
    (tmp_path / "queues.yaml").write_text(QUEUES)
    report = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "simulate", "--trace", f"csv:{tmp_path / 'trace.csv'}", "--queues", str(tmp_path / "queues.yaml"),
         "--cluster", "2 x cpu=16,memory=64Gi,nvidia.com/gpu=4", "--report", str(report)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(report.as_uri())
        images = page.locator("img")
        assert images.count() >= 3
        sizes = page.evaluate("() => [...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        assert all(complete and width > 100 and height > 100 for complete, width, height in sizes), sizes
        assert "research" in page.content() and "prod" in page.content()
        shot = ARTIFACTS / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
