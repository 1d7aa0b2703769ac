"""The admin shows all four catalog models; versions are view-only there."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.services import (
    benchmark_sync,
    image_set_sync,
    label_set_sync,
    label_set_version_create,
)
from workers.scoring.catalog import BENCHMARKS

pytestmark = pytest.mark.django_db


@pytest.fixture
def version() -> LabelSetVersion:
    spec = BENCHMARKS["mnist"]
    benchmark, _ = benchmark_sync(spec=spec)
    image_set, _ = image_set_sync(benchmark=benchmark, spec=spec.image_set("mnist-test"))
    label_set, _ = label_set_sync(
        benchmark=benchmark, image_set=image_set, spec=spec.label_sets[0]
    )
    return label_set_version_create(label_set=label_set, content_hash="d" * 64, summary={})


@pytest.mark.parametrize("model", ["benchmark", "imageset", "labelset", "labelsetversion"])
def test_it_lists_each_model(admin_client: Client, version: LabelSetVersion, model: str) -> None:
    response = admin_client.get(reverse(f"admin:leaderboard_{model}_changelist"))

    assert response.status_code == 200
    assert "mnist" in response.content.decode()


def test_it_shows_versions_read_only(admin_client: Client, version: LabelSetVersion) -> None:
    change_url = reverse("admin:leaderboard_labelsetversion_change", args=[version.pk])

    page = admin_client.get(change_url)
    post = admin_client.post(change_url, {"note": "edited"})
    add = admin_client.get(reverse("admin:leaderboard_labelsetversion_add"))

    assert page.status_code == 200
    assert 'name="note"' not in page.content.decode()  # shown, not editable
    assert post.status_code == 403
    assert add.status_code == 403
    assert LabelSetVersion.objects.get(pk=version.pk).note == ""
