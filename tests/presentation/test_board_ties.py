"""Statistical ties on the leaderboard: a paired exact McNemar test between adjacent rows, with
real CIFAR-10 models. Every expected figure is computed here from the models' published
prediction files (b and c counted with numpy, p from math.comb), never from the server."""

from __future__ import annotations

import html
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions.models import HitVector, Score, Submission
from tests import factories
from tests.api_support import scored_in_process
from workers.scoring.ties import hits_count, unpack_hits

pytestmark = pytest.mark.django_db

BOARD = "/api/benchmarks/cifar10/leaderboard/"
# Chosen so that each sort has both ties and clear separations, and two models share an
# accuracy on cifar10.1-v6 (wrn_28_10 and resnext_29_4x64d: 0.9015).
MODELS = ("nas", "wide_resnet_tf", "resnet_preact_bottleneck_164", "vgg16_keras",
          "resnet_basic_110", "resnet_basic_56", "cudaconvnet", "random_features_32k_aug",
          "random_features_256k_no_aug", "wrn_28_10", "resnext_29_4x64d")
IMAGE_SETS = ("cifar10-test", "cifar10.1-v6")


@pytest.fixture
def models(loaded: Settings, data_dir: Path) -> dict[str, Submission]:
    return {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}"),
                                 image_sets=IMAGE_SETS) for m in MODELS}


def _top1(data_dir: Path, model: str, image_set: str) -> np.ndarray:
    path = factories.cifar10_model_files(data_dir, model)[image_set]
    return np.array(json.loads(path.read_text()), dtype=np.int64)


def direct_hits(data_dir: Path, model: str, sort: str) -> np.ndarray:
    """Per evaluated example of `sort`, whether the model's top-1 is right, from the files."""
    if sort == "cifar10.1-v6":
        return _top1(data_dir, model, "cifar10.1-v6") == np.load(
            data_dir / "cifar10/cifar10.1_v6_labels.npy")
    labels = np.load(data_dir / "cifar10/original_labels.npy").astype(np.int64)
    top1 = _top1(data_dir, model, "cifar10-test")
    if sort == "original":
        return top1 == labels
    # docs/metrics.md §3, threshold 3: the pruned set, guessed labels on C
    assert sort == "corrected"
    corrected, pruned = labels.copy(), np.ones(labels.size, dtype=bool)
    for entry in json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text()):
        votes = entry["mturk"]
        if votes.get("given", 0) >= 3:
            continue
        if votes.get("guessed", 0) >= 3:
            corrected[entry["id"]] = entry["our_guessed_label"]
        else:
            pruned[entry["id"]] = False
    return (top1 == corrected)[pruned]


def exact_p(b: int, c: int) -> float:
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, k) for k in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def expected_rows(data_dir: Path, models: dict[str, Submission],
                  sort: str) -> list[tuple[str, int, bool, float | None]]:
    """(model, tie group, tied with previous, p to the row above) in leaderboard order."""
    hits = {m: direct_hits(data_dir, m, sort) for m in models}
    correct = {m: int(h.sum()) for m, h in hits.items()}
    order = sorted(models, key=lambda m: (-correct[m], models[m].pk))
    rows: list[tuple[str, int, bool, float | None]] = [(order[0], 1, False, None)]
    for above, below in zip(order, order[1:], strict=False):
        b = int(np.count_nonzero(hits[above] & ~hits[below]))
        c = int(np.count_nonzero(~hits[above] & hits[below]))
        p = exact_p(b, c)
        tied = p >= 0.05
        rows.append((below, rows[-1][1] if tied else rows[-1][1] + 1, tied, p))
    return rows


def test_it_gives_tie_groups_and_p_values_like_a_direct_computation(
    models: dict[str, Submission], data_dir: Path
) -> None:
    for sort in ("original", "corrected", "cifar10.1-v6"):
        expected = expected_rows(data_dir, models, sort)
        body = APIClient().get(BOARD, {"sort": sort}).json()
        got = [(r["model_name"], r["tie_group"], r["tied_with_previous"], r["mcnemar_p"])
               for r in body["rows"]]
        assert [g[:3] for g in got] == [e[:3] for e in expected], sort
        assert got[0][3] is None
        for (_, _, _, p), (_, _, _, want) in zip(got[1:], expected[1:], strict=True):
            assert p == pytest.approx(want, rel=1e-9, abs=1e-300)
        groups = [e[1] for e in expected]
        assert 1 < groups[-1] < len(MODELS), sort  # some ties, some separations
    # the sort decides: on original these two are apart, on cifar10.1-v6 in one group
    original = {e[0]: e[1] for e in expected_rows(data_dir, models, "original")}
    v6 = {e[0]: e[1] for e in expected_rows(data_dir, models, "cifar10.1-v6")}
    assert original["nas"] != original["wide_resnet_tf"]
    assert v6["nas"] == v6["wide_resnet_tf"]


