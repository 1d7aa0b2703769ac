"""The top-k index (leaderboard/review/rescoring/topk_index.py): a decision's re-score read
from it, its moved ReaL scores revised from their parent's (families/real.py
`revised_record`), stores exactly the scores of a full re-score from every stored file, with
the index built, then made stale by a submission scored after it and one removed, and with a
withdrawn submission and a top-1-only one among them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem
from leaderboard.review.rescoring import services as rescoring
from leaderboard.review.rescoring import topk_index
from leaderboard.submissions.control.services import submission_withdraw
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from tests.review.conftest import resnet50_top1, submit_imagenet
from workers.scoring import revisions
from workers.scoring.compact import compact_member_names, npz_member_rows
from workers.scoring.families.registry import family_named

pytestmark = pytest.mark.django_db


def _scores(version: LabelSetVersion) -> dict[int, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in Score.objects.filter(label_set_version=version)
            .values_list("submission_id", "record", "correct", "total", "accuracy",
                         "hits__bits")}


def _top3(top1: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The real ResNet-50's top-1 with 2% changed at random, and random runners-up."""
    top1 = top1.copy()
    flip = rng.random(top1.size) < 0.02
    top1[flip] = rng.integers(0, 1000, size=int(flip.sum()))
    first = rng.integers(1, 500, size=top1.size)  # distinct runners-up, neither the top-1
    second = first + rng.integers(1, 499, size=top1.size)
    rest = (top1[:, None] + np.stack([first, second], axis=1)) % 1000
    return np.concatenate([top1[:, None], rest], axis=1)


_DECIDED: set[int] = set()


def _decide(label_set: LabelSet, rng: np.random.Generator, n: int) -> LabelSetVersion:
    """A new version deciding n random review items of the label set not yet decided here,
    each at random."""
    items = [item for item in ReviewItem.objects.filter(label_set=label_set).order_by("id")
             if item.pk not in _DECIDED]
    chosen = [items[i] for i in rng.choice(len(items), size=n, replace=False)]
    kinds: list[revisions.VerdictKind] = ["correct", "wrong", "unclear"]
    verdicts = [revisions.Verdict(item.example_index, item.class_id,
                                  kinds[int(rng.integers(len(kinds)))]) for item in chosen]
    _DECIDED.update(item.pk for item in chosen)
    return review.label_set_version_revise(label_set=label_set, items=chosen, author=None,
                                           verdicts=verdicts)


def _rows_read_file_by_file(label_set: LabelSet, examples: np.ndarray) -> dict[int, np.ndarray]:
    storage = SubmissionFile._meta.get_field("compact").storage
    out = {}
    for submission_id, name in SubmissionFile.objects.filter(
            example_set=label_set.example_set).values_list("submission_id", "compact"):
        with storage.open(name, "rb") as handle:
            out[submission_id] = npz_member_rows(
                handle, compact_member_names(label_set.example_set.slug, "topk"), examples)
    return out


@pytest.mark.sqlite  # the incremental re-score copies scores in SQL of each database's own
def test_it_rescores_from_the_index_exactly_as_a_full_rescore(
    loaded: Settings, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topk_index, "SEGMENT", 2)  # several segments from a few submissions
    rng = np.random.default_rng(22)
    top1 = resnet50_top1(data_dir)
    # One top-1 only, first in its segment (an even id: ids come from the database's sequence,
    # which other tests have moved), with a top-3 one after it in the same segment: the index
    # widens to the others' top-3.
    subs: list[Submission] = []
    narrow = 0  # its position in `subs`
    for i in range(6):
        top3 = _top3(top1, rng)
        if not narrow and subs and (subs[-1].pk + 1) % 2 == 0:
            narrow, top3 = i, top3[:, :1]
        subs.append(submit_imagenet(top3, tmp_path, f"model{i}"))
    assert narrow in (1, 2)
    assert [s.pk % 2 for s in subs[narrow:narrow + 2]] == [0, 1]
    real = LabelSet.objects.get(benchmark__slug="imagenet", slug="real")
    storage = SubmissionFile._meta.get_field("compact").storage
    newest = max(s.pk for s in subs)
    sealed = {s.pk // 2 for s in subs if (s.pk // 2 + 1) * 2 <= newest}
    assert rescoring.label_set_topk_index_build(label_set=real) == len(sealed) >= 2
    assert rescoring.label_set_topk_index_build(label_set=real) == 0  # idempotent
    # still scored, off the boards
    submission_withdraw(submission=subs[narrow], user=subs[narrow].owner)

    revised: list[int] = []
    real_family = family_named("real")
    real_revised = real_family.revised_record
    assert real_revised is not None

    def counted_revised(*args: Any) -> Any:
        revised.append(1)
        return real_revised(*args)

    counting = dataclasses.replace(real_family, revised_record=counted_revised)
    monkeypatch.setattr(rescoring, "family_named",
                        lambda name: counting if name == real_family.name else family_named(name))

    def check(version: LabelSetVersion, count: int) -> None:
        before = len(revised)
        with monkeypatch.context() as patch:  # every moved score from its parent's
            patch.setattr(rescoring, "_rescore_rows", None)
            assert rescoring._rescore_incrementally(version) == count
        assert len(revised) > before
        fast = _scores(version)
        assert rescoring._rescore_fully(version) == count
        assert fast == _scores(version)

    version = _decide(real, rng, 3)
    check(version, 6)
    # what the index gives is what each file gives, row for row
    examples = np.sort(rng.choice(50_000, size=5, replace=False))
    files = rescoring._indexed_files(SubmissionFile.objects.filter(example_set=real.example_set))
    tops = topk_index.topk_at(storage=storage, example_set_id=real.example_set_id, files=files,
                              examples=examples)
    expected = _rows_read_file_by_file(real, examples)
    for row, top in zip(files, tops, strict=True):
        own = expected[row.submission_id]  # -1 past its own k
        assert np.array_equal(top[:, :own.shape[1]], own) and (top[:, own.shape[1]:] == -1).all()

    # Stale: a submission scored after the index was built (its own segment, or one built),
    # and one removed from a built segment (its index would give the wrong rows)
    later = submit_imagenet(_top3(top1, rng), tmp_path, "later")
    removed = subs[narrow + 1]
    Submission.objects.filter(pk=removed.pk).update(status=Submission.Status.FAILED)
    version = _decide(real, rng, 3)
    check(version, 6)
    assert later.pk in _scores(version)
    # Built again for the new content; then a decision reads the fresh index, every sealed
    # segment's (the newest, unsealed one file by file)
    assert rescoring.label_set_topk_index_build(label_set=real) >= 1
    scored = [s.pk for s in [*subs, later] if s.pk != removed.pk]
    sealed = {pk // 2 for pk in scored if (pk // 2 + 1) * 2 <= later.pk}
    read = []
    real_rows = topk_index._index_rows

    def counted(*args: Any) -> Any:
        rows = real_rows(*args)
        read.append(rows is not None)
        return rows

    monkeypatch.setattr(topk_index, "_index_rows", counted)
    version = _decide(real, rng, 2)
    check(version, 6)
    assert sum(read) == len(sealed) >= 2
