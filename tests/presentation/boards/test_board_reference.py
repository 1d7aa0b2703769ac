"""A board's reference column is its benchmark's label set of the reference family, whatever
its slug (docs/architecture.md, "A benchmark is data"): a hosted bundle that calls its given
labels `given` gets its board sorted by them by default, and its rank shifts measured from
them. The figures are counted here by hand from the toy bundle's labels and votes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.pages import leaderboard_table
from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle

pytestmark = pytest.mark.django_db

# The toy bundle's labels are [0, 1, 2, 0, 1, 2]; its votes (threshold 3) correct example 1
# to class 2 and leave example 3 out (multi-label): the corrected labels cover 0, 1, 2, 4, 5.
# "first" predicts the given labels: 6/6 given, 4/5 corrected (misses example 1).
# "second" misses examples 1 and 3 on the given labels (4/6) and none of the corrected (5/5).
PREDICTIONS = {"first": [0, 1, 2, 0, 1, 2], "second": [0, 2, 2, 1, 1, 2]}
RANKS = {"first": {"given": 1, "corrected": 2}, "second": {"given": 2, "corrected": 1}}
# rank on the reference (given) minus rank on each label set: positive = moved up
SHIFTS = {"first": {"given": 0, "corrected": -1}, "second": {"given": 0, "corrected": 1}}


@pytest.fixture
def given_board(catalog_settings: Settings, tmp_path: Path) -> Benchmark:
    document = manifest()
    del document["reviewable"]
    document["headline"] = "given"
    document["example_sets"] = document["example_sets"][:1]
    original, corrected = document["label_sets"][:2]
    document["label_sets"] = [{**original, "slug": "given", "name": "Given labels"},
                              {**corrected, "thresholds": [3], "original": "given"}]
    call_command("benchmark_add", str(write_bundle(tmp_path / "bundle", document)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark = Benchmark.objects.get(slug="toy")
    for name, predicted in PREDICTIONS.items():
        submission = submission_create(owner=factories.user_create(name), benchmark=benchmark,
                                       model_name=name, public=True,
                                       files={"toy-test": factories.upload_json(predicted)})
        assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == "scored"
    return benchmark


def test_it_sorts_and_shifts_a_board_by_its_reference_label_set_of_any_slug(
    given_board: Benchmark,
) -> None:
    body = Client().get("/api/benchmarks/toy/leaderboard/").json()

    assert body.get("sort") == "given", body
    assert [(c["slug"], c["shift_from"]) for c in body["columns"]] == [
        ("given", "given"), ("corrected", "given")]
    assert [row["model_name"] for row in body["rows"]] == ["first", "second"]
    assert {row["model_name"]: (row["scores"]["given"]["correct"],
                                row["scores"]["corrected"]["correct"])
            for row in body["rows"]} == {"first": (6, 4), "second": (4, 5)}
    assert {row["model_name"]: row["ranks"] for row in body["rows"]} == RANKS
    assert {row["model_name"]: row["rank_shift"] for row in body["rows"]} == SHIFTS
    assert [row["model_name"] for row in Client().get(
        "/api/benchmarks/toy/leaderboard/", {"sort": "corrected"}).json()["rows"]] == [
        "second", "first"]


def test_it_shows_the_board_page_sorted_by_the_reference_without_its_own_shift(
    given_board: Benchmark,
) -> None:
    response = Client().get("/benchmarks/toy/")

    assert response.status_code == 200
    headers, rows = leaderboard_table(response.content.decode())
    assert [h.slug for h in headers if h.active] == ["given"]
    assert [r.model for r in rows] == ["first", "second"]
    assert {r.model: (r.cells["given"].shift, r.cells["corrected"].shift) for r in rows} == {
        "first": ("", "▼1"), "second": ("", "▲1")}


def test_it_names_the_reference_label_set_in_the_csv_download(given_board: Benchmark) -> None:
    response = Client().get("/benchmarks/toy/leaderboard.csv")

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="toy-leaderboard-given.csv"'
