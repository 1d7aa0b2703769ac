"""A new benchmark with no code change, end to end: a small synthetic bundle is written in a
temporary folder, zipped, uploaded through the API by a staff user and added by a real Celery
worker; then a researcher submits predictions to it through the API and through the submit
form in a real browser (Debian's chromium, driven by Playwright), and the worker's scores
equal those counted here by hand from the bundle's labels and votes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from leaderboard.catalog.models import BundleUpload
from leaderboard.templatetags.leaderboard_extras import percent
from tests import factories
from tests.api_support import api_client
from tests.browser import NEEDS_CHROMIUM, browser_log_in
from tests.catalog.toy_bundle import CORRECTED, EXAMPLE_SET, LABELS, SLUG, UNKNOWN, toy_zip
from tests.conftest import wait_for_status

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]

PASSWORD = "a-long-test-password"  # tests.factories.user_create's
API_PREDICTIONS = [0, 2, 2, 0, 0, 2, 1, 1, 2, 0, 0, 1]
FORM_PREDICTIONS = [0, 1, 2, 0, 1, 2, 0, 1, 1, 0, 0, 2]


def by_hand(predictions: list[int]) -> dict[str, tuple[int, int]]:
    """(correct, total) on the original labels, and on the corrected ones over P: every
    example but the multi-label and non-agreement ones, the correctable ones relabelled."""
    original = sum(p == label for p, label in zip(predictions, LABELS, strict=True))
    pruned = [i for i in range(len(LABELS)) if i not in UNKNOWN]
    corrected = sum(predictions[i] == CORRECTED.get(i, LABELS[i]) for i in pruned)
    return {"original": (original, len(LABELS)), "corrected": (corrected, len(pruned))}


def wait_for_upload(upload_id: int, log: Path, timeout: float = 90) -> BundleUpload:
    deadline = time.monotonic() + timeout
    while True:
        upload = BundleUpload.objects.get(id=upload_id)
        if not upload.pending:
            return upload
        if time.monotonic() > deadline:
            pytest.fail(f"bundle upload {upload_id} still {upload.status} after {timeout} s\n"
                        f"{log.read_text()}")
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_it_hosts_an_uploaded_bundle_and_scores_submissions_to_it(
    browser: Any, live_server: Any, scoring_worker: Path, tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    assert by_hand(API_PREDICTIONS) == {"original": (7, 12), "corrected": (8, 10)}
    staff = factories.host_create("boss")
    researcher = factories.user_create("researcher")

    # a refused bundle first: the worker records why, and nothing is stored
    with open(toy_zip(tmp_path / "bad", extra={"toy3/../evil.txt": b"x"}), "rb") as handle:
        refused = api_client(staff).post("/api/bundles/", {"bundle": handle},
                                         format="multipart").json()
    assert wait_for_upload(refused["id"], scoring_worker).status == "failed"
    assert api_client(staff).get(refused["url"]).json()["error"] == {
        "code": "zip_unsafe_entry",
        "message": "entry 'toy3/../evil.txt': a `..` part leads out of the bundle",
        "file": "toy3/../evil.txt", "field": ""}

    # the bundle, through the API, added by the worker
    with open(toy_zip(tmp_path / "good"), "rb") as handle:
        response = api_client(staff).post("/api/bundles/", {"bundle": handle},
                                          format="multipart")
    assert response.status_code == 202
    assert wait_for_upload(response.json()["id"], scoring_worker).status == "done", \
        api_client(staff).get(response.json()["url"]).json()
    listed = api_client(researcher).get(f"/api/benchmarks/{SLUG}/").json()
    assert (listed["num_classes"], listed["main_image_set"]) == (3, EXAMPLE_SET)

    # a researcher submits through the API
    predictions = tmp_path / "api.json"
    predictions.write_text(json.dumps(API_PREDICTIONS))
    with open(predictions, "rb") as handle:
        created = api_client(researcher).post(
            "/api/submissions/", {"benchmark": SLUG, "model_name": "by-api",
                                  EXAMPLE_SET: handle}, format="multipart")
    assert created.status_code == 201, created.json()
    submission_id = created.json()["id"]
    status = wait_for_status(submission_id, ("scored", "failed"), log=scoring_worker)
    detail = api_client(researcher).get(f"/api/submissions/{submission_id}/").json()
    assert status == "scored", (detail["failure_code"], detail["failure_reason"])
    scores = detail["scores"]
    for slug, (correct, total) in by_hand(API_PREDICTIONS).items():
        assert (scores[slug]["correct"], scores[slug]["total"]) == (correct, total), slug
        assert scores[slug]["accuracy"] == pytest.approx(correct / total, abs=1e-12)

    # and through the submit form, in a browser
    expected = {slug: f"{percent(correct / total)}%"
                for slug, (correct, total) in by_hand(FORM_PREDICTIONS).items()}
    form_file = tmp_path / "form.json"
    form_file.write_text(json.dumps(FORM_PREDICTIONS))
    base = live_server.url
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    browser_log_in(page, base, "researcher", PASSWORD)
    page.goto(f"{base}/submit/")
    page.select_option("select[name=benchmark]", SLUG)
    expect(page.locator(f".file-group[data-benchmark={SLUG}]")).to_be_visible()
    page.fill("#id_model_name", "by-form")
    page.set_input_files(f"input[name='{EXAMPLE_SET}']", str(form_file))
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url(re.compile(re.escape(base) + r"/submissions/\d+/$"))
    expect(page.locator("#status-text")).to_have_text("scored", timeout=240_000)
    for slug, text in expected.items():
        expect(page.locator(f"#score-{slug} tr.headline td").first).to_have_text(text)
    page.screenshot(path=str(tmp_path / "toy3-submission-1280x800.png"), full_page=True)
    assert errors == []
