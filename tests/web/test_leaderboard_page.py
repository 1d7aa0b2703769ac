"""The public leaderboard and home pages, checked cell by cell against a direct computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from scipy.stats import binomtest

from leaderboard.models import LabelSetVersion, Score, Submission
from leaderboard.templatetags.leaderboard_extras import percent
from tests.web.conftest import MODELS, predictions
from tests.web.pages import leaderboard_table

pytestmark = pytest.mark.django_db

# label set -> (image set, file of its labels); CIFAR-10H: plurality of the human votes
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
        for slug, (image_set, labels_file) in DIRECT.items():
            preds = predictions(data_dir, model, image_set)
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
    from leaderboard.services import benchmark_leaderboard_touch
    benchmark_leaderboard_touch(benchmark_id=private.benchmark_id)

    home = client.get("/")
    board = client.get("/benchmarks/cifar10/")
    empty = client.get("/benchmarks/mnist/")
    missing = client.get("/benchmarks/nope/")

    assert home.status_code == 200
    page = home.content.decode()
    assert 'href="/benchmarks/cifar10/"' in page and 'href="/benchmarks/mnist/"' in page
    assert '<span class="entry-count">2 public models</span>' in page
    assert '<span class="entry-count">0 public models</span>' in page
    assert 'href="/login/"' in page and 'href="/signup/"' in page
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
