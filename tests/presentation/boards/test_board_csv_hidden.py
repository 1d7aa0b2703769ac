"""A hidden label set on the CSV and the JSON pages (docs/metrics.md §17): its released
figures only, and its private part's column only once staff reveal it. The toy benchmark
and the figures worked out by hand are those of tests/catalog/test_hidden_phases.py."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark
from leaderboard.presentation.boards.views import RELEASED_FIGURES
from tests import factories
from tests.catalog import test_hidden_phases as phases
from workers.scoring.release import MECHANISMS

pytestmark = pytest.mark.django_db
toy_split = phases.toy_split
CSV = "/benchmarks/toy/leaderboard.csv?sort=secret"
PARTS = ("accuracy", "ci_low", "ci_high", "rank", "rank_shift")


def _csv(url: str = CSV) -> list[list[str]]:
    response = Client().get(url)
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(
        b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]


def test_it_shows_a_hidden_label_sets_private_part_only_after_its_reveal(
    toy_split: Benchmark
) -> None:
    a, b = phases._scored(toy_split, "a", phases.A), phases._scored(toy_split, "b", phases.B)
    columns = [c["slug"] for c in Client().get(
        "/api/benchmarks/toy/leaderboard/?sort=secret").json()["columns"]]
    assert columns[-1] == "secret"

    before = _csv()
    assert before[0] == ["submission_id", "model_name", "owner", "created",
                         *(f"{slug} {part}" for slug in columns for part in PARTS)]
    assert not any("private" in cell for cell in before[0])
    secret = before[0].index("secret accuracy")
    # the released figures over the public part: a 3/3, b 2/3
    assert [(row[0], float(row[secret]), row[secret + 3]) for row in before[1:]] == [
        (str(a.pk), 1.0, "1"), (str(b.pk), 2 / 3, "2")]
    paged = Client().get("/api/benchmarks/toy/leaderboard/?sort=secret&page=2&page_size=1")
    assert [c["slug"] for c in paged.json()["columns"]] == columns
    assert [r["submission_id"] for r in paged.json()["rows"]] == [b.pk]

    staff = APIClient()
    staff.force_authenticate(factories.host_create("host"))
    assert staff.post(phases.REVEAL).status_code == 200
    after = _csv(CSV + "-private")

    assert after[0] == before[0] + [f"secret-private {part}" for part in PARTS]
    private = after[0].index("secret-private accuracy")
    # b climbs from 2nd on the public part to 1st on the private part: the shake-up
    assert [(row[0], float(row[private]), row[private + 3], row[private + 4])
            for row in after[1:]] == [(str(b.pk), 1.0, "1", "1"), (str(a.pk), 0.0, "2", "-1")]


def test_it_says_on_the_board_that_a_hidden_columns_cells_are_released_figures(
    toy_split: Benchmark
) -> None:
    """The board's introduction names the hidden label set and its mechanism (here `exact`),
    and only its column header is marked released (issue 36, item 5)."""
    phases._scored(toy_split, "a", phases.A)
    page = Client().get("/benchmarks/toy/?sort=secret").content.decode()

    intro = re.search(r'<p class="lead hidden-intro" id="hidden-intro">(.*?)</p>', page, re.S)
    assert intro is not None
    assert html.unescape(re.sub(r"<[^>]+>", "", intro.group(1))) == (
        "secret: hidden label set, whose labels stay on the server until the phase ends. Its "
        "cells, marked released, are released figures, not scores: each submission's accuracy "
        "as scored, one row per submission. Nothing per example is shown of it (no rank (UB), "
        "plots or gallery). Your own submissions' pages say what each released and why.")
    headers = re.findall(r'<th scope="col" class="col-score[^"]*" data-label-set="([^"]+)"'
                         r'(.*?)</th>', page, re.S)
    assert [slug for slug, body in headers if 'class="released"' in body] == ["secret"]
    assert len(headers) > 1


def test_it_has_words_for_every_release_mechanism() -> None:
    """A hidden column of any mechanism a bundle may name renders (no KeyError, no 500)."""
    assert set(RELEASED_FIGURES) == set(MECHANISMS)
