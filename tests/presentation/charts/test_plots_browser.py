"""The plots page in a real browser (Debian's chromium, driven by Playwright) with the 30 real
CIFAR-10 models of CIFAR-10.1 on the leaderboard, scored by a real worker: on a 1280 px
desktop and a 375 px phone every chart is drawn in the layout of that width, nothing makes the
page scroll sideways, hovering a point names its model and clicking it opens the submission,
whose page shows its effective robustness. Screenshots are saved in /tmp/plots-shots/ to be
looked at."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser import NEEDS_CHROMIUM
from tests.conftest import wait_for_status
from tests.scored_models import submit_model
from tests.workers.scoring.realdata import MODELS

SHOTS = Path("/tmp/plots-shots")
HOVERED = "alexnet_tf_ben"  # the least accurate: a point with no neighbour on top of it
CHARTS = ("new-test-set", "label-set", "ranks", "noise-prevalence")

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


def _layout(page: Any) -> dict[str, Any]:
    return dict(page.evaluate("""() => {
        const visible = (el) => el.getBoundingClientRect().width > 0;
        const charts = {};
        for (const section of document.querySelectorAll('section.plot')) {
            const shown = [...section.querySelectorAll('figure.chart svg')].filter(visible);
            const box = shown.length ? shown[0].getBoundingClientRect() : null;
            charts[section.id] = {shown: shown.length,
                                  viewBox: shown.length ? shown[0].getAttribute('viewBox') : '',
                                  width: box ? box.width : 0,
                                  right: box ? box.right : 0};
        }
        return {page: document.documentElement.scrollWidth, charts};
    }"""))


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_plots_on_a_phone_and_a_desktop(
    browser: Any, live_server: Any, scoring_worker: Path,
    run_load_benchmarks: Callable[..., tuple[str, str]], data_dir: Path,
    settings: Any,
) -> None:
    from playwright.sync_api import expect

    run_load_benchmarks("--benchmark", "cifar10")
    settings.EVALSERVER_DAILY_QUOTA = 0
    ids = {model: submit_model(data_dir, model).pk for model in MODELS}  # the worker scores
    for pk in ids.values():
        assert wait_for_status(pk, ("scored", "failed"), log=scoring_worker) == "scored"
    SHOTS.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{base}/benchmarks/cifar10/")
    page.get_by_role("link", name="Plots").click()
    expect(page).to_have_url(f"{base}/benchmarks/cifar10/plots/")
    expect(page.locator("#fit-equation")).to_contain_text("cifar10.1-v6 = ")
    layout = _layout(page)
    assert layout["page"] <= 1280, layout
    for chart in CHARTS:
        assert layout["charts"][chart]["shown"] == 1, layout
        assert layout["charts"][chart]["viewBox"].startswith("0 0 640 "), layout
        assert layout["charts"][chart]["width"] >= 500, layout
    page.screenshot(path=str(SHOTS / "plots-1280.png"), full_page=True)

    # hovering a point shows its name; clicking it opens the submission
    point = page.locator("#new-test-set .chart-wide a.plot-pt", has_text=HOVERED).first
    name = point.locator(".plot-pt-name")
    expect(name).to_be_hidden()
    point.locator("circle").hover()
    expect(name).to_be_visible()
    expect(name).to_have_text(HOVERED)
    page.screenshot(path=str(SHOTS / "new-test-set-hover-1280.png"))  # the mouse stays put
    point.locator("circle").click()
    expect(page).to_have_url(f"{base}/submissions/{ids[HOVERED]}/")
    expect(page.locator("#effective-robustness tr[data-label-set='cifar10.1-v6'] .residual")
           ).to_have_text(re.compile(r"^[+-]\d+\.\d\d$"))
    page.locator("#effective-robustness").screenshot(path=str(SHOTS / "robustness-1280.png"))

    # the label-set chooser (a plain GET form) and chosen noise curves
    page.goto(f"{base}/benchmarks/cifar10/plots/")
    page.select_option("#plot-labels", "cifar10h")
    page.select_option("#plot-new", "cifar10.1-v4")
    chosen = ",".join(str(ids[m]) for m in ("vgg16_keras", "densenet_BC_100_12", "shake_drop"))
    page.fill("#plot-ids", chosen)
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#label-set h2")).to_contain_text("cifar10h")
    expect(page.locator("#new-test-set h2")).to_contain_text("cifar10.1-v4")
    expect(page.locator("#noise-prevalence .chart-wide .curve-corrected")).to_have_count(3)
    page.screenshot(path=str(SHOTS / "plots-chosen-1280.png"), full_page=True)

    # a phone: the narrow layouts, nothing wider than the screen
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{base}/benchmarks/cifar10/plots/")
    layout = _layout(page)
    assert layout["page"] <= 375, layout
    for chart in CHARTS:
        assert layout["charts"][chart]["viewBox"].startswith("0 0 360 "), layout
        assert layout["charts"][chart]["right"] <= 375, layout
    page.screenshot(path=str(SHOTS / "plots-375.png"), full_page=True)
    page.goto(f"{base}/submissions/{ids['vgg16_keras']}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.locator("#effective-robustness").screenshot(path=str(SHOTS / "robustness-375.png"))
    assert errors == []
    context.close()
