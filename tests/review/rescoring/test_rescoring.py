"""The review queue: items from novel predictions, votes, majority decisions, new versions."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem, ReviewVote
from leaderboard.review.panel.services import ReviewError
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.selectors import submission_scores
from leaderboard.submissions.services import (
    submission_create,
    submission_scores_compute,
)
from leaderboard.tasks.cpu import score_submission
from leaderboard.tasks.registry import JOBS
from tests import factories, task_names
from workers.scoring import datasets
from workers.scoring.predictions import parse_predictions
from workers.scoring.scorer import score_label_set


def _resnet50_upload(data_dir: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The real cleanlab cross-validated ResNet-50, in canonical (file-number) order."""
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    canonical = datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)
    return factories.upload_npy(canonical, tmp_path, "resnet50.npy")


def _submit_imagenet(data_dir: Path, tmp_path: Path, username: str) -> Submission:
    submission = submission_create(
        owner=factories.user_create(username), model_name=f"resnet50-{username}",
        benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": _resnet50_upload(data_dir, tmp_path)})
    assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get() \
        == "scored"
    return submission


def _reviewers(n: int) -> list[User]:
    return [factories.reviewer_create(f"reviewer{i}") for i in range(n)]


@pytest.mark.parametrize(("votes", "expected"), [
    (["correct", "correct", "wrong"], "correct"),
    (["wrong", "wrong", "wrong"], "wrong"),
    (["correct", "wrong", "unclear"], "unclear"),
    (["correct", "wrong"], "unclear"),
    (["unclear", "wrong", "wrong"], "wrong"),
])
def test_it_decides_by_majority_and_a_tie_is_unclear(votes: list[str], expected: str) -> None:
    assert review.majority(votes) == expected


@pytest.mark.django_db
def test_it_records_each_novel_real_pair_once_across_submissions(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    first = _submit_imagenet(data_dir, tmp_path, "a")
    novel = submission_scores(submission=first)["real"].record["novel_count"]
    assert novel > 0
    items = ReviewItem.objects.filter(label_set__slug="real")
    assert items.count() == novel
    assert set(items.values_list("submission_count", flat=True)) == {1}
    _submit_imagenet(data_dir, tmp_path, "b")  # the same predictions again
    assert items.count() == novel
    assert set(items.values_list("submission_count", flat=True)) == {2}


@pytest.mark.django_db
def test_it_lets_only_maintainers_vote(loaded: Settings, data_dir: Path, tmp_path: Path) -> None:
    _submit_imagenet(data_dir, tmp_path, "a")
    item = ReviewItem.objects.filter(label_set__slug="real").first()
    assert item is not None
    with pytest.raises(ReviewError) as caught:
        review.review_vote_cast(item_id=item.pk, reviewer=factories.user_create("nobody"),
                                verdict="correct")
    assert (caught.value.code, caught.value.http_status) == ("permission_denied", 403)
    staff = factories.host_create("staff")
    review.review_vote_cast(item_id=item.pk, reviewer=staff, verdict="correct")
    with pytest.raises(ReviewError) as again:
        review.review_vote_cast(item_id=item.pk, reviewer=staff, verdict="wrong")
    assert again.value.code == "already_voted"
    assert ReviewVote.objects.filter(item=item).count() == 1


@pytest.mark.django_db
def test_it_makes_a_new_version_and_rescoring_equals_scoring_from_scratch(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    submission = _submit_imagenet(data_dir, tmp_path, "a")
    before = submission_scores(submission=submission)["real"]
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    for reviewer in _reviewers(3):
        review.review_vote_cast(item_id=item.pk, reviewer=reviewer, verdict="correct")
    item.refresh_from_db()
    assert (item.status, item.verdict) == ("decided", "correct")
    v1, v2 = LabelSetVersion.objects.filter(label_set__slug="real", label_set__benchmark__slug=
                                            "imagenet").order_by("number")
    assert (v2.number, v2.parent_id, item.version_id) == (2, v1.pk, v2.pk)
    assert v2.content_hash != v1.content_hash
    assert v1.content_hash == before.label_set_version.content_hash  # v1 is untouched
    assert rescoring.label_set_version_rescore(version_id=v2.pk) == 1
    after = Score.objects.get(submission=submission, label_set_version=v2)
    # the accepted pair was this submission's top-1 there: one more correct, one fewer novel
    assert (after.correct, after.total) == (before.correct + 1, before.total)
    assert after.record["novel_count"] == before.record["novel_count"] - 1
    row = submission.files.get()
    preds = parse_predictions(row.file.path, num_examples=50_000, num_classes=1000)
    fresh, _ = score_label_set(compiled_for_version(v2), preds)
    assert after.record == fresh
    # the older version still answers
    assert Score.objects.get(submission=submission, label_set_version=v1).correct \
        == before.correct


@pytest.mark.django_db(transaction=True)
def test_it_decides_once_when_the_last_two_votes_come_at_the_same_moment(
    loaded: Settings, data_dir: Path, tmp_path: Path, scoring_worker: Path
) -> None:
    _submit_imagenet(data_dir, tmp_path, "a")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    first, second, third = _reviewers(3)
    review.review_vote_cast(item_id=item.pk, reviewer=first, verdict="correct")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def vote(user: User) -> None:
        try:
            barrier.wait()
            review.review_vote_cast(item_id=item.pk, reviewer=user, verdict="wrong")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=vote, args=(u,)) for u in (second, third)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    # the item's row lock queues the two: neither vote is lost, and only the third decides
    assert errors == []
    assert ReviewVote.objects.filter(item=item).count() == 3
    item.refresh_from_db()
    assert (item.status, item.verdict) == ("decided", "wrong")
    assert LabelSetVersion.objects.filter(label_set=item.label_set).count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("decided_at_read", [1, 2])
def test_it_scores_or_requeues_a_version_made_while_a_submission_was_scoring(
    loaded: Settings, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks, decided_at_read: int,  # type: ignore[no-untyped-def]
    sent: list[tuple[str, int]],
) -> None:
    """A decision lands after the scoring read the versions (1: while it scores, so the
    re-read before writing finds the version and scores it too; 2: after that re-read, in the
    last moment, so the version's re-scoring is asked for again)."""
    from leaderboard.submissions import services as submissions
    from workers.scoring import revisions

    _submit_imagenet(data_dir, tmp_path, "a")  # makes the review items
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    second = submission_create(
        owner=factories.user_create("b"), model_name="b",
        benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": _resnet50_upload(data_dir, tmp_path)})
    assert JOBS["submission"].claim(job_id=second.pk, task_id="t")
    real_read = submissions.label_set_versions_to_score
    made: list[LabelSetVersion] = []
    reads = []

    def read_then_a_reviewer_decides(*, benchmark):  # type: ignore[no-untyped-def]
        versions = real_read(benchmark=benchmark)
        reads.append(len(versions))
        if len(reads) == decided_at_read:
            made.append(review.label_set_version_revise(
                label_set=item.label_set, items=[item], author=None,
                verdicts=[revisions.Verdict(item.example_index, item.class_id, "correct")]))
        return versions

    monkeypatch.setattr(submissions, "label_set_versions_to_score",
                        read_then_a_reviewer_decides)
    sent.clear()  # anything the set-up sent is not under test
    with django_capture_on_commit_callbacks(execute=True):
        assert submission_scores_compute(submission_id=second.pk, task_id="t") is True
    version = made[0]
    on_it = Score.objects.filter(submission=second, label_set_version=version)
    # The significance refresh the scoring also schedules is not under test: it is sent once
    # per EVALSERVER_SIGNIFICANCE_DELAY s, so whether the set-up's one still covers this
    # scoring depends on how fast the machine got here.
    rescores = [message for message in sent if message[0] == task_names.RESCORE_VERSION]
    if decided_at_read == 1:
        # scored on it like on the others: only the decision itself asks for its re-scoring
        assert rescores == [(task_names.RESCORE_VERSION, version.pk)]
        preds = parse_predictions(second.files.get().file.path, num_examples=50_000,
                                  num_classes=1000)
        assert on_it.get().record == score_label_set(compiled_for_version(version), preds)[0]
    else:
        # once by the decision itself, and once more by the scoring that missed it
        assert rescores == [(task_names.RESCORE_VERSION, version.pk)] * 2
        assert not on_it.exists()
    assert version.published is None  # its re-scoring publishes it, once it has run


def _submit_topk(data_dir: Path, tmp_path: Path, username: str, topk: np.ndarray) -> Submission:
    submission = submission_create(
        owner=factories.user_create(username), model_name=username,
        benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": factories.upload_npy(topk, tmp_path, f"{username}.npy")})
    assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get() \
        == "scored"
    return submission


@pytest.mark.django_db
@pytest.mark.parametrize("verdict", ["correct", "wrong", "unclear"])
def test_it_applies_one_real_verdict_incrementally_exactly_as_a_full_rescore(
    loaded: Settings, data_dir: Path, tmp_path: Path, verdict: str
) -> None:
    from workers.scoring import revisions

    first = _submit_imagenet(data_dir, tmp_path, "a")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    example, cls = item.example_index, item.class_id
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    top1 = datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)
    top3 = np.stack([top1, (top1 + 3) % 1000, (top1 + 4) % 1000], axis=1)
    other, third_class = (cls + 1) % 1000, (cls + 2) % 1000
    second_has_it, third_has_it = top3.copy(), top3.copy()
    second_has_it[example] = [other, cls, third_class]  # the pair as 2nd prediction
    third_has_it[example] = [other, third_class, cls]  # and as 3rd
    second = _submit_topk(data_dir, tmp_path, "second", second_has_it)
    third = _submit_topk(data_dir, tmp_path, "third", third_has_it)
    before = {s.pk: submission_scores(submission=s)["real"].record
              for s in (first, second, third)}
    version = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(example, cls, verdict)])  # type: ignore[arg-type]

    def records() -> dict[int, dict]:  # type: ignore[type-arg]
        return dict(Score.objects.filter(label_set_version=version)
                    .values_list("submission_id", "record"))

    assert rescoring._rescore_incrementally(version) == 3
    fast = records()
    assert rescoring._rescore_fully(version) == 3
    assert fast == records()
    gained = 1 if verdict == "correct" else 0
    assert fast[first.pk]["correct"] == before[first.pk]["correct"] + gained
    assert fast[first.pk]["novel_count"] == before[first.pk]["novel_count"] - 1
    assert fast[second.pk]["second"]["correct"] == before[second.pk]["second"]["correct"] + gained
    assert fast[third.pk]["third"]["correct"] == before[third.pk]["third"]["correct"] + gained
    assert fast[second.pk]["correct"] == before[second.pk]["correct"]


@pytest.mark.django_db
@pytest.mark.slow
@pytest.mark.parametrize("verdict", ["correct", "wrong"])
def test_it_applies_one_multilabel_verdict_incrementally_exactly_as_a_full_rescore(
    run_load_benchmarks, catalog_settings: Settings, data_dir: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path, verdict: str,
) -> None:
    from workers.scoring import revisions

    wnid = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    example, sunglass, sunglasses = 10, 836, 837  # the class-collapse map joins the two
    multilabel_file = tmp_path / "human_accuracy_v3.0.0.json"
    multilabel_file.write_text(json.dumps({"initial_annots": {
        datasets.imagenet_file_name(example): {"correct": [wnid[1]]},
        datasets.imagenet_file_name(20): {"correct": [wnid[2]]},
    }, "problematic_images": {}, "imagenet_m": []}))
    catalog_settings.EVALSERVER_MULTILABEL_FILE = multilabel_file
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    run_load_benchmarks("--benchmark", "imagenet")
    base = np.stack([np.full(50_000, 5), np.full(50_000, 6)], axis=1)
    judged = base.copy()
    judged[example] = [sunglass, 7]  # the novel pair the reviewers judge
    collapsed, elsewhere = base.copy(), base.copy()
    collapsed[example] = [sunglasses, 7]  # accepted through the collapse map only
    elsewhere[example] = [8, 9]  # never predicts either class there
    subs = [_submit_topk(data_dir, tmp_path, name, topk) for name, topk in (
        ("judged", judged), ("collapsed", collapsed), ("elsewhere", elsewhere))]
    item = ReviewItem.objects.get(label_set__slug="multilabel", example_index=example,
                                  class_id=sunglass)
    before = {s.pk: submission_scores(submission=s)["multilabel"].record for s in subs}
    version = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(example, sunglass, verdict)])  # type: ignore[arg-type]

    def records() -> dict[int, dict]:  # type: ignore[type-arg]
        return dict(Score.objects.filter(label_set_version=version)
                    .values_list("submission_id", "record"))

    assert rescoring._rescore_incrementally(version) == 3
    fast = records()
    assert rescoring._rescore_fully(version) == 3
    assert fast == records()
    gained = 1 if verdict == "correct" else 0
    judged_sub, collapsed_sub, elsewhere_sub = (s.pk for s in subs)
    assert fast[judged_sub]["correct"] == before[judged_sub]["correct"] + gained
    assert fast[judged_sub]["novel_count"] == before[judged_sub]["novel_count"] - 1
    assert fast[collapsed_sub]["correct"] == before[collapsed_sub]["correct"]
    assert (fast[collapsed_sub]["collapsed"]["correct"]
            == before[collapsed_sub]["collapsed"]["correct"] + gained)
    assert fast[elsewhere_sub] == {**before[elsewhere_sub], "version_hash": version.content_hash}


@pytest.mark.django_db
def test_it_rescores_fully_when_a_verdict_flags_the_ground_truth(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    from workers.scoring import revisions

    _submit_imagenet(data_dir, tmp_path, "a")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    version = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(item.example_index, item.class_id, "wrong", True)])
    # the flagged example leaves the evaluated set: every total changes, no shortcut applies
    assert rescoring._rescore_incrementally(version) is None
    assert rescoring.label_set_version_rescore(version_id=version.pk) == 1
