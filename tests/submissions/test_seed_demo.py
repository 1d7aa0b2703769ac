"""`manage.py seed_demo`: real published predictions submitted as the user `demo`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.demo.seeding import demo_user_get_or_create
from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.submissions.selectors import submission_scores
from leaderboard.tasks.cpu import score_submission
from tests.submissions.demo_seeding import seed_demo
from workers.scoring import datasets

pytestmark = pytest.mark.django_db


def test_it_submits_the_30_cifar10_models_once_and_skips_benchmarks_not_loaded(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path,
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 1  # the demo is exempt from the quota
    run_load_benchmarks("--benchmark", "cifar10")

    out = seed_demo()

    demo = Submission.objects.filter(owner__username="demo")
    assert demo.count() == 31  # 30 published models + cleanlab's probabilities
    assert set(demo.values_list("benchmark__slug", flat=True)) == {"cifar10"}
    assert all(demo.values_list("public", flat=True))
    assert "queued cifar10 / resnet_basic_110 (#" in out
    assert "skipped imagenet: benchmark not loaded" in out
    assert "skipped mnist: benchmark not loaded" in out
    assert "skipped imdb: benchmark not loaded" in out
    # imagenet, mnist and the four of issue 11 skipped; the hidden demo's 30 queued too
    assert "demo: 61 queued, 6 skipped" in out
    hidden = Submission.objects.filter(benchmark__slug="cifar10-hidden")
    assert (hidden.count(), hidden.values("owner").distinct().count()) == (30, 30)
    assert "cifar10-hidden belongs to team demo-lab (Demo vision lab): demo-lab-admin" in out
    files = SubmissionFile.objects.filter(submission__model_name="resnet_basic_110",
                                          submission__owner__username="demo")
    assert sorted(files.values_list("example_set__slug", flat=True)) == [
        "cifar10-test", "cifar10.1-v4", "cifar10.1-v6"]
    assert files.get(example_set__slug="cifar10.1-v6").file.read() == (
        data_dir / "cifar10/model_predictions/v6_predictions/resnet_basic_110_predictions.json"
    ).read_bytes()
    user = demo_user_get_or_create()
    assert not user.has_usable_password()

    again = seed_demo()

    assert demo.count() == 31
    assert "demo: 0 queued, 67 skipped" in again
    assert "skipped 31 demo model(s) already submitted" in again


def test_it_submits_imagenet_in_file_number_order(
    run_load_benchmarks: Callable[..., tuple[str, str]], data_dir: Path,
) -> None:
    run_load_benchmarks("--benchmark", "imagenet")
    seed_demo()
    submission = Submission.objects.get(owner__username="demo")
    assert submission.model_name == "ResNet-50 (cleanlab cross-validated)"

    assert score_submission.apply(args=(submission.pk,), task_id="t-demo").get() == "scored"

    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    original = np.load(data_dir / "imagenet/cleanlab_original_labels.npy")
    score = submission_scores(submission=submission)["original"]
    # Both cleanlab arrays are in class-folder order; the server's labels are in file-number
    # order: the same count means the upload was reordered correctly (else: near chance).
    assert score.correct == int((cleanlab == original).sum())
    stored = SubmissionFile.objects.get(submission=submission)
    with stored.file.open("rb") as handle:
        top1 = np.load(handle, allow_pickle=False)
    assert np.array_equal(top1, datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab))
