"""The submission page's buttons in a real browser (Debian's chromium through Playwright):
the owner cancels a queued submission, runs again one the server failed, withdraws a scored
one (with a reason) and sees it leave the leaderboard."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings

from leaderboard import queue
from leaderboard.submissions.models import Submission
from leaderboard.tasks.cpu import score_submission
from tests import factories, task_names
from tests.browser import NEEDS_CHROMIUM, browser_log_in

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.mark.django_db(transaction=True)
def test_it_cancels_reruns_and_withdraws_from_the_submission_page(
    browser: Any, live_server: Any, loaded: Settings, data_dir: Path,
    sent: list[tuple[str, int]],
) -> None:
    from playwright.sync_api import expect

    alice = factories.user_create("alice")
    queued = factories.submission_for_model(data_dir, "resnet_basic_110", owner=alice)
    lost = factories.submission_for_model(data_dir, "vgg16_keras", owner=alice)
    Submission.objects.filter(pk=lost.pk).update(
        status="failed", failure_code="worker_lost", failure_reason="the worker vanished",
        finished_at=timezone.now() - timedelta(minutes=5), attempts=3)
    scored = factories.submission_for_model(data_dir, "nas", owner=alice)
    assert score_submission.apply(args=[scored.pk], task_id="s").get() == "scored"
    sent.clear()

    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    browser_log_in(page, base, "alice", "a-long-test-password")
    expect(page.get_by_role("link", name="My submissions")).to_be_visible()

    page.goto(f"{base}/submissions/{queued.pk}/")
    expect(page.locator("#status-text")).to_have_text("queued")
    expect(page.locator("#rerun-button")).to_have_count(0)
    page.locator("#cancel-button").click()
    expect(page.get_by_text("The submission is cancelled: it will not be scored.")).to_be_visible()
    expect(page.locator("#status-text")).to_have_text("cancelled")
    expect(page.locator("#cancel-button")).to_have_count(0)
    assert Submission.objects.get(pk=queued.pk).status == "cancelled"

    page.goto(f"{base}/submissions/{lost.pk}/")
    expect(page.locator("#failure-reason")).to_contain_text("the worker vanished")
    page.locator("#rerun-button").click()
    expect(page.get_by_text("The submission is queued to run again.")).to_be_visible()
    expect(page.locator("#status-text")).to_have_text("queued")
    lost.refresh_from_db()
    assert (lost.status, lost.attempts, lost.reruns) == ("queued", 0, 1)
    # the home page after logging in reads each board, which asks a worker for its rank (UB)
    assert [job for job in sent if job[0] != queue.REFRESH_BOARD_SIGNIFICANCE] == [
        (task_names.SCORE_SUBMISSION, lost.pk)]

    page.goto(f"{base}/benchmarks/cifar10/")
    expect(page.get_by_text("nas", exact=True)).to_have_count(1)
    page.goto(f"{base}/submissions/{scored.pk}/")
    page.fill("#withdraw-reason", "trained on the test set by mistake")
    expect(page.locator("#withdraw-warning")).to_have_text(
        "Withdrawing takes it off every board for good: it cannot be undone (its scores stay "
        "for you).")
    # unticked, the browser does not send it (the box is required)...
    page.locator("#withdraw-button").click()
    assert page.locator("#withdraw-confirm").evaluate("box => box.validity.valueMissing")
    assert Submission.objects.get(pk=scored.pk).withdrawn is None
    # ...nor does the server act on a form sent without it
    page.locator("#withdraw-confirm").evaluate("box => box.required = false")
    page.locator("#withdraw-button").click()
    expect(page.get_by_text('Nothing was done: a withdrawal cannot be undone, so tick "I '
                            'understand" to withdraw.')).to_be_visible()
    assert Submission.objects.get(pk=scored.pk).withdrawn is None
    page.fill("#withdraw-reason", "trained on the test set by mistake")
    page.locator("#withdraw-confirm").check()
    page.locator("#withdraw-button").click()
    expect(page.get_by_text("The submission is withdrawn: it is off every board.")).to_be_visible()
    expect(page.locator("#withdrawn-reason")).to_have_text(
        "Reason: trained on the test set by mistake")
    expect(page.locator("#visibility")).to_have_text("private")
    expect(page.locator("#withdraw-button")).to_have_count(0)
    expect(page.locator("#score-original")).to_be_visible()  # its scores stay for its owner
    page.goto(f"{base}/benchmarks/cifar10/")
    expect(page.get_by_text("nas", exact=True)).to_have_count(0)
    context.close()  # no request of the page's left running against the live server
    assert errors == []
