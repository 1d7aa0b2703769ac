"""The public leaderboard and home pages, checked cell by cell against a direct computation."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from scipy.stats import binomtest

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.presentation.boards import views as leaderboards
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_visibility_set
from leaderboard.templatetags.leaderboard_extras import percent
from tests.pages import home_cards, leaderboard_table
from tests.scored_models import MODELS, predictions, score_in_process, submit_model

pytestmark = pytest.mark.django_db

# label set -> (example set, file of its labels); CIFAR-10H: plurality of the human votes
DIRECT = {
    "original": ("cifar10-test", "cifar10/original_labels.npy"),
    "cifar10.1-v4": ("cifar10.1-v4", "cifar10/cifar10.1_v4_labels.npy"),
    "cifar10.1-v6": ("cifar10.1-v6", "cifar10/cifar10.1_v6_labels.npy"),
    "cifar10h": ("cifar10-test", "cifar10/cifar10h_probs.npy"),
}
COLUMNS = ["corrected", "original", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"]


def direct_counts(data_dir: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """model -> label set -> (correct, total), straight from the label files."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for model in MODELS:
        out[model] = {}
        for slug, (example_set, labels_file) in DIRECT.items():
            preds = predictions(data_dir, model, example_set)
            labels = np.load(data_dir / labels_file)
            if slug == "cifar10h":  # any class tied for the most human votes counts
                hits = labels[np.arange(preds.size), preds] == labels.max(axis=1)
            else:
                hits = preds == labels
            out[model][slug] = (int(hits.sum()), int(hits.size))
    return out


def competition_rank(values: dict[str, float], model: str) -> int:
    return 1 + sum(v > values[model] for v in values.values())


def expected_cell(correct: int, total: int) -> tuple[str, str]:
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="exact")
    return (f"{percent(correct / total)}%",
            f"{percent(interval.low)}–{percent(interval.high)}")


def test_it_shows_every_cell_as_computed_directly(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    counts = direct_counts(data_dir)
    # corrected needs the MTurk votes: its counts come from the stored scores, ranked here
    for model, submission in scored_models.items():
        score = Score.objects.get(submission=submission, label_set__slug="corrected")
        counts[model]["corrected"] = (score.correct, score.total)
    accuracy = {slug: {m: counts[m][slug][0] / counts[m][slug][1] for m in MODELS}
                for slug in COLUMNS}

    response = client.get("/benchmarks/cifar10/")

    assert response.status_code == 200
    headers, rows = leaderboard_table(response.content.decode())
    assert sorted(h.slug for h in headers) == sorted(COLUMNS)
    assert [h.slug for h in headers if h.active] == ["original"]
    for header in headers:
        version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                              label_set__slug=header.slug)
        assert header.version == f"v{version.number}" == "v1"
        assert header.version_title == f"version hash {version.content_hash}"
        assert header.href == f"?sort={header.slug}"
    expected_order = sorted(MODELS, key=lambda m: (competition_rank(accuracy["original"], m),
                                                   MODELS.index(m)))
    assert [r.model for r in rows] == expected_order
    for row in rows:
        model = row.model
        assert row.href == f"/submissions/{scored_models[model].pk}/"
        assert row.rank == str(competition_rank(accuracy["original"], model))
        for slug in COLUMNS:
            cell = row.cells[slug]
            assert (cell.acc, cell.ci) == expected_cell(*counts[model][slug])
            rank = competition_rank(accuracy[slug], model)
            assert cell.rank == f"#{rank}"
            shift = competition_rank(accuracy["original"], model) - rank
            if slug == "original":
                assert cell.shift == ""
            else:
                assert cell.shift == ("–" if shift == 0 else
                                      f"▲{shift}" if shift > 0 else f"▼{-shift}")
                assert cell.shift_class == ("shift-same" if shift == 0 else
                                            "shift-up" if shift > 0 else "shift-down")
    # the same, by hand: on CIFAR-10.1 v6 the last model on original moves up two places
    assert {r.model: r.cells["cifar10.1-v6"].shift for r in rows} == {
        "vgg16_keras": "▼1", "resnet_basic_110": "▼1", "resnet_preact_basic_110": "▲2"}


