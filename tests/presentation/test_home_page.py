"""The home page a researcher lands on: per benchmark its modality, test sets, public
submissions, participants, the best model on the board's reference label set, the largest rank
shift and the last submission, searched by name and filtered by modality as GET parameters,
in a bounded number of queries; the header names no benchmark. The benchmarks and models are
tests/presentation/home_toys.py's, whose figures are counted there by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from tests import factories
from tests.demo_truth import page_text
from tests.pages import home_cards
from tests.presentation.home_toys import M1, M2, M3, day, reviews_add, scored, toy_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def toys(catalog_settings: Settings, tmp_path: Path) -> Path:
    """Where toy bundles are written; submissions without a daily quota."""
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return tmp_path


@pytest.fixture
def reviews(toys: Path) -> dict[str, Submission]:
    return reviews_add(toys)


def test_it_summarises_each_benchmarks_board(client: Client,
                                             reviews: dict[str, Submission]) -> None:
    page = client.get("/").content.decode()

    cards = home_cards(page)
    assert list(cards) == ["toy-pictures", "toy-reviews"]  # by name; the hidden one not at all
    text = cards["toy-reviews"]
    assert (text.name, text.kind, text.test_sets, text.modality) == (
        "Toy reviews", "Text · 3 classes · toy-reviews", "Test set: toy-reviews-test (6)",
        "text")
    assert text.facts == {
        "Submissions": "3", "Participants": "2", "Last submission": "2024-03-07",
        "Best on Given labels": "m1 · 100.00%",
        "Largest rank shift": "m3 ▲2: #3 on Given labels, #1 on Fixed labels"}
    m1, m3 = reviews["m1"].pk, reviews["m3"].pk
    assert text.links == {
        "Toy reviews": "/benchmarks/toy-reviews/", "m1": f"/submissions/{m1}/",
        "m3": f"/submissions/{m3}/",
        "Leaderboard of Toy reviews": "/benchmarks/toy-reviews/",
        "About the label sets of Toy reviews": "/benchmarks/toy-reviews/about/",
        "Submit to Toy reviews": "/submit/?benchmark=toy-reviews"}
    image = cards["toy-pictures"]
    assert (image.kind, image.facts) == ("Image · 3 classes · toy-pictures", {
        "Submissions": "0", "Participants": "0", "Last submission": "none yet"})
    assert '<time datetime="2024-03-07T12:00:00+00:00">2024-03-07</time>' in page
    # the label sets' hashes are on the about page, not here
    assert "Content hash" not in page


def test_it_calls_ties_for_the_best_and_prefers_a_move_up_among_equal_shifts(
    client: Client, toys: Path,
) -> None:
    benchmark = toy_add(toys, slug="toy-ties", name="Toy ties", modality="text")
    # both 6/6 on `given` and 4/5 on `fixed`; m2 below them on both: no rank moves
    for name, predicted in (("a", M1), ("b", M1), ("c", M2)):
        scored(benchmark, factories.user_create(name), name, predicted, created=day(2))

    facts = home_cards(client.get("/").content.decode())["toy-ties"].facts

    assert facts["Best on Given labels"] == "a · 100.00% (tied with 1 more)"
    assert "Largest rank shift" not in facts
    assert facts["Participants"] == "3"


def test_it_filters_by_name_and_modality_without_a_script(
    client: Client, reviews: dict[str, Submission],
) -> None:
    def shown(**query: str) -> tuple[list[str], str]:
        page = client.get("/", query).content.decode()
        count = re.search(r'<span id="benchmark-count"[^>]*>([^<]*)</span>', page)
        assert count is not None
        return [slug for slug, card in home_cards(page).items() if card.shown], count[1]

    assert shown() == (["toy-pictures", "toy-reviews"], "2 of 2 benchmarks")
    assert shown(q="REVIEW") == (["toy-reviews"], "1 of 2 benchmarks")
    assert shown(q=" toy-pic ") == (["toy-pictures"], "1 of 2 benchmarks")
    assert shown(modality="text") == (["toy-reviews"], "1 of 2 benchmarks")
    assert shown(modality="image", q="reviews") == ([], "0 of 2 benchmarks")
    assert shown(modality="audio") == ([], "0 of 2 benchmarks")
    page = client.get("/", {"modality": "text", "q": "toy"}).content.decode()
    assert '<option value="text" selected>Text (1)</option>' in page
    assert '<option value="image">Image (1)</option>' in page
    assert 'name="q" value="toy"' in page
    assert '<p id="benchmark-none" class="card" hidden>' not in client.get(
        "/", {"q": "nothing"}).content.decode()
    assert '<p id="benchmark-none" class="card" hidden>' in page


def test_it_says_test_sets_and_no_image_wording_on_a_text_benchmark(
    client: Client, reviews: dict[str, Submission],
) -> None:
    Benchmark.objects.filter(slug="toy-pictures").update(hidden=True)  # text benchmarks only

    text = page_text(client.get("/").content.decode())

    assert "Test set: toy-reviews-test (6)" in text
    assert "image" not in text.lower()
    assert ("Open-source evaluation server for classification benchmarks with living label "
            "sets.") in text


def test_its_header_links_the_benchmarks_page_instead_of_naming_each(
    client: Client, reviews: dict[str, Submission],
) -> None:
    home = client.get("/").content.decode()
    board = client.get("/benchmarks/toy-reviews/").content.decode()

    for page in (home, board):
        nav = page.split('<ul class="nav-links">', 1)[1].split("</ul>", 1)[0]
        assert "Toy reviews" not in nav and "Toy pictures" not in nav
    assert '<li><a href="/" aria-current="page">Benchmarks</a></li>' in home
    assert '<li><a href="/">Benchmarks</a></li>' in board


def _queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def test_it_reads_a_bounded_number_of_queries_whatever_the_submissions(
    client: Client, toys: Path,
) -> None:
    from django.core.cache import cache

    first = toy_add(toys, slug="toy-one", name="Toy one", modality="text")
    users = [factories.user_create(f"user{i}") for i in range(6)]
    scored(first, users[0], "m1", M1, created=day(1))
    cold_one = _queries(client)
    warm_one = _queries(client)

    for i, predicted in enumerate((M2, M3, M1, M2), start=1):  # more rows, more owners
        scored(first, users[i], f"more{i}", predicted, created=day(2))
    cache.clear()
    cold_five = _queries(client)
    warm_five = _queries(client)

    second = toy_add(toys, slug="toy-two", name="Toy two", modality="image")
    scored(second, users[5], "m3", M3, created=day(3))
    cache.clear()
    cold_two_benchmarks = _queries(client)
    warm_two_benchmarks = _queries(client)

    # warm: the benchmarks and their example sets, whatever there is
    assert warm_one == warm_five == warm_two_benchmarks == 2
    # cold: the same with 1 or 5 submissions; one benchmark's board more for the second
    assert cold_one == cold_five
    assert cold_two_benchmarks == cold_one + (cold_one - warm_one)
    # a new score moves the generation: the next page reads that benchmark's board afresh
    scored(second, users[5], "again", M1, created=day(4))
    assert home_cards(client.get("/").content.decode())["toy-two"].facts[
        "Submissions"] == "2"


def test_it_says_how_to_load_when_empty(client: Client) -> None:
    response = client.get("/")

    assert response.status_code == 200
    assert "load_benchmarks" in response.content.decode()
    assert 'class="benchmark-search"' not in response.content.decode()
