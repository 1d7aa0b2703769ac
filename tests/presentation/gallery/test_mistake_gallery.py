"""A submission's mistake gallery: every example of the corrected labels' correctable set C
(real MNIST probabilities, computed again here from the compiled label set), its ImageNet-M
misses (a small multi-label file), pages and filters, and who may see it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.presentation.gallery import selectors as selectors_gallery
from leaderboard.submissions.selectors import submission_scores
from tests import factories
from tests.presentation.gallery.gallery_pages import Card, gallery_cards
from workers.scoring import datasets

pytestmark = pytest.mark.django_db


def _latest(benchmark: str, slug: str) -> LabelSetVersion:
    return (LabelSetVersion.objects.filter(label_set__benchmark__slug=benchmark,
                                           label_set__slug=slug).order_by("-number").first())


def _expected_c(benchmark: str, top1: np.ndarray) -> list[tuple[int, str, int, int, int]]:
    """(index, match, original, corrected, predicted) over C, straight from the compiled set."""
    arrays = compiled_for_version(_latest(benchmark, "corrected")).arrays
    out = []
    for i in np.flatnonzero(arrays["correctable"]):
        given, corrected, predicted = (int(arrays["labels"][i]),
                                       int(arrays["corrected_labels"][i]), int(top1[i]))
        match = ("corrected" if predicted == corrected else
                 "original" if predicted == given else "neither")
        out.append((int(i), match, given, corrected, predicted))
    return out


def _every_card(client: Client, url: str, query: dict[str, str]) -> list[Card]:
    """The cards of every page, following the "next" links."""
    cards: list[Card] = []
    for number in range(1, 100):
        page = client.get(url, {**query, "page": number}).content.decode()
        cards += gallery_cards(page)
        if 'rel="next"' not in page:
            return cards
    raise AssertionError("no last page")


@pytest.fixture
def mnist(run_load_benchmarks: Callable[..., tuple[str, str]],
          catalog_settings: Settings) -> Settings:
    run_load_benchmarks("--benchmark", "mnist")
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return catalog_settings


def test_it_lists_every_correctable_example_of_real_mnist_probabilities(
    client: Client, mnist: Settings, data_dir: Path, tmp_path: Path
) -> None:
    probs = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy")
    submission = factories.submission_scored("mnist", "mnist-test", probs, tmp_path, "cleanlab-cv")
    expected = _expected_c("mnist", probs.argmax(axis=1))
    record = submission_scores(submission=submission)["corrected"].record

    response = client.get(f"/submissions/{submission.pk}/mistakes/")  # anonymous: public

    assert response.status_code == 200
    page = response.content.decode()
    cards = gallery_cards(page)
    assert [(c.index, c.match) for c in cards] == [(i, m) for i, m, *_ in expected]
    assert [c.index for c in cards] == [947, 1621, 1901, 2462, 2597, 3558, 5937, 6651, 6783,
                                        9729]
    assert [(c.labels["given"], c.labels["corrected"], c.labels["predicted"]) for c in cards] \
        == [(str(g), str(c), str(p)) for _, _, g, c, p in expected]
    assert [c.file_name for c in cards] == [f"mnist-test[{i}]" for i, *_ in expected]
    assert all(c.image.startswith("data:image/png;base64,") for c in cards)
    counts = {m: sum(1 for _, match, *_ in expected if match == m) for m in
              ("original", "corrected", "neither")}
    assert counts == {"original": 0, "corrected": 10, "neither": 0}
    assert (counts["original"], counts["corrected"], len(expected)) == (
        record["correctable"]["acc1"]["correct"], record["correctable"]["cacc1"]["correct"],
        record["correctable"]["acc1"]["total"])
    assert "ImageNet-M" not in page  # MNIST has no ImageNet-M section
    detail = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'<a href="/submissions/{submission.pk}/mistakes/">Mistake gallery</a>' in detail


def test_it_pages_and_filters_the_correctable_set_by_what_the_prediction_matches(
    client: Client, mnist: Settings, data_dir: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors_gallery, "PAGE_SIZE", 4)
    top1 = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy").argmax(axis=1)
    arrays = compiled_for_version(_latest("mnist", "corrected")).arrays
    members = np.flatnonzero(arrays["correctable"])
    top1[members[:3]] = arrays["labels"][members[:3]]  # the original label on 3
    top1[members[3:5]] = (arrays["labels"][members[3:5]] + 1) % 10  # neither on 2
    top1[members[3:5]] = np.where(top1[members[3:5]] == arrays["corrected_labels"][members[3:5]],
                                  (top1[members[3:5]] + 1) % 10, top1[members[3:5]])
    submission = factories.submission_scored("mnist", "mnist-test", top1[:,
                                             None], tmp_path, "mixed")
    expected = _expected_c("mnist", top1)
    by_match = {m: [i for i, match, *_ in expected if match == m]
                for m in ("original", "corrected", "neither")}
    assert [len(v) for v in by_match.values()] == [3, 5, 2]
    url = f"/submissions/{submission.pk}/mistakes/"

    pages = [gallery_cards(client.get(url, {"page": n}).content.decode()) for n in (1, 2, 3)]
    filtered = {m: _every_card(client, url, {"set": "corrected", "match": m})
                for m in by_match}

    assert [[c.index for c in cards] for cards in pages] == [
        [i for i, *_ in expected[:4]], [i for i, *_ in expected[4:8]],
        [i for i, *_ in expected[8:]]]
    assert {m: [c.index for c in cards] for m, cards in filtered.items()} == by_match
    assert {m: {c.match for c in cards} for m, cards in filtered.items()} == {
        m: {m} for m in by_match}
    first = client.get(url).content.decode()
    assert "Cards 1–4 of 10" in first and 'rel="next"' in first
    assert ('on <strong>3</strong>, <span class="match match-corrected">the corrected label'
            '</span> on <strong>5</strong>') in first
    for bad in ({"page": 4}, {"page": "x"}, {"page": 0}, {"set": "real"},
                {"set": "corrected", "match": "both"}):
        assert client.get(url, bad).status_code == 404, bad


def test_it_shows_the_gallery_only_to_those_who_may_see_the_submission(
    client: Client, mnist: Settings, data_dir: Path, tmp_path: Path
) -> None:
    probs = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy")
    submission = factories.submission_scored("mnist", "mnist-test", probs,
                                             tmp_path, "hidden", public=False)
    url = f"/submissions/{submission.pk}/mistakes/"
    other, staff = factories.user_create("other"), factories.host_create("staff")

    assert client.get(url).status_code == 404
    client.force_login(other)
    assert client.get(url).status_code == 404
    client.force_login(submission.owner)
    assert len(gallery_cards(client.get(url).content.decode())) == 10
    client.force_login(staff)
    assert client.get(url).status_code == 200
    assert client.get("/submissions/999999/mistakes/").status_code == 404


def test_it_lists_the_exact_imagenet_m_misses_with_their_accepted_labels(
    client: Client, run_load_benchmarks: Callable[..., tuple[str, str]],
    catalog_settings: Settings, data_dir: Path, tmp_path: Path,
) -> None:
    info = json.loads((data_dir / "imagenet/class_info.json").read_text())
    wnid = [c["wnid"] for c in info]
    name = [c["synset"][0] for c in info]
    listed = [10, 20, 30, 40]
    multilabel_file = tmp_path / "human_accuracy_v3.0.0.json"
    multilabel_file.write_text(json.dumps({"initial_annots": {
        datasets.imagenet_file_name(10): {"correct": [wnid[1]]},
        datasets.imagenet_file_name(20): {"correct": [wnid[2]], "unclear": [wnid[3]]},
        datasets.imagenet_file_name(30): {"correct": [wnid[4]], "wrong": [wnid[5]]},
        datasets.imagenet_file_name(40): {"correct": [wnid[6], wnid[8]]},
        datasets.imagenet_file_name(50): {"correct": [wnid[9]]},
    }, "problematic_images": {},
        "imagenet_m": [datasets.imagenet_file_name(i) for i in listed]}))
    catalog_settings.EVALSERVER_MULTILABEL_FILE = multilabel_file
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    run_load_benchmarks("--benchmark", "imagenet")
    top1 = np.full(50_000, 7)
    top1[[10, 20, 30, 40]] = [1, 3, 5, 7]  # correct, unclear (correct), judged wrong, unjudged
    submission = factories.submission_scored("imagenet", "imagenet-val", top1, tmp_path, "m")
    original = compiled_for_version(_latest("imagenet", "original")).arrays["labels"]
    url = f"/submissions/{submission.pk}/mistakes/"

    response = client.get(url)  # ImageNet-M first

    assert response.status_code == 200
    cards = gallery_cards(response.content.decode())
    assert [(c.index, c.match, c.verdict, c.file_name, c.image) for c in cards] == [
        (30, "miss", "wrong", "ILSVRC2012_val_00000031.JPEG", ""),
        (40, "miss", "unjudged", "ILSVRC2012_val_00000041.JPEG", "")]
    assert [c.labels for c in cards] == [
        {"given": f"{name[original[30]]} ({original[30]})", "accepted": f"{name[4]} (4)",
         "predicted": f"{name[5]} (5)"},
        {"given": f"{name[original[40]]} ({original[40]})",
         "accepted": f"{name[6]} (6); {name[8]} (8)", "predicted": f"{name[7]} (7)"}]
    assert "ImageNet-M misses <span class=\"count\">2 of 4</span>" in response.content.decode()
    # the correctable set of ImageNet, from the same stored predictions
    corrected = gallery_cards(client.get(url, {"set": "corrected", "match": "neither",
                                               "page": 1}).content.decode())
    expected = [i for i, m, *_ in _expected_c("imagenet", top1) if m == "neither"]
    assert [c.index for c in corrected] == expected[:selectors_gallery.PAGE_SIZE]
    assert corrected[0].file_name == datasets.imagenet_file_name(corrected[0].index)
