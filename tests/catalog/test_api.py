"""GET /api/benchmarks/, /api/benchmarks/<slug>/ (anonymous reads)."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import LabelSetVersion

pytestmark = pytest.mark.django_db


def _hash(benchmark: str, label_set: str) -> str:
    return LabelSetVersion.objects.get(label_set__benchmark__slug=benchmark,
                                       label_set__slug=label_set, number=1).content_hash


def _cifar10() -> dict[str, object]:
    return {
        "slug": "cifar10",
        "name": "CIFAR-10",
        "num_classes": 10,
        "main_image_set": "cifar10-test",
        "image_sets": [{"slug": "cifar10-test", "size": 10000},
                       {"slug": "cifar10.1-v4", "size": 2021},
                       {"slug": "cifar10.1-v6", "size": 2000}],
        "label_sets": [
            {"slug": slug, "image_set": example_set, "kind": kind, "version": 1,
             "version_hash": _hash("cifar10", slug)}
            for slug, example_set, kind in (
                ("cifar10.1-v4", "cifar10.1-v4", "single"),
                ("cifar10.1-v6", "cifar10.1-v6", "single"),
                ("cifar10h", "cifar10-test", "soft"),
                ("corrected", "cifar10-test", "single"),
                ("original", "cifar10-test", "single"),
            )
        ],
    }


def test_it_lists_every_benchmark_to_anonymous_visitors(loaded: Settings) -> None:
    response = APIClient().get("/api/benchmarks/")

    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list)  # a plain list, not a page
    assert [b["slug"] for b in body] == [
        "20news", "caltech256", "cifar10", "cifar100", "imagenet", "imdb", "mnist"]
    by_slug = {b["slug"]: b for b in body}
    assert by_slug["cifar10"] == _cifar10()
    assert by_slug["mnist"]["image_sets"] == [{"slug": "mnist-test", "size": 10000}]
    assert by_slug["imdb"]["image_sets"] == [{"slug": "imdb-test", "size": 25000}]
    assert [ls["slug"] for ls in by_slug["imagenet"]["label_sets"]] == [
        "corrected", "corrected-t4", "corrected-t5", "original", "real"]


def test_it_shows_one_benchmark(loaded: Settings) -> None:
    response = APIClient().get("/api/benchmarks/cifar10/")

    assert response.status_code == 200
    assert response.json() == _cifar10()


def test_it_shows_the_latest_version_of_each_label_set(loaded: Settings) -> None:
    from leaderboard.catalog.models import LabelSet
    from leaderboard.catalog.services import label_set_version_create

    original = LabelSet.objects.get(benchmark__slug="cifar10", slug="original")
    label_set_version_create(label_set=original, content_hash="e" * 64, summary={})

    body = APIClient().get("/api/benchmarks/cifar10/").json()

    entry = next(ls for ls in body["label_sets"] if ls["slug"] == "original")
    assert (entry["version"], entry["version_hash"]) == (2, "e" * 64)


def test_it_answers_404_for_an_unknown_benchmark(loaded: Settings) -> None:
    response = APIClient().get("/api/benchmarks/nope/")

    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "no benchmark 'nope'"}}
