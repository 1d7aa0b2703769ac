"""docs/participants/quickstart.md, steps 1 to 6, walked in a real browser (Debian's
chromium, driven by Playwright) on a live server holding the CIFAR-10 demo (the 31 demo
models of `seed_demo`) with a real scoring worker: sign up, log in, create an API token,
upload a predictions file made from the data directory's published predictions with the web
form, wait for `scored` on the submission's page, go back to the board and find the row with
its accuracy, rank and rank shifts computed here with NumPy; then the token reads the
submission back from the API, as the quick start's API section does.

The steps are read from the quick start itself: every label it writes in bold in a step
must be on a page that step visits, so the document and the pages cannot drift apart.
(This module is not under tests/browser/: tests/browser.py, the browser helpers, holds that
name.)"""

from __future__ import annotations

import io
import json
import re
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission
from tests.browser import NEEDS_CHROMIUM
from tests.conftest import wait_for_status
from tests.demo_truth import (
    CIFAR10,
    NEW_TEST_SETS,
    PREDICTIONS,
    cifar10_truth,
    competition_ranks,
    page_text,
    pct,
    shift_text,
)
from tests.helpers import PROJECT_ROOT
from tests.pages import leaderboard_table

QUICKSTART = PROJECT_ROOT / "docs/participants/quickstart.md"
USERNAME, PASSWORD = "new-participant", "a-long-quickstart-password"
MODEL_NAME = "my first model"
# whose published predictions the participant uploads, as the quick start's .npy of class ids
SOURCE_MODEL = "resnet_basic_110"

def quickstart_steps() -> dict[int, list[str]]:
    """Step number -> the labels written in bold in that step's section ("## N. ...")."""
    steps: dict[int, list[str]] = {}
    for match in re.finditer(r"(?ms)^## (\d+)\. .*?(?=^## |\Z)", QUICKSTART.read_text()):
        # a label may wrap onto the next line of the Markdown
        steps[int(match.group(1))] = [" ".join(label.split()) for label in
                                      re.findall(r"(?s)\*\*(.+?)\*\*", match.group(0))]
    return steps


def test_it_reads_the_labels_of_six_steps_from_the_quick_start() -> None:
    steps = quickstart_steps()
    assert sorted(steps) == [1, 2, 3, 4, 5, 6]
    assert all(steps.values()), steps
    assert "Create account" in steps[1] and "Rank (UB)" in steps[6]


def field(page: Any, label: str) -> Any:
    """The form field of exactly this label (a required one's label ends in " *")."""
    return page.get_by_label(re.compile("^" + re.escape(label) + r"( \*)?$"))


