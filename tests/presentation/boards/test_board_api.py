"""GET /api/benchmarks/<slug>/leaderboard/: values, ranks and rank shifts of real models."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django.fixtures import DjangoAssertNumQueries, Settings
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.services import label_set_version_create
from leaderboard.presentation.boards.selectors import leaderboard_get
from leaderboard.presentation.boards.serializers import LeaderboardOutput, LeaderboardPage
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create, submission_visibility_set
from tests import factories
from tests.api_support import scored_in_process, top1_accuracy

pytestmark = pytest.mark.django_db

MODELS = ("resnet_basic_110", "wrn_28_10", "vgg16_keras")
BOARD = "/api/benchmarks/cifar10/leaderboard/"


@pytest.fixture
def three_models(loaded: Settings, data_dir: Path) -> dict[str, Submission]:
    return {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}")) for m in MODELS}


def _rank(acc: dict[str, dict[str, float]], model: str, slug: str) -> int:
    """Competition ranking: 1 + the number of models strictly better."""
    return 1 + sum(acc[other][slug] > acc[model][slug] for other in acc)


def _columns() -> list[dict[str, object]]:
    versions = (LabelSetVersion.objects.filter(label_set__benchmark__slug="cifar10")
                .select_related("label_set").order_by("label_set_id"))
    return [{"slug": v.label_set.slug, "name": v.label_set.name, "version": v.number,
             "version_hash": v.content_hash, "ci_method": "clopper_pearson",
             "rescoring": False, "pending_version": None, "shift_from": "original"}
            for v in versions]


def test_it_ranks_real_models_like_a_direct_computation(
    three_models: dict[str, Submission], data_dir: Path
) -> None:
    acc = {m: {"original": top1_accuracy(data_dir, m, "cifar10-test"),
               "cifar10.1-v6": top1_accuracy(data_dir, m, "cifar10.1-v6")} for m in MODELS}
    accuracy = {m: {slug: a[0] for slug, a in acc[m].items()} for m in MODELS}

    response = APIClient().get(BOARD, {"sort": "cifar10.1-v6"})

    assert response.status_code == 200
    body = response.json()
    assert (body["benchmark"], body["sort"]) == ("cifar10", "cifar10.1-v6")
    assert body["columns"] == _columns()
    expected_order = sorted(MODELS, key=lambda m: (_rank(accuracy, m, "cifar10.1-v6"),
                                                   three_models[m].pk))
    assert [row["model_name"] for row in body["rows"]] == expected_order
    for row in body["rows"]:
        m = row["model_name"]
        assert row["submission_id"] == three_models[m].pk
        assert row["owner"] == f"u-{m}"
        for slug in ("original", "cifar10.1-v6"):
            value, correct, total = acc[m][slug]
            cell = row["scores"][slug]
            assert (cell["accuracy"], cell["correct"], cell["total"]) == (value, correct, total)
            assert cell["ci_low"] < value < cell["ci_high"]
            assert row["ranks"][slug] == _rank(accuracy, m, slug)
            assert row["rank_shift"][slug] == (_rank(accuracy, m, "original")
                                               - _rank(accuracy, m, slug))
        assert row["rank_shift"]["original"] == 0
        # no predictions for cifar10.1-v4: no score and no rank there
        assert "cifar10.1-v4" not in row["scores"] and "cifar10.1-v4" not in row["ranks"]


def test_it_sorts_by_original_by_default(three_models: dict[str, Submission],
                                         data_dir: Path) -> None:
    accuracy = {m: top1_accuracy(data_dir, m, "cifar10-test")[0] for m in MODELS}

    body = APIClient().get(BOARD).json()

    assert body["sort"] == "original"
    assert [row["model_name"] for row in body["rows"]] == sorted(
        MODELS, key=lambda m: (-accuracy[m], three_models[m].pk))
    assert [row["ranks"]["original"] for row in body["rows"]] == [1, 2, 3]


def test_it_leaves_out_private_and_unscored_submissions(loaded: Settings,
                                                        data_dir: Path) -> None:
    shown = scored_in_process(data_dir, MODELS[0], factories.user_create("a"))
    scored_in_process(data_dir, MODELS[1], factories.user_create("b"), public=False)
    paths = factories.cifar10_model_files(data_dir, MODELS[2])
    submission_create(
        owner=factories.user_create("c"), benchmark=factories.cifar10(),
        model_name="queued", files={"cifar10-test": factories.upload_from_path(
            paths["cifar10-test"])})

    body = APIClient().get(BOARD).json()

    assert [row["submission_id"] for row in body["rows"]] == [shown.pk]


def test_it_refuses_an_unknown_sort(loaded: Settings) -> None:
    response = APIClient().get(BOARD, {"sort": "nope"})

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_label_set",
        "message": "cannot sort by 'nope'; cifar10 has original, corrected, cifar10h, "
                   "cifar10.1-v4, cifar10.1-v6",
        "field": "sort"}}


def test_it_documents_sort_as_the_label_sets_a_board_can_be_ranked_by(loaded: Settings) -> None:
    def sort_schema() -> dict[str, object]:
        schema = APIClient().get("/api/schema/", {"format": "json"}).json()
        parameters = schema["paths"]["/api/benchmarks/{slug}/leaderboard/"]["get"]["parameters"]
        return dict(next(p for p in parameters if p["name"] == "sort")["schema"])

    # every label set with a published version, of every benchmark not hidden: `00` (a
    # well-formed slug, but no label set) is no longer schema-valid; no default, the
    # benchmark's reference label set being each board's own
    assert sort_schema() == {
        "type": "string", "minLength": 1,
        "enum": ["cifar10.1-v4", "cifar10.1-v6", "cifar10h", "corrected", "corrected-t4",
                 "corrected-t5", "original", "real"]}
    Benchmark.objects.filter(slug="imagenet").update(hidden=True)
    assert "real" not in sort_schema()["enum"]  # ImageNet's only
    # One schema for every benchmark's board: a label set of another benchmark is in the enum,
    # and refused in the error shape.
    response = APIClient().get(BOARD, {"sort": "corrected-t4"})
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_label_set",
        "message": "cannot sort by 'corrected-t4'; cifar10 has original, corrected, cifar10h, "
                   "cifar10.1-v4, cifar10.1-v6",
        "field": "sort"}}


def test_it_refuses_an_unknown_version(loaded: Settings) -> None:
    response = APIClient().get(BOARD, {"version": "abcdef0123"})

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_version",
        "message": "no single label-set version of cifar10 has hash 'abcdef0123' "
                   "(give at least 6 leading characters)",
        "field": "version"}}


def test_it_shows_an_older_version_named_by_its_hash(
    three_models: dict[str, Submission], data_dir: Path
) -> None:
    original = LabelSet.objects.get(benchmark__slug="cifar10", slug="original")
    v1 = LabelSetVersion.objects.get(label_set=original, number=1)
    # A newer version on which nothing has been scored yet.
    label_set_version_create(label_set=original, content_hash="e" * 64, summary={})

    latest = APIClient().get(BOARD, {"sort": "cifar10.1-v6"}).json()
    pinned = APIClient().get(BOARD, {"sort": "cifar10.1-v6", "version": v1.content_hash[:12]})

    column = next(c for c in latest["columns"] if c["slug"] == "original")
    assert (column["version"], column["version_hash"]) == (2, "e" * 64)
    assert all("original" not in row["scores"] for row in latest["rows"])
    assert pinned.status_code == 200
    column = next(c for c in pinned.json()["columns"] if c["slug"] == "original")
    assert (column["version"], column["version_hash"]) == (1, v1.content_hash)
    for row in pinned.json()["rows"]:
        assert row["scores"]["original"]["accuracy"] == top1_accuracy(
            data_dir, row["model_name"], "cifar10-test")[0]


def test_it_answers_404_for_the_leaderboard_of_an_unknown_benchmark(loaded: Settings) -> None:
    response = APIClient().get("/api/benchmarks/nope/leaderboard/")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_serves_the_bytes_the_documented_serializer_would_render(
    three_models: dict[str, Submission]
) -> None:
    original = LabelSet.objects.get(benchmark__slug="cifar10", slug="original")
    v1 = LabelSetVersion.objects.get(label_set=original, number=1)
    benchmark = Benchmark.objects.get(slug="cifar10")

    for query in ({}, {"sort": "cifar10.1-v6"}, {"version": v1.content_hash[:8]}):
        response = APIClient().get(BOARD, query)

        assert response.status_code == 200
        assert response["Content-Type"] == "application/json"
        board = leaderboard_get(benchmark=benchmark, **query)
        page = LeaderboardPage(board, 1, 100, next=None, previous=None)  # 3 rows: one page
        assert response.content == JSONRenderer().render(LeaderboardOutput(page).data)


def test_it_answers_a_repeated_fetch_from_the_cache_with_one_query(
    three_models: dict[str, Submission], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    first = APIClient().get(BOARD)

    with django_assert_num_queries(1):  # the benchmark row, for its generation
        again = APIClient().get(BOARD)

    assert again.status_code == 200
    assert again.content == first.content


def test_it_shows_a_newly_scored_model_after_a_cached_fetch(loaded: Settings,
                                                            data_dir: Path) -> None:
    first = {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}"))
             for m in MODELS[:2]}
    before = APIClient().get(BOARD).json()
    generation = Benchmark.objects.get(slug="cifar10").leaderboard_generation

    third = scored_in_process(data_dir, MODELS[2], factories.user_create("u-third"))
    after = APIClient().get(BOARD).json()

    # one bump with the scores (the significance refresh the worker runs a little later
    # bumps it again)
    assert Benchmark.objects.get(slug="cifar10").leaderboard_generation == generation + 1
    assert sorted(row["submission_id"] for row in before["rows"]) == sorted(
        s.pk for s in first.values())
    assert sorted(row["submission_id"] for row in after["rows"]) == sorted(
        [third.pk, *(s.pk for s in first.values())])
    row = next(row for row in after["rows"] if row["submission_id"] == third.pk)
    value, correct, total = top1_accuracy(data_dir, MODELS[2], "cifar10-test")
    cell = row["scores"]["original"]
    assert (row["model_name"], row["owner"]) == (MODELS[2], "u-third")
    assert (cell["accuracy"], cell["correct"], cell["total"]) == (value, correct, total)
    assert row["scores"]["cifar10.1-v6"]["accuracy"] == top1_accuracy(
        data_dir, MODELS[2], "cifar10.1-v6")[0]


def test_it_drops_a_submission_turned_private_from_the_cached_board(
    three_models: dict[str, Submission]
) -> None:
    before = APIClient().get(BOARD).json()
    hidden = three_models[MODELS[1]]

    submission_visibility_set(submission=hidden, public=False)
    after = APIClient().get(BOARD).json()

    assert len(before["rows"]) == 3
    assert sorted(row["submission_id"] for row in after["rows"]) == sorted(
        three_models[m].pk for m in (MODELS[0], MODELS[2]))
    assert [row["ranks"]["original"] for row in after["rows"]] == [1, 2]
