"""Submissions scored in-process: the task body, idempotency, failures, quota, leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.core.files.storage import default_storage

from leaderboard.presentation.boards.selectors import leaderboard_get
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from leaderboard.submissions.selectors import submission_scores
from leaderboard.submissions.services import SubmissionError, submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories

pytestmark = pytest.mark.django_db

MODELS = ("resnet_basic_110", "wrn_28_10", "vgg16_keras")


_submit = factories.submission_for_model


def _run(submission: Submission) -> str:
    return score_submission.apply(args=[submission.pk], task_id=f"t-{submission.pk}").get()


def test_it_scores_a_real_model_on_every_cifar10_label_set(  # type: ignore[no-untyped-def]
    loaded, data_dir: Path, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        submission = _submit(data_dir, "resnet_basic_110")
    assert len(callbacks) == 1  # queued only once the row and files are committed
    assert _run(submission) == "scored"
    submission.refresh_from_db()
    assert submission.status == "scored" and submission.attempts == 1
    scores = submission_scores(submission=submission)
    assert sorted(scores) == ["cifar10.1-v4", "cifar10.1-v6", "cifar10h", "corrected", "original"]
    files = factories.cifar10_model_files(data_dir, "resnet_basic_110")
    for slug, labels_file in (("original", "cifar10/original_labels.npy"),
                              ("cifar10.1-v4", "cifar10/cifar10.1_v4_labels.npy"),
                              ("cifar10.1-v6", "cifar10/cifar10.1_v6_labels.npy")):
        example_set = "cifar10-test" if slug == "original" else slug
        preds = np.array(json.loads(files[example_set].read_text()))
        labels = np.load(data_dir / labels_file)
        assert scores[slug].correct == int((preds == labels).sum())
        assert scores[slug].total == labels.shape[0]
        assert scores[slug].accuracy == (preds == labels).mean()
    # one compact file for the submission, each example set's arrays under its slug
    names = set(SubmissionFile.objects.filter(submission=submission)
                .values_list("compact", flat=True))
    assert names == {f"compact/{submission.pk}.npz"}
    with default_storage.open(names.pop()) as handle, \
            np.load(handle, allow_pickle=False) as arrays:
        assert sorted(arrays.files) == [f"{slug}/topk" for slug in sorted(files)]
        for slug, path in files.items():
            assert arrays[f"{slug}/topk"][:, 0].tolist() == json.loads(path.read_text())


def test_it_never_scores_twice(loaded, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    submission = _submit(data_dir, "wrn_28_10")
    assert _run(submission) == "scored"
    before = list(Score.objects.filter(submission=submission).values_list("id", "accuracy"))
    # a duplicate message (another task id) finds it scored and does nothing
    assert score_submission.apply(args=[submission.pk], task_id="other").get() == "skipped"
    assert list(Score.objects.filter(submission=submission).values_list("id", "accuracy")) == before


def test_it_fails_a_bad_file_with_its_reason(loaded, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0  # past the in-request check: the worker's
    owner = factories.user_create()
    preds = [3] * 10_000
    preds[17] = 10
    submission = submission_create(
        owner=owner, benchmark=factories.cifar10(), model_name="bad",
        files={"cifar10-test": factories.upload_json(preds)})
    assert _run(submission) == "failed"
    submission.refresh_from_db()
    assert submission.status == "failed"
    assert submission.failure_code == "class_out_of_range"
    assert submission.failure_reason.startswith("cifar10-test: ")
    assert "row 17" in submission.failure_reason
    assert not Score.objects.filter(submission=submission).exists()


def test_it_refuses_over_quota_and_stores_nothing(loaded, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    loaded.EVALSERVER_DAILY_QUOTA = 1
    owner = factories.user_create()
    _submit(data_dir, "resnet_basic_110", owner=owner)
    stored_before = _stored_uploads()
    assert len(stored_before) == 3  # the accepted submission's three files
    with pytest.raises(SubmissionError) as caught:
        _submit(data_dir, "wrn_28_10", owner=owner)
    assert caught.value.code == "quota_exceeded"
    assert caught.value.http_status == 429
    assert Submission.objects.filter(owner=owner).count() == 1
    assert SubmissionFile.objects.count() == 3
    assert _stored_uploads() == stored_before  # the refused files were never stored


def _stored_uploads(root: str = "uploads") -> list[str]:
    """Every file stored under `root` in media storage, as sorted paths."""
    dirs, files = default_storage.listdir(root)
    found = [f"{root}/{name}" for name in files]
    for d in dirs:
        found += _stored_uploads(f"{root}/{d}")
    return sorted(found)


def test_it_ranks_and_shifts_like_a_direct_computation(loaded, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    subs = [_submit(data_dir, m) for m in MODELS]
    for s in subs:
        assert _run(s) == "scored"
    board = leaderboard_get(benchmark=factories.cifar10(), sort="cifar10.1-v6")
    labels = {"original": np.load(data_dir / "cifar10/original_labels.npy"),
              "cifar10.1-v6": np.load(data_dir / "cifar10/cifar10.1_v6_labels.npy")}
    acc = {}
    for m in MODELS:
        files = factories.cifar10_model_files(data_dir, m)
        acc[m] = {"original": float((np.array(json.loads(files["cifar10-test"].read_text()))
                                     == labels["original"]).mean()),
                  "cifar10.1-v6": float((np.array(json.loads(files["cifar10.1-v6"].read_text()))
                                         == labels["cifar10.1-v6"]).mean())}

    def rank(model: str, slug: str) -> int:
        return 1 + sum(acc[o][slug] > acc[model][slug] for o in MODELS)

    expected_order = sorted(MODELS, key=lambda m: (rank(m, "cifar10.1-v6"), MODELS.index(m)))
    assert [r["model_name"] for r in board.rows] == expected_order
    for row in board.rows:
        m = row["model_name"]
        assert row["ranks"]["original"] == rank(m, "original")
        assert row["rank_shift"]["cifar10.1-v6"] == rank(m, "original") - rank(m, "cifar10.1-v6")
        assert row["scores"]["original"]["accuracy"] == acc[m]["original"]


def test_it_hides_private_submissions_from_the_leaderboard(loaded, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    public, private = _submit(data_dir, MODELS[0]), _submit(data_dir, MODELS[1], public=False)
    for s in (public, private):
        _run(s)
    board = leaderboard_get(benchmark=factories.cifar10())
    assert [r["submission_id"] for r in board.rows] == [public.pk]


@pytest.mark.django_db(transaction=True)
def test_it_scores_through_a_real_worker(  # type: ignore[no-untyped-def]
    loaded, data_dir: Path, scoring_worker: Path
) -> None:
    from tests.conftest import wait_for_status

    submission = _submit(data_dir, "resnet_basic_110")
    assert wait_for_status(submission.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    assert Score.objects.filter(submission=submission).count() == 5
