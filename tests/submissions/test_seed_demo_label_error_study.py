"""`manage.py seed_demo` on the four further test sets of the label-error study: cleanlab's
cross-validated predictions of each, submitted once, scored by a real worker, and shown on
the leaderboards (API and page) with the accuracies worked out from the data files
(tests/label_error_study.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient
from scipy.stats import binomtest

from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.templatetags.leaderboard_extras import percent
from tests.label_error_study import CORRECTED, DEMO_MODEL, STUDY, demo_counts, original_labels
from tests.pages import leaderboard_table
from tests.submissions.demo_seeding import seed_demo

LABEL_SETS = ("original", *CORRECTED.values())
# the file each demo submission uploads: the probabilities where the data has them
UPLOADED = {"cifar100": "cifar100/cleanlab_cv_predicted_labels.npy",
            "caltech256": "caltech256/cleanlab_cv_predicted_labels.npy",
            "20news": "20news/cleanlab_cv_probabilities.npy",
            "imdb": "imdb/cleanlab_cv_probabilities.npy"}
# (examples where cleanlab's cross-validated prediction is the original label, examples) of
# each test set, counted once from the data files (MANIFEST.md sha256s pin those files)
AGREEING = {"cifar100": (6_929, 10_000), "caltech256": (25_290, 29_780),
            "20news": (6_955, 7_532), "imdb": (22_394, 25_000)}


def _load(run: Callable[..., tuple[str, str]], *slugs: str) -> None:
    run(*[arg for slug in slugs for arg in ("--benchmark", slug)])


@pytest.mark.django_db
def test_it_submits_each_benchmarks_cleanlab_file_once_and_skips_one_not_loaded(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path,
) -> None:
    _load(run_load_benchmarks, "cifar100", "caltech256", "20news")

    out = seed_demo()

    demo = Submission.objects.filter(owner__username="demo")
    assert sorted(demo.values_list("benchmark__slug", "model_name")) == sorted(
        (slug, DEMO_MODEL[slug]) for slug in ("cifar100", "caltech256", "20news"))
    assert "skipped imdb: benchmark not loaded (1 demo model(s)" in out
    for submission in demo.select_related("benchmark"):
        slug = submission.benchmark.slug
        stored = SubmissionFile.objects.get(submission=submission)
        assert stored.example_set.slug == submission.benchmark.main_example_set
        assert stored.file.read() == (data_dir / UPLOADED[slug]).read_bytes()
        assert submission.public and "cleanlab/label-errors" in submission.description

    _load(run_load_benchmarks, "imdb")
    again = seed_demo()

    assert demo.count() == 4
    assert f"queued imdb / {DEMO_MODEL['imdb']} (#" in again
    assert "skipped 3 demo model(s) already submitted" in again
    # and the 33 of imagenet, cifar10 and mnist, not loaded here
    assert "demo: 1 queued, 36 skipped" in again


def test_it_finds_the_cleanlab_files_in_the_order_of_the_original_labels(
    data_dir: Path,
) -> None:
    """The cross-validated models agree with the labels they were trained against far above
    chance (1 / number of classes): the files are in one order."""
    for slug, low in (("cifar100", 0.6), ("caltech256", 0.8), ("20news", 0.9), ("imdb", 0.85)):
        labels = original_labels(data_dir, slug)
        predicted = np.load(data_dir / slug / "cleanlab_cv_predicted_labels.npy")
        assert low < float((predicted == labels).mean()) < 0.95
        assert (int((predicted == labels).sum()), labels.size) == AGREEING[slug]
        probabilities = data_dir / slug / "cleanlab_cv_probabilities.npy"
        # the text sets have probabilities, uploaded instead: the same top-1
        assert probabilities.is_file() == (slug in ("20news", "imdb"))
        if probabilities.is_file():
            assert np.array_equal(np.load(probabilities).argmax(axis=1), predicted)


def _expected_cell(correct: int, total: int) -> tuple[str, str]:
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="exact")
    return f"{percent(correct / total)}%", f"{percent(interval.low)}–{percent(interval.high)}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_scores_the_demo_and_shows_it_on_each_leaderboard_as_computed_from_the_files(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path, scoring_worker: Path, client: Client,
) -> None:
    _load(run_load_benchmarks, *STUDY)

    out = seed_demo("--wait", "--timeout", "180")

    assert "all 4 demo submissions are scored" in out, scoring_worker.read_text()
    for slug in STUDY:
        expected = demo_counts(data_dir, slug)
        submission = Submission.objects.get(benchmark__slug=slug, owner__username="demo")
        body = APIClient().get(f"/api/benchmarks/{slug}/leaderboard/").json()
        assert {c["slug"] for c in body["columns"]} == set(LABEL_SETS)
        [row] = body["rows"]
        assert (row["submission_id"], row["model_name"]) == (submission.pk, DEMO_MODEL[slug])
        for label_set, (correct, total) in expected.items():
            cell = row["scores"][label_set]
            assert (cell["correct"], cell["total"]) == (correct, total), (slug, label_set)
            assert cell["accuracy"] == correct / total
            assert row["ranks"][label_set] == 1

        headers, rows = leaderboard_table(client.get(f"/benchmarks/{slug}/").content.decode())
        assert sorted(h.slug for h in headers) == sorted(LABEL_SETS)
        [page_row] = rows
        assert page_row.model == DEMO_MODEL[slug]
        for label_set, counts in expected.items():
            cell = page_row.cells[label_set]
            assert (cell.acc, cell.ci) == _expected_cell(*counts), (slug, label_set)
