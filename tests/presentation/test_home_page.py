"""The placeholder home page lists what is loaded."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.catalog.services import label_set_version_create
from tests.helpers import builtin_label_set_sync

pytestmark = pytest.mark.django_db


def test_it_lists_loaded_benchmarks_and_label_set_versions(client: Client) -> None:
    label_set = builtin_label_set_sync("cifar10", "cifar10.1-v6")
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
