"""The placeholder home page lists what is loaded."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.catalog.services import (
    benchmark_sync,
    image_set_sync,
    label_set_sync,
    label_set_version_create,
)
from workers.scoring.bundles import builtin_benchmark_spec

pytestmark = pytest.mark.django_db


def test_it_lists_loaded_benchmarks_and_label_set_versions(client: Client) -> None:
    spec = builtin_benchmark_spec("cifar10")
    benchmark, _ = benchmark_sync(spec=spec)
    image_set, _ = image_set_sync(benchmark=benchmark, spec=spec.image_set("cifar10.1-v6"))
    label_set, _ = label_set_sync(
        benchmark=benchmark, image_set=image_set, spec=spec.label_sets[-1]
    )
    label_set_version_create(label_set=label_set, content_hash="c" * 64, summary={})

    response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "CIFAR-10" in page
    assert "cifar10.1-v6" in page
    assert "c" * 12 in page


def test_it_says_how_to_load_when_empty(client: Client) -> None:
    response = client.get("/")

    assert response.status_code == 200
    assert "load_benchmarks" in response.content.decode()
