"""Per-example hits (Score.hits) through new label-set versions: the scores copied inside the
database and the ones re-computed both carry hits consistent with their correct counts, and
equal to the hits of a from-scratch scoring on the new version."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import HitVector, Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from workers.scoring import datasets, revisions
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import headline_hits
from workers.scoring.significance import hits_count, pack_hits

pytestmark = pytest.mark.django_db


def _submit(data_dir: Path, tmp_path: Path, name: str, topk: np.ndarray) -> Submission:
    submission = submission_create(
        owner=factories.user_create(name), model_name=name,
        benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": factories.upload_npy(topk, tmp_path, f"{name}.npy")})
    assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get() \
        == "scored"
    return submission


def _hits(version: LabelSetVersion) -> dict[int, bytes]:
    return {sub: bytes(h) for sub, h in Score.objects.filter(label_set_version=version)
            .values_list("submission_id", "hits__bits")}


def _assert_consistent(version: LabelSetVersion) -> None:
    for sub, hits, correct, total in Score.objects.filter(label_set_version=version).values_list(
            "submission_id", "hits__bits", "correct", "total"):
        assert hits is not None, sub
        assert (len(bytes(hits)), hits_count(bytes(hits))) == (-(-total // 8), correct), sub


@pytest.mark.sqlite  # the incremental re-score copies scores in SQL of each database's own
def test_it_keeps_hits_consistent_with_correct_through_an_incremental_and_a_full_rescore(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    top1 = datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)
    top3 = np.stack([top1, (top1 + 3) % 1000, (top1 + 4) % 1000], axis=1)
    first = _submit(data_dir, tmp_path, "resnet50", top3)  # its novel pairs become items
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    example, cls = item.example_index, item.class_id
    elsewhere = top3.copy()
    elsewhere[example] = [(cls + 1) % 1000, (cls + 2) % 1000, (cls + 5) % 1000]
    untouched = _submit(data_dir, tmp_path, "elsewhere", elsewhere)  # never predicts the pair
    parent = LabelSetVersion.objects.get(label_set=item.label_set, number=1)
    _assert_consistent(parent)
    before = _hits(parent)

    version = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(example, cls, "correct")])
    vectors = HitVector.objects.count()
    assert rescoring._rescore_incrementally(version) == 2
    _assert_consistent(version)
    fast = _hits(version)
    # the untouched submission's score (and hits) was copied in the database: it points at
    # the parent's stored vector, so only the re-computed submission's new vector is added
    assert fast[untouched.pk] == before[untouched.pk]
    digests = dict(Score.objects.filter(submission=untouched).values_list(
        "label_set_version_id", "hits_id"))
    assert digests[version.pk] == digests[parent.pk]
    assert HitVector.objects.count() == vectors + 1
    # the accepted pair was the first submission's top-1 there: one more hit, at that example
    new = compiled_for_version(version)
    included = np.flatnonzero(new.arrays["mask"])
    position = int(np.searchsorted(included, example))
    assert included[position] == example
    expected = headline_hits(new, Predictions(top3.astype(np.int32), None, None, None))
    assert fast[first.pk] == pack_hits(expected)
    assert expected[position]
    assert hits_count(fast[first.pk]) == hits_count(before[first.pk]) + 1

    assert rescoring._rescore_fully(version) == 2
    _assert_consistent(version)
    assert _hits(version) == fast


def test_it_keeps_hits_consistent_after_a_corrected_version_rescored_in_full(
    loaded: Settings, data_dir: Path
) -> None:
    from leaderboard.review.ground_truth import services as ground_truth
    subs = {m: factories.submission_for_model(data_dir, m) for m in ("nas", "cudaconvnet")}
    for s in subs.values():
        assert score_submission.apply(args=[s.pk], task_id=f"t{s.pk}").get() == "scored"
    corrected = benchmark_get(slug="cifar10").label_sets.get(slug="corrected")
    parent = LabelSetVersion.objects.get(label_set=corrected, number=1)
    old = compiled_for_version(parent)
    # the first example both models get right leaves the pruned set ("neither"): every total
    # changes, so no shortcut applies and every submission is re-scored from its predictions
    tops = {m: factories.cifar10_model_files(data_dir, m)["cifar10-test"] for m in subs}
    top1 = {m: np.array(json.loads(p.read_text())) for m, p in tops.items()}
    right = (old.arrays["pruned"] & (top1["nas"] == old.arrays["corrected_labels"])
             & (top1["cudaconvnet"] == old.arrays["corrected_labels"]))
    example = int(np.flatnonzero(right)[0])
    given = int(old.arrays["labels"][example])
    candidate = ground_truth.ground_truth_candidate_create(
        label_set=corrected, example_index=example, guessed=(given + 1) % 10)
    version, categories = ground_truth.ground_truth_version_revise(
        label_set=corrected, candidates=[candidate], votes=[{"neither": 5}], author=None)
    assert categories == ["neither"]
    assert rescoring.label_set_version_rescore(version_id=version.pk) == 2
    _assert_consistent(version)
    new = compiled_for_version(version)
    for model, submission in subs.items():
        score = Score.objects.get(submission=submission, label_set_version=version)
        before = Score.objects.get(submission=submission, label_set_version=parent)
        assert (score.total, score.correct) == (before.total - 1, before.correct - 1)
        expected = headline_hits(new, Predictions(top1[model].reshape(-1, 1).astype(np.int32),
                                                  None, None, None))
        assert bytes(score.hits.bits) == pack_hits(expected)
