"""The JSON board's pages, the boards' ETags and 304s, and the streamed CSV of a whole board
(docs/api.md §5.2, §5.3), on real models scored in process."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.cache import cache
from django.http import StreamingHttpResponse
from django.test import Client
from pytest_django.fixtures import DjangoAssertNumQueries, Settings
from rest_framework.test import APIClient
from scipy.stats import binomtest

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions.models import Score, Submission
from tests import factories
from tests.api_support import scored_in_process, top1_accuracy

pytestmark = pytest.mark.django_db

MODELS = ("resnet_basic_110", "wrn_28_10", "vgg16_keras")
BOARD = "/api/benchmarks/cifar10/leaderboard/"
PAGE = "/benchmarks/cifar10/"
CSV = "/benchmarks/cifar10/leaderboard.csv"


@pytest.fixture
def three_models(loaded: Settings, data_dir: Path) -> dict[str, Submission]:
    return {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}")) for m in MODELS}


def _touch() -> None:
    benchmark_leaderboard_touch(benchmark_id=Benchmark.objects.get(slug="cifar10").pk)


def test_it_pages_the_board_into_exactly_the_whole_boards_rows(
    three_models: dict[str, Submission]
) -> None:
    client = APIClient()
    whole = client.get(BOARD, {"sort": "cifar10.1-v6"}).json()
    first = client.get(BOARD, {"sort": "cifar10.1-v6", "page_size": 2}).json()
    second = client.get(first["next"]).json()

    assert (whole["count"], whole["page"], whole["page_size"]) == (3, 1, 100)
    assert (whole["next"], whole["previous"]) == (None, None)
    assert len(whole["rows"]) == 3
    assert first["rows"] == whole["rows"][:2] and second["rows"] == whole["rows"][2:]
    assert first["next"] == ("http://testserver/api/benchmarks/cifar10/leaderboard/"
                             "?sort=cifar10.1-v6&page=2&page_size=2")
    assert first["previous"] is None
    assert second["previous"] == ("http://testserver/api/benchmarks/cifar10/leaderboard/"
                                  "?sort=cifar10.1-v6&page=1&page_size=2")
    assert (second["count"], second["page"], second["next"]) == (3, 2, None)
    assert first["columns"] == second["columns"] == whole["columns"]
    # ranks are over the whole board
    assert [r["ranks"]["cifar10.1-v6"] for r in first["rows"] + second["rows"]] == [
        r["ranks"]["cifar10.1-v6"] for r in whole["rows"]]
    # an empty page or page_size is none
    assert client.get(BOARD, {"sort": "cifar10.1-v6", "page": "", "page_size": ""}).content \
        == client.get(BOARD, {"sort": "cifar10.1-v6"}).content


@pytest.mark.parametrize(("query", "status", "code", "field"), [
    ({"page": 3, "page_size": 1000}, 404, "not_found", None),
    ({"page": 3, "page_size": 1}, 200, None, None),
    ({"page": 4, "page_size": 1}, 404, "not_found", None),
    ({"page": 0}, 400, "min_value", "page"),
    ({"page": "last"}, 400, "invalid_input", "page"),
    # an integer as the schema says: not "2.0" nor another script's digits (QueryIntegerField)
    ({"page": "2.0"}, 400, "invalid_input", "page"),
    ({"page_size": "\u0663"}, 400, "invalid_input", "page_size"),
    ({"page_size": 0}, 400, "min_value", "page_size"),
    ({"page_size": 1001}, 400, "max_value", "page_size"),
])
def test_it_refuses_a_page_out_of_range_in_the_error_shape(
    three_models: dict[str, Submission], query: dict[str, object], status: int,
    code: str | None, field: str | None
) -> None:
    response = APIClient().get(BOARD, query)

    assert response.status_code == status
    if code is not None:
        error = response.json()["error"]
        assert (error["code"], error.get("field")) == (code, field)


def test_it_tags_the_board_with_its_generation_and_answers_304_to_a_revalidation(
    three_models: dict[str, Submission], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    client = APIClient()
    first = client.get(BOARD)
    again = client.get(BOARD, {"page_size": 2})
    etag = first["ETag"]

    assert first["Cache-Control"] == "public, no-cache"
    assert again["ETag"] == etag and etag.startswith('"') and etag.endswith('"')
    cache.clear()  # a revalidation reads no board: the benchmark row's generation only
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        with django_assert_num_queries(1):
            response = client.get(BOARD, HTTP_IF_NONE_MATCH=header)
        assert (response.status_code, response.content) == (304, b"")
        assert (response["ETag"], response["Cache-Control"]) == (etag, "public, no-cache")
    assert client.get(BOARD, HTTP_IF_NONE_MATCH='"other"').status_code == 200

    _touch()
    changed = client.get(BOARD, HTTP_IF_NONE_MATCH=etag)

    assert changed.status_code == 200
    assert changed["ETag"] not in (etag, None)
    assert changed.json()["rows"] == first.json()["rows"]


def test_it_revalidates_the_html_board_of_an_anonymous_visitor_only(
    three_models: dict[str, Submission]
) -> None:
    anonymous = Client()
    page = anonymous.get(PAGE, {"page": 1})
    etag = page["ETag"]

    assert page.status_code == 200 and page["Cache-Control"] == "private, no-cache"
    revalidated = anonymous.get(PAGE, {"page": 1}, HTTP_IF_NONE_MATCH=f"W/{etag}")
    assert (revalidated.status_code, revalidated.content, revalidated["ETag"]) == (
        304, b"", etag)
    _touch()
    assert anonymous.get(PAGE, HTTP_IF_NONE_MATCH=etag).status_code == 200

    signed_in = Client()
    signed_in.force_login(factories.user_create("visitor"))
    own = signed_in.get(PAGE, HTTP_IF_NONE_MATCH="*")
    assert own.status_code == 200
    assert "ETag" not in own and own["Cache-Control"] == "private, no-cache"
    # the page links to the CSV of the board it shows
    assert 'href="/benchmarks/cifar10/leaderboard.csv?sort=cifar10.1-v6"' in (
        anonymous.get(PAGE, {"sort": "cifar10.1-v6"}).content.decode())


def _expected_csv(models: dict[str, Submission], data_dir: Path) -> list[list[str]]:
    """The CSV computed from the stored scores, ranked here, sorted on cifar10.1-v6."""
    versions = list(LabelSetVersion.objects.filter(label_set__benchmark__slug="cifar10")
                    .select_related("label_set").order_by("label_set_id"))
    slugs = [v.label_set.slug for v in versions]
    scores = {(s.submission_id, s.label_set_version.label_set.slug): s
              for s in Score.objects.select_related("label_set_version__label_set")}
    # two columns straight from the label files
    for model, submission in models.items():
        for slug, example_set in (("original", "cifar10-test"), ("cifar10.1-v6", "cifar10.1-v6")):
            accuracy, correct, total = top1_accuracy(data_dir, model, example_set)
            low_high = binomtest(correct, total).proportion_ci(0.95, method="exact")
            score = scores[(submission.pk, slug)]
            assert (score.accuracy, score.ci_low, score.ci_high) == pytest.approx(
                (accuracy, low_high.low, low_high.high), abs=1e-12)

    def rank(sub: Submission, slug: str) -> int | None:
        if (sub.pk, slug) not in scores:
            return None
        mine = scores[(sub.pk, slug)].accuracy
        return 1 + sum(scores[(o.pk, slug)].accuracy > mine for o in models.values()
                       if (o.pk, slug) in scores)

    order = sorted(models.values(), key=lambda s: (rank(s, "cifar10.1-v6"), s.pk))
    rows = [["submission_id", "model_name", "owner", "created",
             *(f"{slug} {part}" for slug in slugs
               for part in ("accuracy", "ci_low", "ci_high", "rank", "rank_shift"))]]
    for sub in order:
        row = [str(sub.pk), "'" + sub.model_name if sub.model_name.startswith("=")
               else sub.model_name, sub.owner.username, sub.created.isoformat()]
        for slug in slugs:
            score = scores.get((sub.pk, slug))
            if score is None:
                row += [""] * 5
                continue
            r, r0 = rank(sub, slug), rank(sub, "original")
            row += [repr(score.accuracy), repr(score.ci_low), repr(score.ci_high), str(r),
                    "" if r is None or r0 is None else str(r0 - r)]
        rows.append(row)
    return rows


def test_it_streams_the_whole_board_as_csv_with_formula_safe_cells(
    three_models: dict[str, Submission], data_dir: Path
) -> None:
    Submission.objects.filter(pk=three_models["wrn_28_10"].pk).update(
        model_name='=HYPERLINK("http://evil.example/")')
    _touch()
    for submission in three_models.values():
        submission.refresh_from_db()

    response = Client().get(CSV, {"sort": "cifar10.1-v6"})

    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        'attachment; filename="cifar10-leaderboard-cifar10.1-v6.csv"')
    text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert list(csv.reader(io.StringIO(text))) == _expected_csv(three_models, data_dir)
    assert "'=HYPERLINK(\"\"http://evil.example/\"\")" in text
    # revalidated like the other boards; an unknown sort refused
    etag = response["ETag"]
    assert Client().get(CSV, {"sort": "cifar10.1-v6"}, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert Client().get(CSV, {"sort": "nope"}).status_code == 400
    assert Client().get("/benchmarks/nope/leaderboard.csv").status_code == 404
