"""A board's reference column is its benchmark's label set of the reference family, whatever
its slug (docs/architecture.md, "A benchmark is data"): a hosted bundle that calls its given
labels `given` gets its board sorted by them by default, and its rank shifts measured from
them. The figures are counted here by hand from the toy bundle's labels and votes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from tests.pages import leaderboard_table
from tests.presentation.given_bundle import given_benchmark_add

pytestmark = pytest.mark.django_db

# tests/presentation/given_bundle.py: "first" gets 6/6 on `given` and 4/5 on `fixed`,
# "second" 4/6 and 5/5.
RANKS = {"first": {"given": 1, "fixed": 2}, "second": {"given": 2, "fixed": 1}}
# rank on the reference (given) minus rank on each label set: positive = moved up
SHIFTS = {"first": {"given": 0, "fixed": -1}, "second": {"given": 0, "fixed": 1}}


@pytest.fixture
def given_board(catalog_settings: Settings, tmp_path: Path) -> Benchmark:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return given_benchmark_add(tmp_path / "bundle")[0]


def test_it_sorts_and_shifts_a_board_by_its_reference_label_set_of_any_slug(
    given_board: Benchmark,
) -> None:
    body = Client().get("/api/benchmarks/toy/leaderboard/").json()

    assert body.get("sort") == "given", body
    assert [(c["slug"], c["shift_from"]) for c in body["columns"]] == [
        ("given", "given"), ("fixed", "given")]
    assert [row["model_name"] for row in body["rows"]] == ["first", "second"]
    assert {row["model_name"]: (row["scores"]["given"]["correct"],
                                row["scores"]["fixed"]["correct"])
            for row in body["rows"]} == {"first": (6, 4), "second": (4, 5)}
    assert {row["model_name"]: row["ranks"] for row in body["rows"]} == RANKS
    assert {row["model_name"]: row["rank_shift"] for row in body["rows"]} == SHIFTS
    assert [row["model_name"] for row in Client().get(
        "/api/benchmarks/toy/leaderboard/", {"sort": "fixed"}).json()["rows"]] == [
        "second", "first"]


def test_it_shows_the_board_page_sorted_by_the_reference_without_its_own_shift(
    given_board: Benchmark,
) -> None:
    response = Client().get("/benchmarks/toy/")

    assert response.status_code == 200
    headers, rows = leaderboard_table(response.content.decode())
    assert [h.slug for h in headers if h.active] == ["given"]
    assert [r.model for r in rows] == ["first", "second"]
    assert {r.model: (r.cells["given"].shift, r.cells["fixed"].shift) for r in rows} == {
        "first": ("", "▼1"), "second": ("", "▲1")}


def test_it_names_the_reference_label_set_in_the_csv_download(given_board: Benchmark) -> None:
    response = Client().get("/benchmarks/toy/leaderboard.csv")

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="toy-leaderboard-given.csv"'
