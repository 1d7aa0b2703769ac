"""A benchmark's about page and its JSON: what each label set is, how it was built (with the
counts of its current version's summary), its size, version, history link and citation."""

from __future__ import annotations

import html
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from tests.helpers import PROJECT_ROOT
from tests.presentation.about.about_pages import about_facts, about_sections
from workers.scoring import datasets

pytestmark = pytest.mark.django_db

NORTHCUTT = ('<cite class="citation" data-key="northcutt2021"><span class="authors">'
             "Northcutt, Curtis G.; Athalye, Anish; Mueller, Jonas</span>. "
             '<a href="https://arxiv.org/abs/2103.14749" rel="noopener">Pervasive Label Errors in '
             "Test Sets Destabilize Machine Learning Benchmarks</a>. "
             '<span class="venue">NeurIPS Datasets and Benchmarks Track</span>, 2021.</cite>')


def _latest(benchmark: str, slug: str) -> LabelSetVersion:
    version = (LabelSetVersion.objects.filter(label_set__benchmark__slug=benchmark,
                                              label_set__slug=slug).order_by("-number").first())
    assert version is not None
    return version


def _corrected_facts(summary: dict[str, Any]) -> dict[str, int]:
    counts = summary["counts"]
    return {"flagged": summary["flagged"], "non_error": counts["non_error"],
            "correctable": summary["correctable_size"], "multi_label": counts["multi_label"],
            "neither": counts["neither"], "non_agreement": counts["non_agreement"],
            "unknown": counts["multi_label"] + counts["neither"] + counts["non_agreement"],
            "pruned": summary["pruned_size"]}


@pytest.fixture
def mnist(run_load_benchmarks: Callable[..., tuple[str, str]],
          catalog_settings: Settings) -> Settings:
    run_load_benchmarks("--benchmark", "mnist")
    return catalog_settings


def test_it_describes_each_mnist_label_set_with_its_size_version_and_citation(
    client: Client, mnist: Settings
) -> None:
    corrected = _latest("mnist", "corrected")
    summary = compiled_for_version(corrected).summary

    response = client.get("/benchmarks/mnist/about/")

    assert response.status_code == 200
    page = response.content.decode()
    sections = about_sections(page)
    assert list(sections) == ["original", "corrected"]
    assert about_facts(sections["corrected"]) == _corrected_facts(summary) == {
        "flagged": 100, "non_error": 85, "correctable": 10, "multi_label": 0, "neither": 3,
        "non_agreement": 2, "unknown": 5, "pruned": 9995}
    assert ('<dd class="about-size">9,995 examples evaluated</dd>' in sections["corrected"])
    assert ('<dd class="about-size">10,000 examples evaluated</dd>' in sections["original"])
    assert (f'<dd class="about-version">1 <code title="{corrected.content_hash}">'
            f'{corrected.content_hash[:12]}</code> · <a href="/benchmarks/mnist/label-sets/'
            f'corrected/history/">history</a> (1 version)</dd>') in sections["corrected"]
    assert "agreement threshold of 3 of 5 votes" in sections["corrected"]
    assert "otherwise correctable if at least 3 chose the guessed label" in sections["corrected"]
    # MNIST's vote file has no "both" answer: the page names the answers its workers had
    assert ("checked each flagged example and answered whether it shows the given label, the "
            "label the algorithm guessed, or neither.") in sections["corrected"]
    assert NORTHCUTT in sections["corrected"]
    assert 'href="https://doi.org/10.1109/5.726791"' in sections["original"]  # LeCun 1998
    assert "Gradient-based learning applied to document recognition" in page.split(
        '<nav class="card about-toc"')[0]  # the dataset's citation, above the label sets
    assert client.get("/benchmarks/nope/about/").status_code == 404


def test_it_reads_the_counts_and_version_from_the_newest_version(
    client: Client, mnist: Settings
) -> None:
    first = _latest("mnist", "corrected")
    summary = {**first.summary, "correctable_size": 11, "pruned_size": 9996,
               "counts": {**first.summary["counts"], "correctable": 11, "neither": 2}}
    second = LabelSetVersion.objects.create(label_set=first.label_set, number=2,
                                            content_hash="ab" * 32, parent=first,
                                            summary=summary, published=timezone.now())

    section = about_sections(client.get("/benchmarks/mnist/about/").content.decode())["corrected"]

    assert about_facts(section) == {**_corrected_facts(summary), "unknown": 4}
    assert (f'<dd class="about-version">2 <code title="{second.content_hash}">abababababab'
            f'</code> · <a href="/benchmarks/mnist/label-sets/corrected/history/">history</a> '
            f'(2 versions)</dd>') in section


def test_it_cites_a_reference_it_knows_only_by_its_bundle_text(
    run_load_benchmarks: Callable[..., tuple[str, str]],
) -> None:
    run_load_benchmarks("--benchmark", "20news")
    manifest = tomllib.loads((PROJECT_ROOT / "benchmarks/20news.toml").read_text())

    body = APIClient().get("/api/benchmarks/20news/about/").json()
    page = Client().get("/benchmarks/20news/about/").content.decode()

    lang = manifest["citations"]["lang1995"]
    assert body["citations"] == [{"key": "", "authors": [], "title": "", "venue": "",
                                  "year": None, "url": "", "text": lang}]
    assert body["summary"] == manifest["description"]
    original = next(ls for ls in body["label_sets"] if ls["slug"] == "original")
    assert original["citations"] == body["citations"]  # the dataset's own paper
    assert f'<cite class="citation">{html.escape(lang)}</cite>' in page


