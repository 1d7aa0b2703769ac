"""A withdrawn submission leaves the board (JSON and page), its significance and its hidden
label sets' released figures: the refresh queued after the withdrawal's commit gives the other
rows' rank_ub and p exactly as computed pair by pair from the models' published predictions
(tests/presentation/boards)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard import queue
from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.submissions.models import BoardSignificance, Submission
from leaderboard.tasks.cpu import refresh_board_significance
from tests import factories
from tests.api_support import scored_in_process, token_client
from tests.presentation.boards.test_board_significance import EXAMPLE_SETS, expected_rows
from tests.submissions.test_hidden_releases import (  # noqa: F401  (a fixture)
    FIRST,
    SECOND,
    THIRD,
    _scored,
    toy_with_secret,
)

pytestmark = pytest.mark.django_db

BOARD = "/api/benchmarks/cifar10/leaderboard/"
# Five real models; one of the middle rows (resnet_basic_56) is withdrawn.
MODELS = ("nas", "vgg16_keras", "resnet_basic_110", "resnet_basic_56", "cudaconvnet")
SORTS = ("original", "corrected", "cifar10.1-v6")


def _board(sort: str) -> list[tuple[str, int | None, float | None]]:
    rows = APIClient().get(BOARD, {"sort": sort}).json()["rows"]
    return [(r["model_name"], r["rank_ub"], r["mcnemar_p"]) for r in rows]


def _assert_board(data_dir: Path, board: dict[str, Submission]) -> None:
    for sort in SORTS:
        expected = expected_rows(data_dir, board, sort)
        got = _board(sort)
        assert [g[:2] for g in got] == [e[:2] for e in expected], sort
        assert [g[2] for g in got[1:]] == pytest.approx([e[2] for e in expected[1:]],
                                                        rel=1e-9, abs=1e-300)
        stored = BoardSignificance.objects.get(label_set_version=LabelSetVersion.objects.get(
            label_set__benchmark__slug="cifar10", label_set__slug=sort))
        assert stored.submission_ids == [board[m].pk for m, _, _ in expected]


def test_it_takes_a_withdrawn_submission_off_the_board_and_refreshes_its_significance(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    models = {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}"),
                                   example_sets=EXAMPLE_SETS) for m in MODELS}
    benchmark = factories.cifar10()
    refresh_board_significance.apply(args=[benchmark.pk]).get()  # as the worker
    _assert_board(data_dir, models)
    gone = "resnet_basic_56"
    page = Client().get(f"/benchmarks/{benchmark.slug}/")
    assert gone in page.content.decode()
    sent.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(models[gone].owner).post(
            f"/api/submissions/{models[gone].pk}/withdraw/", {"reason": "a bug in my code"},
            format="json")

    assert response.status_code == 200, response.content
    assert sent == [(queue.REFRESH_BOARD_SIGNIFICANCE, benchmark.pk)]
    rest = {m: s for m, s in models.items() if m != gone}
    # before the worker's refresh: the row is gone at once, and no stale rank_ub is shown
    assert [name for name, _, _ in _board("original")] == \
        [m for m, _, _ in expected_rows(data_dir, rest, "original")]
    assert all(ub is None for _, ub, _ in _board("original"))
    refresh_board_significance.apply(args=[benchmark.pk]).get()  # the refresh queued
    _assert_board(data_dir, rest)
    page = Client().get(f"/benchmarks/{benchmark.slug}/")
    assert page.status_code == 200
    assert gone not in page.content.decode()
    assert all(m in page.content.decode() for m in rest)
    # its owner still sees its scores
    own = token_client(models[gone].owner).get(f"/api/submissions/{models[gone].pk}/").json()
    assert own["scores"]["original"]["correct"] == models[gone].scores.get(
        label_set__slug="original").correct


def test_it_takes_a_withdrawn_submissions_released_figure_off_the_board(
    toy_with_secret: Benchmark,  # noqa: F811  (the fixture imported above)
    sent: list[tuple[str, int]],
) -> None:
    owner = factories.user_create("researcher")
    first, _, third = (_scored(toy_with_secret, owner, name, predicted) for name, predicted
                       in (("first", FIRST), ("second", SECOND), ("third", THIRD)))
    by_secret = APIClient().get("/api/benchmarks/toy/leaderboard/?sort=secret").json()
    assert [(r["submission_id"], r["scores"]["secret"]["accuracy"])
            for r in by_secret["rows"]] == [(third.pk, 1.0)]

    response = token_client(owner).post(f"/api/submissions/{third.pk}/withdraw/")

    assert response.status_code == 200, response.content
    board = APIClient().get("/api/benchmarks/toy/leaderboard/").json()
    assert third.pk not in [row["submission_id"] for row in board["rows"]]
    by_secret = APIClient().get("/api/benchmarks/toy/leaderboard/?sort=secret").json()
    assert third.pk not in [row["submission_id"] for row in by_secret["rows"]]
    page = Client().get("/benchmarks/toy/?sort=secret")
    assert page.status_code == 200 and "third" not in page.content.decode()
    assert first.pk in [row["submission_id"] for row in board["rows"]]
    # its owner still reads its release
    mine = token_client(owner).get(f"/api/submissions/{third.pk}/").json()
    assert (mine["releases"][0]["released"], mine["releases"][0]["best"]) == (1.0, 1.0)
