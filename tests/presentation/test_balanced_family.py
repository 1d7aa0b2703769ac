"""The balanced-accuracy family end to end on the web side (docs/families.md): a bundle that
declares a `balanced` label set is added with `manage.py benchmark_add`, a submission to it is
scored by the worker's task, and its figure reaches the API's score, the board's column (with
the class-mean interval), the about page and the submission page. The expected values are
worked out by hand below, not by the scoring core."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, npy_bytes, write_bundle

pytestmark = pytest.mark.django_db

# Six examples: class 0 four times, classes 1 and 2 once each (toy-test of bundle_files).
BALANCED_LABELS = [0, 0, 0, 0, 1, 2]
PREDICTED = [0, 1, 0, 2, 1, 2]
# By hand: class 0 has 2 of its 4 right (0.5), class 1 its 1 (1.0), class 2 its 1 (1.0).
BALANCED = (0.5 + 1.0 + 1.0) / 3
# Normal approximation of a mean of three proportions: sqrt(sum p(1-p)/n) / 3, p(1-p)/n being
# 0.25 / 4 for class 0 and 0 for the others; 1.959963984540054 is the two-sided 95% quantile.
HALF_WIDTH = 1.959963984540054 * math.sqrt(0.25 / 4) / 3


@pytest.fixture
def toy_with_balanced(catalog_settings: Settings, tmp_path: Path) -> Benchmark:
    document = manifest()
    document["label_sets"].append({"slug": "balanced", "kind": "balanced",
                                   "name": "Balanced accuracy", "labels": "balanced.npy"})
    files = {**data_files(),
             "balanced.npy": npy_bytes(np.array(BALANCED_LABELS, dtype=np.int64))}
    path = write_bundle(tmp_path / "bundle", document, files)
    call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return Benchmark.objects.get(slug="toy")


def test_it_scores_shows_and_describes_a_balanced_label_set(
    toy_with_balanced: Benchmark, tmp_path: Path
) -> None:
    label_set = LabelSet.objects.get(benchmark=toy_with_balanced, slug="balanced")
    assert (label_set.family, label_set.kind, label_set.bundle_kind) == (
        "balanced", "single", "balanced")
    owner = factories.user_create("researcher")
    submission = submission_create(
        owner=owner, benchmark=toy_with_balanced, model_name="m",
        files={"toy-test": factories.upload_json(PREDICTED)})
    assert score_submission.apply(args=[submission.pk], task_id="t-1").get() == "scored"

    api = APIClient()
    api.force_authenticate(owner)
    score = api.get(f"/api/submissions/{submission.pk}/").json()["scores"]["balanced"]
    assert (score["correct"], score["total"]) == (4, 6)  # hits: examples 0, 2, 4, 5
    assert score["accuracy"] == pytest.approx(BALANCED, abs=1e-12)
    assert score["ci_low"] == pytest.approx(BALANCED - HALF_WIDTH, abs=1e-12)
    assert score["ci_high"] == pytest.approx(BALANCED + HALF_WIDTH, abs=1e-12)

    board = Client().get("/api/benchmarks/toy/leaderboard/?sort=balanced").json()
    column = next(c for c in board["columns"] if c["slug"] == "balanced")
    assert column["ci_method"] == "normal"
    assert board["rows"][0]["scores"]["balanced"]["accuracy"] == pytest.approx(BALANCED,
                                                                              abs=1e-12)

    about = Client().get("/api/benchmarks/toy/about/").json()
    described = next(s for s in about["label_sets"] if s["slug"] == "balanced")
    assert described["family"] == "balanced"
    assert described["what"].startswith("The published labels, scored by balanced accuracy")
    assert [c["title"] for c in described["citations"]] == [
        "The balanced accuracy and its posterior distribution"]

    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Balanced accuracy (top-1, mean over classes)" in page
    assert "Pooled over examples" in page
    assert "83.33" in page  # the balanced accuracy, as a percentage with two decimals
