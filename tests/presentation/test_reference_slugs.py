"""The pages find a benchmark's corrected label set by its family, whatever a bundle slugs it
(docs/families.md): on tests/presentation/given_bundle.py's benchmark, whose corrected labels
are `fixed`, the mistake gallery and the noise-prevalence chart are drawn from `fixed`, as
counted there by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.presentation.charts import selectors as selectors_plots
from leaderboard.submissions.models import Submission
from tests.presentation.gallery.gallery_pages import gallery_cards
from tests.presentation.given_bundle import given_benchmark_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def given(catalog_settings: Settings, tmp_path: Path) -> dict[str, Submission]:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return given_benchmark_add(tmp_path / "bundle")[1]


def test_it_draws_the_gallery_of_the_corrected_label_set_of_any_slug(
    given: dict[str, Submission],
) -> None:
    first, second = given["first"].pk, given["second"].pk

    detail = Client().get(f"/submissions/{first}/").content.decode()
    page = Client().get(f"/submissions/{first}/mistakes/").content.decode()

    assert f'<a href="/submissions/{first}/mistakes/">Mistake gallery</a>' in detail
    assert 'data-section="fixed"' in page
    assert '<a href="?set=fixed&amp;match=original"' in page
    # C = {1}: "first" predicts its given label (1), "second" its corrected one (2)
    assert [(c.index, c.match) for c in gallery_cards(page)] == [(1, "original")]
    assert [(c.index, c.match) for c in gallery_cards(Client().get(
        f"/submissions/{second}/mistakes/", {"set": "fixed"}).content.decode())] == [
        (1, "corrected")]
    assert Client().get(f"/submissions/{first}/mistakes/",
                        {"set": "fixed", "match": "corrected"}).status_code == 200


def test_it_draws_the_noise_prevalence_curves_of_the_corrected_label_set_of_any_slug(
    given: dict[str, Submission],
) -> None:
    benchmark = given["first"].benchmark

    data = selectors_plots.noise_prevalence_plot(benchmark=benchmark)

    # |C| = 1, |B| = 4; "second" ranks first on `fixed`; both get all of B right
    assert (data["label_set"], data["n_c"], data["n_b"]) == ("fixed", 1, 4)
    assert [(s["model_name"], s["inputs"]) for s in data["submissions"]] == [
        ("second", {"n_c": 1, "n_b": 4, "acc_c_original": 0.0, "acc_c_corrected": 1.0,
                    "acc_b": 1.0}),
        ("first", {"n_c": 1, "n_b": 4, "acc_c_original": 1.0, "acc_c_corrected": 0.0,
                   "acc_b": 1.0})]
    assert Client().get("/benchmarks/toy/plots/").status_code == 200
