"""The home page in a real browser (Debian's chromium, driven by Playwright) with fifty
benchmarks: the header stays one line on a 1366 px desktop and short on a 375 px phone
whatever their number, the cards sit three abreast on the desktop and one on the phone
without the page scrolling sideways, the search filters the cards as one types (and keeps the
query in the address), and without a script the same form filters them on the server.
Screenshots go to the test's tmp_path, or to EVALSERVER_SCREENSHOT_DIR when set."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, ExampleSet
from tests import factories
from tests.browser import NEEDS_CHROMIUM, browser_log_in, browser_page
from tests.presentation.home_toys import reviews_add

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]

MORE = 48  # empty benchmarks beside the two toys: fifty in all


def _layout(page: Any) -> dict[str, Any]:
    return dict(page.evaluate("""() => {
        const box = (el) => el.getBoundingClientRect();
        const header = box(document.querySelector('.site-header'));
        const parts = [...document.querySelectorAll(
            '.nav .brand, .nav-links > li, .nav-user > *')].map(box);
        const cards = [...document.querySelectorAll('.benchmark-grid > .benchmark')]
            .filter((c) => !c.hidden).map(box);
        return {header: header.height, middles: parts.map((p) => (p.top + p.bottom) / 2),
                lefts: [...new Set(cards.map((c) => Math.round(c.left)))].length,
                tallest: Math.max(...cards.map((c) => c.height)),
                page: document.documentElement.scrollWidth,
                height: document.documentElement.scrollHeight};
    }"""))


@pytest.mark.django_db(transaction=True)
def test_it_lists_fifty_benchmarks_under_a_one_line_header_and_filters_them(
    browser: Any, live_server: Any, catalog_settings: Settings, tmp_path: Path,
    sent: list[tuple[str, int]],
) -> None:
    from playwright.sync_api import expect

    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    reviews_add(tmp_path / "bundles")
    for i in range(MORE):
        benchmark = Benchmark.objects.create(
            slug=f"bench-{i:02d}", name=f"Benchmark {i:02d}", num_classes=10,
            main_example_set=f"bench-{i:02d}-test", modality=("image", "text", "audio")[i % 3])
        ExampleSet.objects.create(benchmark=benchmark, slug=f"bench-{i:02d}-test",
                                  name="Test", size=1000 + i)
    factories.host_create("staff")  # every link of the header: review, audits...
    shots = Path(os.environ.get("EVALSERVER_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    errors: list[str] = []
    page = browser_page(browser, width=1366, height=768, errors=errors, timeout_ms=20_000)
    browser_log_in(page, base, "staff", factories.PASSWORD)
    page.goto(f"{base}/")

    desktop = _layout(page)
    page.screenshot(path=str(shots / "home-1366.png"), full_page=True)
    # brand, links and user on one line: their middles within a few pixels of each other
    assert max(desktop["middles"]) - min(desktop["middles"]) < 4, desktop
    assert desktop["header"] < 60, desktop
    assert desktop["lefts"] == 3 and desktop["page"] <= 1366, desktop
    expect(page.locator("#benchmark-count")).to_have_text("50 of 50 benchmarks")

    # typing filters the cards at once, and the address keeps the query
    page.get_by_label("Name").fill("REVIEW")
    expect(page.locator(".benchmark-grid > .benchmark:visible")).to_have_count(1)
    expect(page.locator("#benchmark-toy-reviews")).to_be_visible()
    expect(page.locator("#benchmark-count")).to_have_text("1 of 50 benchmarks")
    assert page.url == f"{base}/?q=REVIEW"
    expect(page.locator("#benchmark-toy-reviews .best-model")).to_have_text("m1 · 100.00%")
    page.get_by_label("Name").fill("")
    page.get_by_label("Modality").select_option("audio")
    expect(page.locator(".benchmark-grid > .benchmark:visible")).to_have_count(MORE // 3)
    page.get_by_label("Name").fill("toy")
    expect(page.locator(".benchmark-grid > .benchmark:visible")).to_have_count(0)
    expect(page.locator("#benchmark-none")).to_be_visible()
    assert page.url == f"{base}/?q=toy&modality=audio"
    page.reload()  # the server shows what the script showed
    expect(page.locator("#benchmark-none")).to_be_visible()
    expect(page.locator("#benchmark-count")).to_have_text("0 of 50 benchmarks")

    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{base}/")
    phone = _layout(page)
    page.screenshot(path=str(shots / "home-375.png"), full_page=True)
    assert phone["header"] <= 100 and phone["lefts"] == 1 and phone["page"] <= 375, phone
    assert errors == []

    # without a script, the same form filters on the server
    plain = browser_page(browser, width=1366, height=768, java_script_enabled=False)
    plain.goto(f"{base}/")
    plain.get_by_label("Name").fill("toy")
    plain.get_by_label("Modality").select_option("text")
    plain.get_by_role("button", name="Search").click()
    plain.wait_for_url(re.compile(re.escape(base) + r"/\?q=toy&modality=text$"))
    assert [card.get_attribute("id") for card in plain.locator(
        ".benchmark-grid > .benchmark:visible").all()] == ["benchmark-toy-reviews"]
    expect(plain.locator("#benchmark-count")).to_have_text("1 of 50 benchmarks")
    plain.context.close()
    page.context.close()
