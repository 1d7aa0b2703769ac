"""rank_ub and the McNemar p-value against the row above on the leaderboard (docs/metrics.md
§10.3), with real CIFAR-10 models: computed by the worker when scores change, stored, read by
the board. Every expected figure is computed here from the models' published prediction files,
pair by pair (b and c counted with numpy, p from math.comb), never from the server."""

from __future__ import annotations

import json
import math
import re
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard import queue
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import label_set_versions_current
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions.models import BoardSignificance, HitVector, Score, Submission
from leaderboard.tasks.cpu import refresh_board_significance
from tests import factories
from tests.api_support import scored_in_process
from workers.scoring.significance import hits_count, unpack_hits
from workers.scoring.significance import pairs as significance_pairs

pytestmark = pytest.mark.django_db

BOARD = "/api/benchmarks/cifar10/leaderboard/"
# Chosen so that each sort has both separable and inseparable neighbours, and two models share
# an accuracy on cifar10.1-v6 (wrn_28_10 and resnext_29_4x64d: 0.9015).
MODELS = ("nas", "wide_resnet_tf", "resnet_preact_bottleneck_164", "vgg16_keras",
          "resnet_basic_110", "resnet_basic_56", "cudaconvnet", "random_features_32k_aug",
          "random_features_256k_no_aug", "wrn_28_10", "resnext_29_4x64d")
EXAMPLE_SETS = ("cifar10-test", "cifar10.1-v6")


@pytest.fixture
def models(loaded: Settings, data_dir: Path) -> dict[str, Submission]:
    scored = {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}"),
                                   example_sets=EXAMPLE_SETS) for m in MODELS}
    # what the worker then runs, EVALSERVER_SIGNIFICANCE_DELAY s after the scorings
    refresh_board_significance.apply(args=[factories.cifar10().pk]).get()
    return scored


def _top1(data_dir: Path, model: str, example_set: str) -> np.ndarray:
    path = factories.cifar10_model_files(data_dir, model)[example_set]
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


def expected_rows(data_dir: Path, models: dict[str, Submission], sort: str,
                  usable: set[str] | None = None) -> list[tuple[str, int | None, float | None]]:
    """(model, rank_ub, p to the row above) in leaderboard order, pair by pair; models not in
    `usable` (no usable stored hits) are left out of every test."""
    hits = {m: direct_hits(data_dir, m, sort) for m in models}
    usable = set(models) if usable is None else usable
    correct = {m: int(h.sum()) for m, h in hits.items()}
    order = sorted(models, key=lambda m: (-correct[m], models[m].pk))

    def p(a: str, b: str) -> float:
        return exact_p(int(np.count_nonzero(hits[a] & ~hits[b])),
                       int(np.count_nonzero(~hits[a] & hits[b])))

    rows: list[tuple[str, int | None, float | None]] = []
    for i, model in enumerate(order):
        if model not in usable:
            rows.append((model, None, None))
            continue
        better = sum(1 for other in usable
                     if correct[other] > correct[model] and p(other, model) < 0.05)
        above = order[i - 1] if i else None
        rows.append((model, 1 + better,
                     p(above, model) if above is not None and above in usable else None))
    return rows


def test_it_gives_rank_ub_and_p_values_like_a_direct_computation(
    models: dict[str, Submission], data_dir: Path
) -> None:
    for sort in ("original", "corrected", "cifar10.1-v6"):
        expected = expected_rows(data_dir, models, sort)
        body = APIClient().get(BOARD, {"sort": sort}).json()
        got = [(r["model_name"], r["rank_ub"], r["mcnemar_p"]) for r in body["rows"]]
        assert [g[:2] for g in got] == [e[:2] for e in expected], sort
        assert got[0][2] is None
        for (_, _, p), (_, _, want) in zip(got[1:], expected[1:], strict=True):
            assert p == pytest.approx(want, rel=1e-9, abs=1e-300)
        assert all("tie_group" not in r and "tied_with_previous" not in r for r in body["rows"])
        ubs = [e[1] for e in expected]
        ranks = [r["ranks"][sort] for r in body["rows"]]
        assert all(ub is not None and ub <= rank for ub, rank in zip(ubs, ranks, strict=True))
        assert ubs != ranks and ubs[-1] > 1, sort  # some rows inseparable, some separated
    # no chaining: on original the top model is significantly better than some row that is
    # inseparable from its own neighbour above
    original = expected_rows(data_dir, models, "original")
    assert any(ub is not None and ub > 1 and p is not None and p >= 0.05
               for _, ub, p in original)


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