class Walk:
    """The browser page, and the text of every page each step has shown."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.seen: dict[int, list[str]] = {}

    def look(self, step: int) -> None:
        self.seen.setdefault(step, []).append(page_text(self.page.content()))

    def check(self, step: int, labels: list[str]) -> None:
        missing = [label for label in labels
                   if not any(label in text for text in self.seen.get(step, []))]
        assert not missing, f"step {step} of the quick start names {missing}, not on its pages"


# Also on SQLite: scripts/serve.sh's one-machine path.
@pytest.mark.slow
@pytest.mark.sqlite
@NEEDS_CHROMIUM
@pytest.mark.django_db(transaction=True)
def test_it_walks_the_quick_start_from_sign_up_to_the_scored_row_on_the_board(
    browser: Any, live_server: Any, scoring_worker: Path, data_dir: Path, tmp_path: Path,
    run_load_benchmarks: Callable[..., tuple[str, str]], settings: Settings,
) -> None:
    from playwright.sync_api import expect

    # the demo's CIFAR-10 board (seed_demo skips the benchmarks not loaded), scored by the
    # real worker like the participant's own submission after it
    run_load_benchmarks("--benchmark", CIFAR10)
    settings.EVALSERVER_DAILY_QUOTA = 10  # the default: the quick start's quota applies
    settings.ACCOUNT_EMAIL_VERIFICATION = "optional"  # scripts/serve.sh's
    call_command("seed_demo", "--data-dir", str(data_dir), stdout=io.StringIO())
    for pk in Submission.objects.values_list("pk", flat=True):
        assert wait_for_status(pk, ("scored", "failed"), log=scoring_worker) == "scored"
    # the quick start's file: class ids of shape (10000,) saved with np.save
    top1 = np.array(json.loads((data_dir / PREDICTIONS / "original_predictions" /
                                f"{SOURCE_MODEL}_predictions.json").read_text()))
    preds = tmp_path / "preds.npy"
    np.save(preds, top1.astype(np.int64))

    steps = quickstart_steps()
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    walk = Walk(page)

    # 1. Create an account
    page.goto(f"{base}/")
    walk.look(1)
    page.get_by_role("link", name="Sign up").first.click()
    # a click starts the navigation without waiting for the new page: wait for it before
    # reading its text
    expect(page.get_by_role("button", name="Create account")).to_be_visible()
    walk.look(1)
    field(page, "Email").fill(f"{USERNAME}@example.org")
    field(page, "Username").fill(USERNAME)
    field(page, "Password").fill(PASSWORD)
    field(page, "Password (again)").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    # as on scripts/serve.sh's demo server: verification optional, logged in at once (the
    # verification email's way: tests/accounts/test_account_browser.py)
    expect(page.locator(".nav-user .username")).to_have_text(USERNAME)
    walk.look(1)
    walk.check(1, [label for label in steps[1]
                   if label not in ("Please Confirm Your Email Address", "Confirm")])

    # 2. Log in (logged out first)
    page.locator(".nav-user").get_by_role("button", name="Log out").click()
    page.locator(".nav-user").get_by_role("link", name="Log in").click()
    expect(page.get_by_role("button", name="Log in")).to_be_visible()
    walk.look(2)
    field(page, "Username or email").fill(USERNAME)
    field(page, "Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".nav-user .username")).to_have_text(USERNAME)
    walk.check(2, steps[2])

    # 3. Get an API token
    page.locator(".nav-user .username").click()
    expect(page.get_by_role("button", name="Create token")).to_be_visible()
    walk.look(3)
    page.get_by_role("button", name="Create token").click()
    key = field(page, "Your token").input_value()
    assert re.fullmatch(r"[0-9a-f]{40}", key), key
    walk.look(3)
    walk.check(3, steps[3])

    # 4. Submit predictions with the web form
    page.locator(".nav-links").get_by_role("link", name="Submit").click()
    field(page, "Benchmark").select_option(label="CIFAR-10 (cifar10)")
    walk.look(4)
    field(page, "Model name").fill(MODEL_NAME)
    expect(field(page, "Public")).to_be_checked()
    field(page, "cifar10-test · 10,000 rows · required").set_input_files(str(preds))
    # the quota line of the quick start's "Quotas" (EVALSERVER_DAILY_QUOTA, 10 by default)
    assert ("10 of 10 submissions left on cifar10 (the quota counts those of the last 24 "
            "hours).") in walk.seen[4][-1]
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url(re.compile(re.escape(base) + r"/submissions/\d+/$"))
    walk.check(4, steps[4])

    # 5. Watch its status
    submission = Submission.objects.get(owner__username=USERNAME)
    assert submission.model_name == MODEL_NAME and submission.public
    assert wait_for_status(submission.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    expect(page.locator("#status-text")).to_have_text("scored", timeout=60_000)
    walk.look(5)
    walk.check(5, steps[5])

    # 6. Read the leaderboard
    walk.look(6)
    page.get_by_role("link", name="CIFAR-10 leaderboard").click()
    expect(page).to_have_url(f"{base}/benchmarks/{CIFAR10}/")
    walk.look(6)
    walk.check(6, steps[6])

    # the row, against the data: the demo's 31 models and this one (original labels,
    # corrected and CIFAR-10H; no CIFAR-10.1 file was sent)
    truth = cifar10_truth(data_dir)
    scores = {**truth.scores, MODEL_NAME: {
        slug: truth.scores[SOURCE_MODEL][slug] for slug in ("original", "corrected", "cifar10h")}}
    _, rows = leaderboard_table(page.content())
    (row,) = [r for r in rows if r.submission_id == submission.pk]
    assert row.model == MODEL_NAME and len(rows) == len(scores) == 32
    ranks = {slug: competition_ranks({m: s[slug] for m, s in scores.items() if slug in s})
             for slug in ("original", "corrected", "cifar10h")}
    for slug, rank in ranks.items():
        cell = row.cells[slug]
        assert cell.acc == pct(*scores[MODEL_NAME][slug]), slug
        assert cell.rank == f"#{rank[MODEL_NAME]}", slug
        if slug != "original":
            assert cell.shift == shift_text(ranks["original"][MODEL_NAME] - rank[MODEL_NAME])
    for slug in NEW_TEST_SETS:
        assert (row.cells[slug].acc, row.cells[slug].rank) == ("", ""), slug
    # the same rank as the demo's own upload of these predictions (a tie shares the rank)
    (twin,) = [r for r in rows if r.model == SOURCE_MODEL]
    assert twin.cells["original"].rank == row.cells["original"].rank
    context.close()

    # "The same by the API": the token of step 3 reads the submission back
    request = urllib.request.Request(f"{base}/api/submissions/{submission.pk}/",
                                     headers={"Authorization": f"Token {key}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = json.load(answer)
    correct, total = scores[MODEL_NAME]["original"]
    assert (body["status"], body["model_name"]) == ("scored", MODEL_NAME)
    assert (body["scores"]["original"]["correct"], body["scores"]["original"]["total"]) == (
        correct, total)
