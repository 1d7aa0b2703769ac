"""Multi-label scores stored as class means (docs/metrics.md §5.1): the same numbers from a
fresh score, the incremental re-score after a review decision and the full re-score, and from
`manage.py scores_recompute` on a version built before the class mean existed. Expected
figures come from a loop over the annotated images grouped by their original label (read
here from cleanlab's files with a plain loop)."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version, compiled_store
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.services import label_set_version_create
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem, VersionRescore
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import scores_copy
from tests import task_names
from tests.multilabel_three_classes import SUNGLASS, SUNGLASSES, three_classes_load
from tests.review.conftest import submit_imagenet
from workers.scoring import revisions
from workers.scoring.label_set_builders import CompiledLabelSet, content_hash
from workers.scoring.predictions import parse_predictions
from workers.scoring.scorer import score_label_set

Z_95 = 1.959963984540054
ORGANISM = set(range(398)) | {981, 982, 983, 985, 986} | set(range(991, 998))



@pytest.fixture
def setup(run_load_benchmarks: Callable[..., Any], catalog_settings: Settings, data_dir: Path,
          tmp_path: Path) -> dict[str, Any]:
    """A multi-label file: every image of one class A (all correct as A), one image of class
    B and one image X of class C (each correct as its own class); loaded with imagenet."""
    world = three_classes_load(data_dir=data_dir, tmp_path=tmp_path, settings=catalog_settings,
                               run_load_benchmarks=run_load_benchmarks)
    return {"labels": world.labels, "accepted": {i: {world.labels[i]} for i in world.annotated},
            "a": world.labels[0], "b": world.b, "x": world.c}


def _expected(setup: dict[str, Any], top1: np.ndarray, accepted: dict[int, set[int]], *,
              collapse: bool = False, among: set[int] | None = None) -> dict[str, Any]:
    per_class: dict[int, list[int]] = {}
    for i, labels in accepted.items():
        cls = setup["labels"][i]
        if among is not None and cls not in among:
            continue
        ok = set(labels)
        if collapse and ok & {SUNGLASS, SUNGLASSES}:
            ok |= {SUNGLASS, SUNGLASSES}
        counts = per_class.setdefault(cls, [0, 0])
        counts[0] += int(top1[i]) in ok
        counts[1] += 1
    if not per_class:
        return {"accuracy": None, "correct": 0, "total": 0}
    p = [(c / n, n) for c, n in per_class.values()]
    mean = sum(q for q, _ in p) / len(p)
    half = Z_95 * math.sqrt(sum(q * (1 - q) / n for q, n in p)) / len(p)
    return {"accuracy": mean, "ci_low": max(0.0, mean - half), "ci_high": min(1.0, mean + half),
            "correct": sum(c for c, _ in per_class.values()),
            "total": sum(n for _, n in per_class.values()), "classes_evaluated": len(p)}


def _assert_matches(record: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        if isinstance(value, float):
            assert record[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
        else:
            assert record[key] == value, key
    if expected["total"]:
        assert record["pooled_accuracy"]["accuracy"] == expected["correct"] / expected["total"]


def _assert_all(setup: dict[str, Any], record: dict[str, Any], top1: np.ndarray,
                accepted: dict[int, set[int]]) -> None:
    _assert_matches(record, _expected(setup, top1, accepted))
    _assert_matches(record["collapsed"], _expected(setup, top1, accepted, collapse=True))
    _assert_matches(record["organism"], _expected(setup, top1, accepted, among=ORGANISM))
    _assert_matches(record["object"], _expected(setup, top1, accepted,
                                                among=set(range(1000)) - ORGANISM))


def _tops(setup: dict[str, Any]) -> dict[str, np.ndarray]:
    """Each submission gets class A right, class B wrong; at X: sunglass (the pair reviewed),
    sunglasses (accepted through the collapse map only), or its own class C."""
    base = np.array(setup["labels"], dtype=np.int64)
    base[setup["b"]] = (base[setup["b"]] + 1) % 1000
    out = {}
    for name, at_x in (("judged", SUNGLASS), ("collapsed", SUNGLASSES),
                       ("right", setup["labels"][setup["x"]])):
        top1 = base.copy()
        top1[setup["x"]] = at_x
        out[name] = top1
    return out


def _records(version: LabelSetVersion) -> dict[int, dict[str, Any]]:
    return dict(Score.objects.filter(label_set_version=version)
                .values_list("submission_id", "record"))


@pytest.mark.sqlite  # the incremental re-score copies scores in SQL of each database's own
@pytest.mark.django_db
@pytest.mark.parametrize("verdict", ["correct", "wrong"])
def test_it_stores_class_means_alike_scored_fresh_and_rescored_incrementally_or_fully(
    setup: dict[str, Any], tmp_path: Path, verdict: str,
) -> None:
    tops = _tops(setup)
    subs = {name: submit_imagenet(top1, tmp_path, name) for name, top1 in tops.items()}
    first = LabelSetVersion.objects.get(label_set__slug="multilabel", number=1)
    for name, sub in subs.items():  # fresh scores: the class mean, not the pooled share
        record = Score.objects.get(submission=sub, label_set_version=first).record
        _assert_all(setup, record, tops[name], setup["accepted"])
    # classes A (1.0), B (0.0) and C: 1/3 or 2/3, where the pooled share is 50/52 or 51/52
    assert _records(first)[subs["right"].pk]["accuracy"] == pytest.approx(2 / 3, abs=1e-15)
    x = setup["x"]
    item = ReviewItem.objects.get(label_set__slug="multilabel", example_index=x,
                                  class_id=SUNGLASS)
    version = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(x, SUNGLASS, verdict)])  # type: ignore[arg-type]
    assert rescoring._rescore_incrementally(version) == 3
    fast = _records(version)
    assert rescoring._rescore_fully(version) == 3
    assert fast == _records(version)
    accepted = {**setup["accepted"]}
    if verdict == "correct":
        accepted[x] = accepted[x] | {SUNGLASS}
    for name, sub in subs.items():
        _assert_all(setup, fast[sub.pk], tops[name], accepted)
        preds = parse_predictions(sub.files.get().file.path, num_examples=50_000,
                                  num_classes=1000)
        assert fast[sub.pk] == score_label_set(compiled_for_version(version), preds)[0]
    judged = fast[subs["judged"].pk]
    assert judged["accuracy"] == pytest.approx(2 / 3 if verdict == "correct" else 1 / 3,
                                               abs=1e-15)
    score = Score.objects.get(submission=subs["judged"], label_set_version=version)
    assert (score.accuracy, score.ci_low, score.ci_high, score.correct, score.total) == (
        judged["accuracy"], judged["ci_low"], judged["ci_high"], judged["correct"],
        judged["total"])


def _as_built_before(current: CompiledLabelSet) -> CompiledLabelSet:
    """The same set as the builder made it before the class mean: no original_labels."""
    arrays = {k: v for k, v in current.arrays.items() if k != "original_labels"}
    return CompiledLabelSet(
        slug=current.slug, benchmark=current.benchmark, example_set=current.example_set,
        kind=current.kind, family=current.family, num_classes=current.num_classes,
        size=current.size, arrays=arrays, meta=current.meta,
        content_hash=content_hash(family=current.family, kind=current.kind,
                                  num_classes=current.num_classes, size=current.size,
                                  arrays=arrays, meta=current.meta))


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command("scores_recompute", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_it_upgrades_an_old_multilabel_version_and_recomputes_its_scores_idempotently(
    setup: dict[str, Any], tmp_path: Path,
) -> None:
    tops = _tops(setup)
    subs = {name: submit_imagenet(top1, tmp_path, name) for name, top1 in tops.items()}
    first = LabelSetVersion.objects.get(label_set__slug="multilabel", number=1)
    fresh = compiled_for_version(first)
    # what a deployment from before holds: a current version compiled without
    # original_labels, and pooled scores on it
    old = _as_built_before(fresh)
    compiled_store(old)
    before = label_set_version_create(label_set=first.label_set, content_hash=old.content_hash,
                                      summary=dict(old.summary), parent=first)
    scores_copy(parent=first, version=before, exclude=[])
    for score in Score.objects.filter(label_set_version=before):
        pooled = score.correct / score.total
        score.accuracy = pooled
        score.record = {**score.record, "accuracy": pooled}
        score.save()
    upgrade_line, rescore_line = _command("--label-set", "multilabel").splitlines()
    assert upgrade_line == ("imagenet/multilabel: version 3 adds original_labels "
                            f"(sha256 {fresh.content_hash[:12]})")
    assert rescore_line.startswith("imagenet/multilabel: version 3: 3 submission(s) re-scored in ")
    upgraded = LabelSetVersion.objects.get(label_set__slug="multilabel", number=3)
    # the same labels as a fresh build of the file, the old version its parent
    assert (upgraded.content_hash, upgraded.parent_id) == (fresh.content_hash, before.pk)
    assert upgraded.summary["settled"] == []
    assert "original_labels" in upgraded.note
    assert VersionRescore.objects.get(version=upgraded).status == "done"
    records = _records(upgraded)
    assert set(records) == {s.pk for s in subs.values()}
    for name, sub in subs.items():
        _assert_all(setup, records[sub.pk], tops[name], setup["accepted"])
    score = Score.objects.get(submission=subs["right"], label_set_version=upgraded)
    assert score.accuracy == pytest.approx(2 / 3, abs=1e-15)
    assert score.record["version_hash"] == fresh.content_hash
    # again: nothing to upgrade, the same numbers
    again = _command("--benchmark", "imagenet", "--label-set", "multilabel")
    assert "adds" not in again and "imagenet/multilabel: version 3: 3 submission(s)" in again
    assert LabelSetVersion.objects.filter(label_set__slug="multilabel").count() == 3
    assert _records(upgraded) == records


@pytest.mark.django_db
def test_it_queues_the_rescoring_for_the_workers_on_request(
    setup: dict[str, Any], tmp_path: Path, sent: list[tuple[str, int]],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    submit_imagenet(_tops(setup)["right"], tmp_path, "right")
    sent.clear()  # anything the set-up sent is not under test
    with django_capture_on_commit_callbacks(execute=True):
        out = _command("--label-set", "multilabel", "--label-set", "real", "--queue")
    versions = {v.label_set.slug: v for v in LabelSetVersion.objects.filter(
        label_set__slug__in=("multilabel", "real")).select_related("label_set")}
    assert out.splitlines() == [f"imagenet/{slug}: version 1 queued for re-scoring"
                                for slug in ("multilabel", "real")]
    assert sorted(sent) == sorted((task_names.RESCORE_VERSION, v.pk) for v in versions.values())
    assert {r.status for r in VersionRescore.objects.filter(version__in=versions.values())} \
        == {"queued"}
    assert Submission.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("args", "message"), [
    (("--benchmark", "nope"), "no benchmark 'nope'; the catalog has imagenet"),
    (("--label-set", "nope"), "no label set 'nope' in any benchmark; there are"),
])
def test_it_names_an_unknown_benchmark_or_label_set(
    setup: dict[str, Any], args: tuple[str, ...], message: str,
) -> None:
    with pytest.raises(CommandError) as caught:
        _command(*args)
    assert str(caught.value).startswith(message)