def test_it_leaves_rows_without_usable_stored_hits_out_of_the_tests(
    models: dict[str, Submission], data_dir: Path
) -> None:
    order = [e[0] for e in expected_rows(data_dir, models, "cifar10.1-v6")]
    # a row scored before hits were stored, and one whose hits disagree with its count
    old, stale = order[2], order[6]
    version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                          label_set__slug="cifar10.1-v6")
    Score.objects.filter(submission=models[old], label_set_version=version).update(hits=None)
    Score.objects.filter(submission=models[stale], label_set_version=version).update(
        hits=HitVector.objects.create(digest="0" * 64, bits=bytes(250)))
    refresh_board_significance.apply(args=[factories.cifar10().pk]).get()  # as the worker

    rows = APIClient().get(BOARD, {"sort": "cifar10.1-v6"}).json()["rows"]

    expected = expected_rows(data_dir, models, "cifar10.1-v6",
                             usable=set(models) - {old, stale})
    assert [r["model_name"] for r in rows] == order
    assert [r["rank_ub"] for r in rows] == [e[1] for e in expected]
    assert [r["mcnemar_p"] is None for r in rows] == [e[2] is None for e in expected]
    assert [i for i, r in enumerate(rows) if r["mcnemar_p"] is None] == [0, 2, 3, 6, 7]


