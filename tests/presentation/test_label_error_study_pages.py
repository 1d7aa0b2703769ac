"""The about pages, plots and audits of the four further test sets of the label-error study
(CIFAR-100, Caltech-256, 20 Newsgroups, IMDB), loaded from their bundles: every count and
accuracy is compared with tests/label_error_study.py, which works them out from the data
files by a route of its own, and the threshold-3 counts with the published ones."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cleanlab.filter import find_label_issues
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.submissions.models import Submission
from leaderboard.tasks.cpu import score_submission
from tests.audits.conftest import maintainer, run_in_process, start
from tests.label_error_study import (
    CORRECTED,
    DEMO_MODEL,
    PUBLISHED_ERRORS,
    PUBLISHED_T3,
    STUDY,
    categories,
    demo_counts,
    original_labels,
)
from tests.presentation.about.about_pages import about_facts, about_sections

pytestmark = pytest.mark.django_db

# The answers each study's workers had (the keys of its vote file: IMDB's are different).
ANSWERS = {
    "imdb": "the given label, the label the algorithm guessed, or an answer that names no "
            "label (neutral, off-topic)",
    **dict.fromkeys(("cifar100", "caltech256", "20news"),
                    "the given label, the label the algorithm guessed, both, or neither"),
}
PUBLISHED_KEYS = ("flagged", "non_error", "correctable", "multi_label", "neither",
                  "non_agreement", "pruned")


def _seeded(run_load_benchmarks: Callable[..., tuple[str, str]], slug: str) -> Submission:
    """The benchmark loaded, and its demo submission seeded and scored in this process."""
    run_load_benchmarks("--benchmark", slug)
    call_command("seed_demo", stdout=io.StringIO())
    submission = Submission.objects.get(benchmark__slug=slug, owner__username="demo")
    assert score_submission.apply(args=(submission.pk,), task_id=f"t-{slug}").get() == "scored"
    return submission


@pytest.mark.parametrize("slug", STUDY)
def test_it_states_each_thresholds_vote_counts_as_counted_from_the_vote_file(
    slug: str, run_load_benchmarks: Callable[..., tuple[str, str]],
    catalog_settings: Settings, data_dir: Path, client: Client,
) -> None:
    run_load_benchmarks("--benchmark", slug)

    body = APIClient().get(f"/api/benchmarks/{slug}/about/").json()
    page = client.get(f"/benchmarks/{slug}/about/").content.decode()

    by_slug = {entry["slug"]: entry for entry in body["label_sets"]}
    sections = about_sections(page)
    assert set(by_slug) == set(sections) == {"original", *CORRECTED.values()}
    size = int(original_labels(data_dir, slug).size)
    assert (by_slug["original"]["evaluated"], by_slug["original"]["available"]) == (size, True)
    for threshold, label_set in CORRECTED.items():
        expected = categories(data_dir, slug, threshold).facts()
        entry = by_slug[label_set]
        assert {f["key"]: f["value"] for f in entry["facts"]} == expected, (slug, threshold)
        assert about_facts(sections[label_set]) == expected
        assert entry["evaluated"] == expected["pruned"]
        assert entry["how"][1].startswith(f"With an agreement threshold of {threshold} of 5")
        assert entry["how"][0].endswith(f"answered whether it shows {ANSWERS[slug]}."), slug
        assert [c["key"] for c in entry["citations"]] == ["northcutt2021"]
    t3 = categories(data_dir, slug, 3).facts()
    assert tuple(t3[k] for k in PUBLISHED_KEYS) == PUBLISHED_T3[slug]
    assert t3["flagged"] - t3["non_error"] == PUBLISHED_ERRORS[slug]


@pytest.mark.parametrize("slug", STUDY)
def test_it_plots_the_demo_submission_without_a_new_test_set_chart(
    slug: str, run_load_benchmarks: Callable[..., tuple[str, str]],
    catalog_settings: Settings, data_dir: Path, client: Client,
) -> None:
    submission = _seeded(run_load_benchmarks, slug)
    counts = demo_counts(data_dir, slug)

    html = client.get(f"/benchmarks/{slug}/plots/").content.decode()

    assert 'id="new-test-set"' not in html and 'id="plot-new"' not in html
    for chart in ('id="label-set"', 'id="ranks"', 'id="noise-prevalence"'):
        assert chart in html
    assert "no public scored submissions yet" not in html
    assert "no submissions with a corrected score" not in html
    base = f"/benchmarks/{slug}/plots"
    for label_set in CORRECTED.values():
        data = client.get(f"{base}/label-set/{label_set}.json").json()
        [point] = data["points"]
        (x_correct, x_total), (y_correct, y_total) = counts["original"], counts[label_set]
        assert (point["submission_id"], point["model_name"]) == (submission.pk,
                                                                 DEMO_MODEL[slug])
        assert (point["x"], point["y"]) == (x_correct / x_total, y_correct / y_total)
        svg = client.get(f"{base}/label-set/{label_set}.svg")  # absolute links: a download
        assert svg.status_code == 200
        assert svg.content.decode().count(
            f'href="http://testserver/submissions/{submission.pk}/"') == 1
    noise = client.get(f"{base}/noise-prevalence.json").json()
    assert [s["submission_id"] for s in noise["submissions"]] == [submission.pk]
    refused = client.get(f"{base}/new-test-set/corrected.json")
    assert refused.status_code == 400


def test_it_runs_a_confident_learning_audit_on_20news_from_the_demo_probabilities(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path,
) -> None:
    submission = _seeded(run_load_benchmarks, "20news")
    probabilities = np.load(data_dir / "20news/cleanlab_cv_probabilities.npy")
    labels = original_labels(data_dir, "20news")

    audit = start(maintainer(), benchmark="20news", kind="confident_learning",
                  submission_ids=[submission.pk], config={"max_candidates": 1000})
    assert run_in_process(audit) == "done"

    audit.refresh_from_db()
    # n_jobs=1: cleanlab's default forks a process pool, which deadlocks a test process that
    # runs threads (a live server, tqdm's monitor); the flags are the same
    expected = find_label_issues(labels, probabilities, return_indices_ranked_by="self_confidence",
                                 n_jobs=1)
    assert audit.result["flagged"] == expected.tolist() and len(expected) == 95
    assert audit.result["num_examples"] == 7532 and audit.result["num_flagged"] == len(expected)
    # every flag whose suggestion is another label became a ground-truth candidate
    suggested = probabilities[expected].argmax(axis=1)
    assert audit.candidates_created == int((suggested != labels[expected]).sum())