def test_it_stores_hits_whose_popcount_is_the_correct_count_of_every_score(
    models: dict[str, Submission], data_dir: Path
) -> None:
    scores = Score.objects.filter(submission__in=models.values()).select_related(
        "label_set", "submission")
    assert scores.count() == len(MODELS) * 4  # original, corrected, cifar10h, cifar10.1-v6
    for score in scores:
        packed = bytes(score.hits.bits)
        assert len(packed) == -(-score.total // 8)
        assert hits_count(packed) == score.correct, (score.submission.model_name, score.label_set)
    for model in ("nas", "cudaconvnet"):
        for sort in ("original", "corrected", "cifar10.1-v6"):
            score = scores.get(submission=models[model], label_set__slug=sort)
            assert unpack_hits(bytes(score.hits.bits), score.total).tolist() == \
                direct_hits(data_dir, model, sort).tolist()


def test_it_leaves_rows_without_usable_stored_hits_untied(
    models: dict[str, Submission], data_dir: Path
) -> None:
    expected = expected_rows(data_dir, models, "cifar10.1-v6")
    order = [e[0] for e in expected]
    # a row scored before hits were stored, and one whose hits disagree with its count
    old, stale = order[2], order[6]
    version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                          label_set__slug="cifar10.1-v6")
    Score.objects.filter(submission=models[old], label_set_version=version).update(hits=None)
    Score.objects.filter(submission=models[stale], label_set_version=version).update(
        hits=HitVector.objects.create(digest="0" * 64, bits=bytes(250)))
    benchmark_leaderboard_touch(benchmark_id=Benchmark.objects.get(slug="cifar10").pk)

    rows = APIClient().get(BOARD, {"sort": "cifar10.1-v6"}).json()["rows"]

    assert [r["model_name"] for r in rows] == order
    untestable = {2, 3, 6, 7}  # each of the two rows, against the row above and below
    group = 1
    for i, (row, (_, _, tied, p)) in enumerate(zip(rows, expected, strict=True)):
        if i in untestable:
            tied, p = False, None
        if i and not tied:
            group += 1
        assert (row["tie_group"], row["tied_with_previous"]) == (group, tied), i
        assert row["mcnemar_p"] == (None if p is None else pytest.approx(p, rel=1e-9)), i


def test_it_gives_no_tie_group_to_rows_without_a_score_on_the_sort(
    loaded: Settings, data_dir: Path
) -> None:
    both = scored_in_process(data_dir, "nas", factories.user_create("a"), image_sets=IMAGE_SETS)
    one = scored_in_process(data_dir, "vgg16_keras", factories.user_create("b"),
                            image_sets=("cifar10-test",))

    rows = APIClient().get(BOARD, {"sort": "cifar10.1-v6"}).json()["rows"]

    assert [(r["submission_id"], r["tie_group"], r["tied_with_previous"], r["mcnemar_p"])
            for r in rows] == [(both.pk, 1, False, None), (one.pk, None, False, None)]


def test_it_marks_tie_groups_next_to_the_sorted_rank_in_the_table(
    models: dict[str, Submission], data_dir: Path
) -> None:
    expected = expected_rows(data_dir, models, "cifar10.1-v6")
    sizes: dict[int, int] = {}
    for _, group, _, _ in expected:
        sizes[group] = sizes.get(group, 0) + 1

    page = Client().get(reverse("leaderboard", args=["cifar10"]), {"sort": "cifar10.1-v6"})

    assert page.status_code == 200
    text = page.content.decode()
    assert ("rows sharing a group are not distinguishable by a paired exact McNemar test at "
            "the 5% level") in text
    for model, group, tied, p in expected:
        row = re.search(rf'<tr data-submission="{models[model].pk}">(.*?)</tr>', text, re.S)
        assert row is not None
        marks = re.findall(r'<span class="tie" title="([^"]*)">≈(\d+)</span>', row.group(1))
        if sizes[group] == 1:
            assert marks == [], model
            continue
        assert len(marks) == 1, model
        title, shown = html.unescape(marks[0][0]), int(marks[0][1])
        assert shown == group
        assert title.startswith(f"Tie group {group} ({sizes[group]} rows): ")
        active = re.search(r'<td class="col-score active" data-label-set="cifar10.1-v6">(.*?)</td>',
                           row.group(1), re.S)
        assert active is not None and "≈" in active.group(1)  # in the sorted column's cell
        if p is not None:
            shown_p = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
            assert f"McNemar {shown_p}" in title
        if tied:
            assert "not distinguishable from the row above" in title