def test_it_answers_the_about_page_as_json(mnist: Settings) -> None:
    corrected = _latest("mnist", "corrected")

    response = APIClient().get("/api/benchmarks/mnist/about/")

    assert response.status_code == 200
    body = response.json()
    assert (body["benchmark"], body["name"], body["num_classes"]) == ("mnist", "MNIST", 10)
    assert [c["key"] for c in body["citations"]] == ["lecun1998"]
    manifest = tomllib.loads((PROJECT_ROOT / "benchmarks/mnist.toml").read_text())
    assert body["citations"][0]["text"] == manifest["citations"]["lecun1998"]
    assert body["summary"] == manifest["description"]
    assert [ls["slug"] for ls in body["label_sets"]] == ["original", "corrected"]
    entry = body["label_sets"][1]
    assert {k: v for k, v in entry.items() if k not in ("what", "how", "facts", "citations")} \
        == {"slug": "corrected", "name": "Corrected (agreement >= 3 of 5)", "kind": "single",
            "family": "corrected", "image_set": "mnist-test", "image_set_size": 10_000,
            "available": True, "needs": "", "evaluated": 9995, "version": 1,
            "version_hash": corrected.content_hash, "version_count": 1,
            "history_url": "/benchmarks/mnist/label-sets/corrected/history/",
            "versions_url": "/api/benchmarks/mnist/label-sets/corrected/versions/"}
    assert {f["key"]: f["value"] for f in entry["facts"]} == _corrected_facts(
        compiled_for_version(corrected).summary)
    assert entry["facts"][2] == {"key": "correctable", "value": 10,
                                 "title": "Correctable set C (guessed label takes over)"}
    assert entry["citations"] == [{
        "key": "northcutt2021", "authors": ["Northcutt, Curtis G.", "Athalye, Anish",
                                            "Mueller, Jonas"],
        "title": "Pervasive Label Errors in Test Sets Destabilize Machine Learning Benchmarks",
        "venue": "NeurIPS Datasets and Benchmarks Track", "year": 2021,
        "url": "https://arxiv.org/abs/2103.14749", "text": ""}]
    assert len(entry["how"]) == 4 and entry["how"][1].startswith(
        "With an agreement threshold of 3 of 5 votes")
    missing = APIClient().get("/api/benchmarks/nope/about/")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/benchmarks/{slug}/about/"]["get"]
    assert (operation["operationId"], sorted(operation["responses"])) == (
        "benchmarks_about", ["200", "400", "401", "404", "405", "406", "429", "500", "503"])


def test_it_links_the_about_page_from_the_leaderboard_and_the_home_page(
    client: Client, mnist: Settings
) -> None:
    link = '<a href="/benchmarks/mnist/about/" class="about-link">About'

    assert link + " these label sets</a>" in client.get("/benchmarks/mnist/").content.decode()
    # on the home page, short, naming its benchmark for a screen reader
    assert link + '<span class="visually-hidden"> the label sets of MNIST</span></a>' in \
        client.get("/").content.decode()


@pytest.mark.parametrize("with_file", [True, False])
def test_it_describes_imagenet_with_imagenet_m_or_says_what_is_missing(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path, tmp_path: Path, with_file: bool,
) -> None:
    if with_file:
        path = tmp_path / "human_accuracy_v3.0.0.json"
        names = [datasets.imagenet_file_name(i) for i in (5, 6, 7)]
        path.write_text(json.dumps({"initial_annots": {}, "problematic_images": {},
                                    "imagenet_m": names}))
        catalog_settings.EVALSERVER_MULTILABEL_FILE = path
    run_load_benchmarks("--benchmark", "imagenet")

    body = APIClient().get("/api/benchmarks/imagenet/about/").json()

    by_slug = {ls["slug"]: ls for ls in body["label_sets"]}
    assert list(by_slug) == ["original", "corrected", "corrected-t4", "corrected-t5", "real",
                             "multilabel", "imagenet-m"]
    assert {k: f["value"] for k, f in zip(
        ("flagged", "non_error", "correctable"), by_slug["corrected"]["facts"], strict=False)} \
        == {"flagged": 5440, "non_error": 2524, "correctable": 1428}
    assert by_slug["corrected"]["evaluated"] == 48_512
    assert by_slug["corrected-t5"]["how"][1].startswith("With an agreement threshold of 5 of 5")
    assert [c["key"] for c in by_slug["multilabel"]["citations"]] == ["shankar2020",
                                                                      "vasudevan2022"]
    # which figure is which (docs/metrics.md §5.1): the class mean ranks, the pooled share beside
    how = by_slug["multilabel"]["how"]
    assert how[1].startswith("The accuracy shown, and ranked by, is the mean over classes")
    assert "normal approximation" in how[1] and "The pooled accuracy" in how[1]
    assert [c["key"] for c in by_slug["original"]["citations"]] == ["russakovsky2015"]
    assert [c["key"] for c in by_slug["real"]["citations"]] == ["beyer2020"]
    m = by_slug["imagenet-m"]
    if with_file:
        assert (m["available"], m["facts"], m["evaluated"], m["version"]) == (
            True, [{"key": "included", "title": "Listed images", "value": 3}], 3, 1)
    else:
        assert (m["available"], m["facts"], m["version"], m["history_url"]) == (
            False, [], None, None)
        assert m["needs"] == "the ImageNet multi-label file (EVALSERVER_MULTILABEL_FILE)"
        assert m["what"].startswith("ImageNet-M: the 68 validation images")