def test_it_sorts_by_the_chosen_label_set(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    counts = direct_counts(data_dir)
    v6 = {m: counts[m]["cifar10.1-v6"][0] / counts[m]["cifar10.1-v6"][1] for m in MODELS}
    original = {m: counts[m]["original"][0] / counts[m]["original"][1] for m in MODELS}

    default = leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1]
    response = client.get("/benchmarks/cifar10/?sort=cifar10.1-v6")

    assert response.status_code == 200
    headers, rows = leaderboard_table(response.content.decode())
    assert [h.slug for h in headers if h.active] == ["cifar10.1-v6"]
    by_v6 = sorted(MODELS, key=lambda m: (competition_rank(v6, m), MODELS.index(m)))
    by_original = sorted(MODELS, key=lambda m: (competition_rank(original, m), MODELS.index(m)))
    assert [r.model for r in rows] == by_v6
    assert [r.model for r in default] == by_original
    assert by_v6 != by_original  # the third on original leads on v6
    assert [r.rank for r in rows] == [str(competition_rank(v6, m)) for m in by_v6]


def test_it_keeps_the_version_in_sort_links_and_refuses_unknown_ones(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                          label_set__slug="corrected")
    prefix = version.content_hash[:8]

    pinned = client.get(f"/benchmarks/cifar10/?version={prefix}&sort=corrected")
    unknown_sort = client.get("/benchmarks/cifar10/?sort=nope")
    unknown_version = client.get("/benchmarks/cifar10/?version=000000")

    headers, rows = leaderboard_table(pinned.content.decode())
    assert pinned.status_code == 200 and len(rows) == 3
    assert {h.slug: h.href for h in headers}["original"] == f"?sort=original&version={prefix}"
    assert unknown_sort.status_code == 400
    assert "cannot sort by &#x27;nope&#x27;; cifar10 has " in unknown_sort.content.decode()
    assert unknown_version.status_code == 400
    assert "no single label-set version of cifar10 has hash" in unknown_version.content.decode()


def test_it_renders_the_leaderboard_and_home_for_anonymous_visitors(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    private = scored_models["resnet_preact_basic_110"]
    Submission.objects.filter(pk=private.pk).update(public=False)
    from leaderboard.catalog.services import benchmark_leaderboard_touch
    benchmark_leaderboard_touch(benchmark_id=private.benchmark_id)

    home = client.get("/")
    board = client.get("/benchmarks/cifar10/")
    empty = client.get("/benchmarks/mnist/")
    missing = client.get("/benchmarks/nope/")

    assert home.status_code == 200
    page = home.content.decode()
    assert 'href="/benchmarks/cifar10/"' in page and 'href="/benchmarks/mnist/"' in page
    cards = home_cards(page)
    assert cards["cifar10"].facts["Submissions"] == "2"
    assert cards["mnist"].facts["Submissions"] == "0"
    assert 'href="/accounts/login/"' in page and 'href="/accounts/signup/"' in page
    assert 'href="/api/docs/"' in page
    assert board.status_code == 200
    assert [r.model for r in leaderboard_table(board.content.decode())[1]] == sorted(
        ["resnet_basic_110", "vgg16_keras"],
        key=lambda m: -Score.objects.get(submission__model_name=m,
                                         label_set__slug="original").correct)
    assert empty.status_code == 200
    assert "No public scored submission yet" in empty.content.decode()
    assert missing.status_code == 404
    assert "Not found" in missing.content.decode()


def page_ranges(html: str) -> list[str]:
    return re.findall(r'<p class="page-range">([^<]*)</p>', html)


def page_links(html: str, rel: str) -> list[str]:
    return re.findall(rf'<a href="([^"]*)" rel="{rel}">', html)


def test_it_shows_a_newly_scored_model_after_a_cached_render(
    client: Client, loaded: Settings, data_dir: Path
) -> None:
    for model in MODELS[:2]:
        assert score_in_process(submit_model(data_dir, model)) == "scored"
    before = leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1]

    third = submit_model(data_dir, MODELS[2])
    assert score_in_process(third) == "scored"
    response = client.get("/benchmarks/cifar10/")

    assert sorted(r.model for r in before) == sorted(MODELS[:2])
    rows = leaderboard_table(response.content.decode())[1]
    assert sorted(r.model for r in rows) == sorted(MODELS)
    row = next(r for r in rows if r.submission_id == third.pk)
    correct, total = direct_counts(data_dir)[MODELS[2]]["original"]
    assert (row.cells["original"].acc, row.cells["original"].ci) == expected_cell(correct, total)
    assert page_ranges(response.content.decode()) == ["Rows 1–3 of 3"] * 2