def test_it_updates_the_stored_rows_that_come_and_go_without_computing_every_pair(
    models: dict[str, Submission], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def in_full(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a change of one row computed every pair")

    # docs/metrics.md §10.4: one row hidden, then public again, changes only its own pairs
    monkeypatch.setattr(significance_pairs, "board_significance_pruned", in_full)
    hidden = MODELS[1]
    for public, board in ((False, {m: s for m, s in models.items() if m != hidden}),
                          (True, models)):
        Submission.objects.filter(pk=models[hidden].pk).update(public=public)
        refresh_board_significance.apply(args=[factories.cifar10().pk]).get()  # as the worker
        for sort in ("original", "corrected", "cifar10.1-v6"):
            stored = BoardSignificance.objects.get(label_set_version=LabelSetVersion.objects.get(
                label_set__benchmark__slug="cifar10", label_set__slug=sort))
            expected = expected_rows(data_dir, board, sort)
            assert stored.submission_ids == [board[m].pk for m, _, _ in expected]
            assert stored.rank_ub == [ub for _, ub, _ in expected]
            assert stored.p_above[0] is None
            assert stored.p_above[1:] == pytest.approx([p for _, _, p in expected[1:]],
                                                       rel=1e-9, abs=1e-300)


def test_it_gives_no_rank_ub_to_rows_without_a_score_on_the_sort(
    loaded: Settings, data_dir: Path
) -> None:
    both = scored_in_process(data_dir, "nas", factories.user_create("a"), example_sets=EXAMPLE_SETS)
    one = scored_in_process(data_dir, "vgg16_keras", factories.user_create("b"),
                            example_sets=("cifar10-test",))
    refresh_board_significance.apply(args=[factories.cifar10().pk]).get()  # as the worker

    rows = APIClient().get(BOARD, {"sort": "cifar10.1-v6"}).json()["rows"]

    assert [(r["submission_id"], r["rank_ub"], r["mcnemar_p"]) for r in rows] == [
        (both.pk, 1, None), (one.pk, None, None)]


def test_it_shows_rank_ub_beside_the_rank_in_the_table(
    models: dict[str, Submission], data_dir: Path
) -> None:
    expected = expected_rows(data_dir, models, "cifar10.1-v6")

    page = Client().get(reverse("leaderboard", args=["cifar10"]), {"sort": "cifar10.1-v6"})

    assert page.status_code == 200
    text = page.content.decode()
    assert ">Rank (UB)</th>" in text
    assert "pairwise and not corrected for multiple comparisons" in text
    assert "≈" not in text and "tie group" not in text.lower()
    for model, ub, p in expected:
        row = re.search(rf'<tr data-submission="{models[model].pk}">(.*?)</tr>', text, re.S)
        assert row is not None
        cell = re.search(r'<td class="col-rank-ub"( title="([^"]*)")?>([^<]*)</td>', row.group(1))
        assert cell is not None, model
        assert cell.group(3) == str(ub)
        if p is None:
            assert cell.group(1) is None
        else:
            shown = "p &lt; 0.001" if p < 0.001 else f"p = {p:.3f}"
            assert cell.group(2) == f"McNemar p against the row above: {shown}"


def test_it_schedules_one_refresh_for_a_burst_of_scorings(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any, settings: Settings,
) -> None:
    settings.EVALSERVER_SIGNIFICANCE_DELAY = 7
    sent: list[tuple[str, int, float]] = []
    monkeypatch.setattr(queue, "task_send", lambda name, job_id, countdown=0: sent.append(
        (name, job_id, countdown)))
    benchmark = factories.cifar10()

    with django_capture_on_commit_callbacks(execute=True):
        for model in MODELS[:3]:
            scored_in_process(data_dir, model, factories.user_create(f"u-{model}"))
    refreshes = [s for s in sent if s[0] == queue.REFRESH_BOARD_SIGNIFICANCE]
    assert refreshes == [(queue.REFRESH_BOARD_SIGNIFICANCE, benchmark.pk, 7)]
    assert not BoardSignificance.objects.exists()  # not computed in the scoring itself

    cache.delete(f"significance-scheduled:{benchmark.pk}")  # the delay has passed
    with django_capture_on_commit_callbacks(execute=True):
        scored_in_process(data_dir, MODELS[3], factories.user_create(f"u-{MODELS[3]}"))
    refreshes = [s for s in sent if s[0] == queue.REFRESH_BOARD_SIGNIFICANCE]
    assert refreshes == [(queue.REFRESH_BOARD_SIGNIFICANCE, benchmark.pk, 7)] * 2


def test_it_shows_null_while_not_computed_and_asks_the_worker_without_computing(
    models: dict[str, Submission], data_dir: Path, django_capture_on_commit_callbacks: Any,
    sent: list[tuple[str, int]],
) -> None:
    BoardSignificance.objects.all().delete()
    benchmark = factories.cifar10()
    benchmark_leaderboard_touch(benchmark_id=benchmark.pk)
    sent.clear()  # anything the set-up sent is not under test

    with django_capture_on_commit_callbacks(execute=True):
        body = APIClient().get(BOARD, {"sort": "original"}).json()
        page = Client().get(reverse("leaderboard", args=["cifar10"]), {"sort": "original"})

    assert [(r["rank_ub"], r["mcnemar_p"]) for r in body["rows"]] == [(None, None)] * len(MODELS)
    assert not BoardSignificance.objects.exists()  # nothing computed in the requests
    assert sent == [(queue.REFRESH_BOARD_SIGNIFICANCE, benchmark.pk)]  # asked once
    assert page.content.decode().count('<span class="computing">computing</span>') == len(MODELS)

    current = label_set_versions_current(benchmark=benchmark)
    assert refresh_board_significance.apply(args=[benchmark.pk]).get() == len(current)
    body = APIClient().get(BOARD, {"sort": "original"}).json()
    assert [r["rank_ub"] for r in body["rows"]] == [
        e[1] for e in expected_rows(data_dir, models, "original")]


def stored_for(version: LabelSetVersion, rows: int) -> BoardSignificance:
    """The significance the worker stores for `rows` public rows: the refresh a scoring
    schedules runs EVALSERVER_SIGNIFICANCE_DELAY (2) s after it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stored = BoardSignificance.objects.filter(label_set_version=version).first()
        if stored is not None and len(stored.submission_ids) == rows:
            return stored
        time.sleep(0.2)
    raise AssertionError(f"no significance stored for {rows} rows of {version} in 60 s")


@pytest.mark.django_db(transaction=True)
def test_it_updates_the_stored_significance_when_a_real_worker_scores_a_submission(
    loaded: Settings, data_dir: Path, scoring_worker: Path
) -> None:
    from tests.conftest import wait_for_status

    first = {m: factories.submission_for_model(data_dir, m) for m in MODELS[:3]}
    for submission in first.values():
        assert wait_for_status(submission.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                          label_set__slug="original")
    before = stored_for(version, len(first))

    added = factories.submission_for_model(data_dir, MODELS[3])
    assert wait_for_status(added.pk, ("scored", "failed"), log=scoring_worker) == "scored"

    stored = stored_for(version, len(first) + 1)
    everyone = {**first, MODELS[3]: added}
    expected = expected_rows(data_dir, everyone, "original")
    assert stored.fingerprint != before.fingerprint
    assert stored.submission_ids == [everyone[m].pk for m, _, _ in expected]
    assert stored.rank_ub == [ub for _, ub, _ in expected]
    rows = APIClient().get(BOARD, {"sort": "original"}).json()["rows"]
    assert [(r["model_name"], r["rank_ub"]) for r in rows] == [e[:2] for e in expected]
