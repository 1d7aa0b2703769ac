"""One real browser (Debian's chromium, driven by Playwright) through the audit pages: a
maintainer logs in, starts an AUL audit on MNIST with the form, watches the report page follow
the worker (a real Celery worker on the gpu queue) until it reloads with the histogram, and the
page fits a phone and a desktop. Screenshots go to the test's tmp_path, or to
EVALSERVER_SCREENSHOT_DIR when set (to look at them)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from leaderboard.audits.models import Audit
from tests.audits.conftest import maintainer
from tests.browser import NEEDS_CHROMIUM, browser_log_in

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.mark.django_db(transaction=True)
def test_it_starts_an_aul_audit_and_shows_its_report(
    browser: Any, live_server: Any, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest, run_load_benchmarks: Callable[..., tuple[str, str]],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setenv("EVALSERVER_TEST_WORKER_QUEUES", "cpu,gpu")
    request.getfixturevalue("scoring_worker")
    run_load_benchmarks("--benchmark", "mnist")
    maintainer()
    shots = Path(os.environ.get("EVALSERVER_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)

    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    browser_log_in(page, base, "maint", "a-long-test-password", next_path="/audits/")
    expect(page).to_have_url(f"{base}/audits/")
    expect(page.locator(".nav-links a[aria-current=page]")).to_have_text("Audits")

    page.get_by_label("Area under the loss curve").check()
    page.select_option("select[name=benchmark]", "mnist")
    page.fill("#id_epochs", "2")
    page.fill("#id_max_candidates", "40")
    page.get_by_role("button", name="Start the audit").click()
    page.wait_for_url(re.compile(re.escape(base) + r"/audits/\d+/$"))
    audit = Audit.objects.get()
    assert (audit.kind, audit.config["epochs"], audit.config["max_candidates"]) == ("aul", 2, 40)
    expect(page.locator("#poll-note")).to_be_visible()
    expect(page.locator("#status-hint")).to_have_text(
        re.compile(r"^(waiting for a worker\.|a worker is running it(: epoch \d of 2)?\.)$"))
    expect(page.locator("#status-text")).to_have_text("done", timeout=240_000)
    expect(page.locator("#poll-note")).to_have_count(0)
    audit.refresh_from_db()
    expect(page.locator("#candidates-created")).to_have_text(str(audit.candidates_created))
    expect(page.locator("#histogram .chart-wide svg polyline")).to_have_count(2)
    expect(page.locator("#histogram .chart-wide svg")).to_be_visible()
    expect(page.locator("#histogram .chart-narrow svg")).to_be_hidden()
    expect(page.locator(".flag-grid > li")).to_have_count(min(50, audit.result["num_flagged"]))
    expect(page.locator(".flag-image").first).to_be_visible()
    page.screenshot(path=str(shots / "audit-1280.png"), full_page=True)
    page.locator("#histogram").screenshot(path=str(shots / "audit-histogram-1280.png"))
    measure = """(which) => {
        const svg = document.querySelector('#histogram .chart-' + which + ' svg')
            .getBoundingClientRect();
        const box = document.querySelector('#histogram .chart').getBoundingClientRect();
        return {svg: svg.width, box: box.width, height: svg.height};
    }"""
    chart = page.evaluate(measure, "wide")
    assert abs(chart["svg"] - chart["box"]) < 1 and chart["height"] > 0.4 * chart["svg"], chart

    page.set_viewport_size({"width": 375, "height": 800})
    expect(page.locator("#histogram .chart-narrow svg")).to_be_visible()
    expect(page.locator("#histogram .chart-wide svg")).to_be_hidden()
    chart = page.evaluate(measure, "narrow")
    assert abs(chart["svg"] - chart["box"]) < 1 and chart["height"] > 0.8 * chart["svg"], chart
    page.screenshot(path=str(shots / "audit-375.png"), full_page=True)
    page.locator("#histogram").screenshot(path=str(shots / "audit-histogram-375.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.goto(f"{base}/audits/")
    expect(page.locator(f"#audit-{audit.pk} .status-badge")).to_have_text("done")
    page.screenshot(path=str(shots / "audit-list-375.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert errors == []
    context.close()