def test_it_drops_a_model_turned_private_from_the_cached_page(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    before = leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1]

    submission_visibility_set(submission=scored_models["vgg16_keras"], public=False)
    after = leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1]

    assert [r.model for r in before] == ["vgg16_keras", "resnet_basic_110",
                                         "resnet_preact_basic_110"]
    assert [(r.model, r.rank) for r in after] == [("resnet_basic_110", "1"),
                                                  ("resnet_preact_basic_110", "2")]


def test_it_pages_the_rows_with_ranks_over_the_whole_board(
    client: Client, scored_models: dict[str, Submission], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leaderboards, "PAGE_SIZE", 2)

    first = client.get("/benchmarks/cifar10/")
    second = client.get("/benchmarks/cifar10/?page=2")
    by_v6 = client.get("/benchmarks/cifar10/?sort=cifar10.1-v6&page=2")

    assert first.status_code == second.status_code == by_v6.status_code == 200
    assert [(r.model, r.rank) for r in leaderboard_table(first.content.decode())[1]] == [
        ("vgg16_keras", "1"), ("resnet_basic_110", "2")]
    assert [(r.model, r.rank) for r in leaderboard_table(second.content.decode())[1]] == [
        ("resnet_preact_basic_110", "3")]
    # on v6 the last on original leads: page 2 holds the third on v6
    v6_rows = leaderboard_table(by_v6.content.decode())[1]
    assert [(r.model, r.rank, r.cells["cifar10.1-v6"].rank) for r in v6_rows] == [
        ("resnet_basic_110", "3", "#3")]
    assert page_ranges(first.content.decode()) == ["Rows 1–2 of 3"] * 2
    assert page_ranges(second.content.decode()) == ["Rows 3–3 of 3"] * 2
    assert page_links(first.content.decode(), "next") == ["?sort=original&amp;page=2"] * 2
    assert page_links(first.content.decode(), "prev") == []
    assert page_links(second.content.decode(), "prev") == ["?sort=original&amp;page=1"] * 2
    assert page_links(second.content.decode(), "next") == []
    assert page_links(by_v6.content.decode(), "prev") == ["?sort=cifar10.1-v6&amp;page=1"] * 2


def test_it_keeps_sort_and_version_in_page_links(
    client: Client, scored_models: dict[str, Submission], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leaderboards, "PAGE_SIZE", 1)
    prefix = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                         label_set__slug="corrected").content_hash[:8]

    response = client.get(f"/benchmarks/cifar10/?sort=corrected&version={prefix}&page=2")

    page = response.content.decode()
    assert response.status_code == 200
    assert page_ranges(page) == ["Rows 2–2 of 3"] * 2
    assert page_links(page, "prev") == [f"?sort=corrected&amp;version={prefix}&amp;page=1"] * 2
    assert page_links(page, "next") == [f"?sort=corrected&amp;version={prefix}&amp;page=3"] * 2
    assert re.findall(r'<a href="([^"]*)" class="page-link" aria-current="page">2</a>', page) \
        == [f"?sort=corrected&amp;version={prefix}&amp;page=2"] * 2


def test_it_answers_404_for_a_page_that_does_not_exist(
    client: Client, scored_models: dict[str, Submission], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leaderboards, "PAGE_SIZE", 2)

    statuses = {page: client.get(f"/benchmarks/cifar10/?page={page}").status_code
                for page in ("1", "2", "3", "0", "-1", "x", "1.5", "", "%201")}
    empty = {page: client.get(f"/benchmarks/mnist/?page={page}").status_code
             for page in ("1", "2")}

    assert statuses == {"1": 200, "2": 200, "3": 404, "0": 404, "-1": 404, "x": 404,
                        "1.5": 404, "": 200, "%201": 404}
    assert empty == {"1": 200, "2": 404}


def test_it_renders_the_cached_table_inside_each_visitors_page(
    client: Client, scored_models: dict[str, Submission], django_user_model: type
) -> None:
    anonymous = client.get("/benchmarks/cifar10/").content.decode()
    client.force_login(django_user_model.objects.create_user(
        "viewer", password="pw-12345678", email="viewer@example.org"))
    signed_in = client.get("/benchmarks/cifar10/").content.decode()

    def table(page: str) -> str:
        return page[page.index('<p class="lead">'):page.index("</section>")]

    assert 'href="/accounts/login/' in anonymous and "viewer" not in anonymous
    assert '<a href="/profile/" class="username">viewer</a>' in signed_in
    assert table(signed_in) == table(anonymous)
