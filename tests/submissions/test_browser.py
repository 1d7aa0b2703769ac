"""One real browser (Debian's chromium, driven by Playwright) through the whole site: sign up,
log in, upload real CIFAR-10 predictions with the upload script, watch the status page turn
to scored (a real Celery worker scores it), find the row on the leaderboard; screenshots of
the leaderboard on a phone and on a desktop are saved in the test's tmp_path."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.templatetags.leaderboard_extras import percent
from tests import factories
from tests.browser import NEEDS_CHROMIUM
from tests.conftest import wait_for_status
from tests.scored_models import submit_model

PASSWORD = "a-long-browser-password"
MODEL = "resnet_basic_110"
# already on the leaderboard, from another user: vgg16_keras ranks above MODEL on original
OTHERS = ("vgg16_keras", "resnet_preact_basic_110")

# Also on SQLite: scripts/serve.sh's one-machine path (a browser, the web, a real worker, one
# SQLite file).
pytestmark = [pytest.mark.slow, pytest.mark.sqlite, NEEDS_CHROMIUM]


@pytest.fixture
def slow_scoring_worker(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    """The real scoring worker, sleeping 1.5 s per task after its claim, so the status page
    is seen queued or running before it is scored."""
    monkeypatch.setenv("EVALSERVER_SCORING_DELAY_MS", "1500")
    log: Path = request.getfixturevalue("scoring_worker")
    return log


def _original_accuracy(data_dir: Path, model: str) -> float:
    files = factories.cifar10_model_files(data_dir, model)
    labels = np.load(data_dir / "cifar10/original_labels.npy")
    return float((np.array(json.loads(files["cifar10-test"].read_text())) == labels).mean())


@pytest.mark.django_db(transaction=True)
def test_it_signs_up_submits_and_shows_the_scored_model_on_the_leaderboard(
    browser: Any, live_server: Any, slow_scoring_worker: Path,
    run_load_benchmarks: Callable[..., tuple[str, str]], data_dir: Path, tmp_path: Path,
    settings: Settings,
) -> None:
    from playwright.sync_api import expect

    # logged in on signing up (the verification email's way: tests/accounts/)
    settings.ACCOUNT_EMAIL_VERIFICATION = "optional"

    run_load_benchmarks("--benchmark", "cifar10", "--benchmark", "mnist")
    owner = factories.user_create("someone-else")
    for model in OTHERS:
        other = submit_model(data_dir, model, owner=owner)
        assert wait_for_status(other.pk, ("scored", "failed"), log=slow_scoring_worker) == "scored"
    accuracy = {m: _original_accuracy(data_dir, m) for m in (MODEL, *OTHERS)}
    expected = f"{percent(accuracy[MODEL])}%"
    expected_rank = 1 + sum(a > accuracy[MODEL] for a in accuracy.values())
    files = factories.cifar10_model_files(data_dir, MODEL)
    bad_file = tmp_path / "preds.txt"
    bad_file.write_text("1\n2\n")

    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # the keyboard's first stop skips the header's links to the content (WCAG 2.4.1)
    page.goto(f"{base}/")
    skip = page.locator("a.skip-link")
    assert skip.bounding_box()["y"] < 0  # type: ignore[index]  # off screen until focused
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    assert skip.bounding_box()["y"] >= 0  # type: ignore[index]
    page.keyboard.press("Enter")
    expect(page.locator("main#main")).to_be_focused()

    # sign up, then log in
    page.get_by_role("link", name="Sign up").click()
    page.fill("#id_email", "browser-user@example.org")
    page.fill("#id_username", "browser-user")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.locator(".nav-user .username")).to_have_text("browser-user")
    page.locator(".nav-user").get_by_role("button", name="Log out").click()
    page.locator(".nav-user").get_by_role("link", name="Log in").click()
    expect(page).to_have_url(f"{base}/accounts/login/")
    page.fill("#id_login", "browser-user")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".nav-user .username")).to_have_text("browser-user")

    # the submit page shows only the chosen benchmark's inputs
    page.locator(".nav-links").get_by_role("link", name="Submit").click()
    expect(page).to_have_url(f"{base}/submit/")
    expect(page.locator(".file-group[data-benchmark=cifar10]")).to_be_hidden()
    page.select_option("select[name=benchmark]", "cifar10")
    expect(page.locator(".file-group[data-benchmark=cifar10]")).to_be_visible()
    expect(page.locator(".file-group[data-benchmark=mnist]")).to_be_hidden()
    expect(page.locator(".checkpoint-help[data-benchmark=cifar10]")).to_be_visible()
    expect(page.locator(".checkpoint-help[data-benchmark=mnist]")).to_be_hidden()
    page.fill("#id_model_name", MODEL)

    # a wrong file: the script shows the server's words on the field, and keeps the form
    page.set_input_files("input[name='cifar10-test']", str(bad_file))
    page.get_by_role("button", name="Submit", exact=True).click()
    field = page.locator(".field[data-field='cifar10-test']")
    expect(field).to_have_class(re.compile(r"\bhas-error\b"))
    expect(field.locator(".error")).to_have_text("'preds.txt': use one of .npy, .npz, .json, .csv")
    expect(page.locator("#form-errors")).to_be_visible()
    expect(page.locator("#id_model_name")).to_have_value(MODEL)
    page.screenshot(path=str(tmp_path / "submit-error-1280x800.png"), full_page=True)

    # the real file, uploaded with a progress line; what the line says is logged as it changes
    # (the page is gone once the upload is done)
    page.set_input_files("input[name='cifar10-test']", str(files["cifar10-test"]))
    progress: list[str] = []
    page.on("console", lambda message: progress.append(message.text))
    page.evaluate("""() => {
        const box = document.getElementById('upload-progress');
        const text = document.getElementById('upload-progress-text');
        new MutationObserver(() => {
            console.log((box.hidden ? 'hidden: ' : 'shown: ') + text.textContent);
        }).observe(text, {childList: true, characterData: true, subtree: true});
    }""")
    with page.expect_response(lambda r: r.url == f"{base}/submit/"
                              and r.request.method == "POST") as answer:
        page.get_by_role("button", name="Submit", exact=True).click()
    assert answer.value.status == 201  # the upload script's request, not the plain form
    page.wait_for_url(re.compile(re.escape(base) + r"/submissions/\d+/$"))
    status_page = page.url
    expect(page.locator("h1")).to_contain_text(MODEL)
    assert any(re.fullmatch(r"shown: Uploading… \d+% \(.* MB\)", line) for line in progress), \
        progress
    assert "shown: Received: opening the submission's status page…" in progress, progress

    # the status page polls status.json and reloads itself once the worker has scored it
    expect(page.locator("#status-text")).to_have_text(re.compile(r"^(queued|running)$"))
    expect(page.locator("#poll-note")).to_be_visible()
    page.screenshot(path=str(tmp_path / "status-pending-1280x800.png"), full_page=True)
    with page.expect_request(re.compile(re.escape(status_page) + r"status\.json$")):
        pass
    expect(page.locator("#status-text")).to_have_text("scored", timeout=240_000)
    expect(page.locator("#poll-note")).to_have_count(0)
    expect(page.locator("#score-original tr.headline td").first).to_have_text(expected)
    page.screenshot(path=str(tmp_path / "submission-1280x800.png"), full_page=True)

    # the leaderboard row, reached from the navigation bar's benchmarks (the home page)
    page.locator(".nav-links").get_by_role("link", name="Benchmarks").click()
    page.locator("#benchmark-cifar10 h2").get_by_role("link", name="CIFAR-10").click()
    expect(page).to_have_url(f"{base}/benchmarks/cifar10/")
    expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
    row = page.locator("#leaderboard tbody tr", has_text=MODEL)
    expect(row).to_have_count(1)
    expect(row.locator("td[data-label-set=original] .acc")).to_have_text(expected)
    expect(row.locator("td.col-rank")).to_have_text(str(expected_rank))

    page.screenshot(path=str(tmp_path / "leaderboard-1280x800.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 800})
    page.screenshot(path=str(tmp_path / "leaderboard-375x800.png"), full_page=True)
    # on a phone the page itself does not scroll sideways: the table scrolls in its box,
    # and the model column keeps a readable width in view while it does
    layout = page.evaluate("""() => {
        const box = document.querySelector('.leaderboard-scroll');
        const model = document.querySelector('#leaderboard tbody .col-model');
        box.scrollLeft = box.scrollWidth;
        const cell = model.getBoundingClientRect();
        return {page: document.documentElement.scrollWidth, box: box.clientWidth,
                table: box.scrollWidth, modelLeft: cell.left, modelWidth: cell.width};
    }""")
    assert layout["page"] <= 375, layout
    assert layout["table"] > layout["box"], layout
    assert layout["modelWidth"] >= 110 and 0 <= layout["modelLeft"] < 60, layout
    page.screenshot(path=str(tmp_path / "leaderboard-375x800-scrolled.png"))
    # every page fits a phone's width (tables scroll inside their own boxes)
    for name, path in (("home", "/"), ("submit", "/submit/?benchmark=cifar10"),
                       ("submission", status_page[len(base):]), ("profile", "/profile/"),
                       ("my-submissions", "/submissions/")):
        page.goto(f"{base}{path}")
        page.screenshot(path=str(tmp_path / f"{name}-375x800.png"), full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} is {width} px wide on a 375 px phone"
    assert errors == []
    context.close()
