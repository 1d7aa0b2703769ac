"""Voting through the API and the review page, up to the decision and version 2."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.review.models import ReviewItem, ReviewVote
from tests import factories
from tests.api_support import api_client
from tests.review.conftest import resnet50_top1, reviewers, submit_imagenet
from workers.scoring import datasets

pytestmark = pytest.mark.django_db


@pytest.fixture
def real_items(loaded: Settings, data_dir: Path, tmp_path: Path) -> list[ReviewItem]:
    """The real ResNet-50's novel ReaL pairs, as the queue orders them."""
    submit_imagenet(resnet50_top1(data_dir), tmp_path, "resnet50")
    items = list(ReviewItem.objects.filter(label_set__slug="real")
                 .order_by("-submission_count", "first_seen", "id"))
    assert items
    return items


def _real_versions() -> list[LabelSetVersion]:
    return list(LabelSetVersion.objects.filter(label_set__benchmark__slug="imagenet",
                                               label_set__slug="real").order_by("number"))


def test_it_shows_an_item_with_the_labels_of_the_latest_version(
    real_items: list[ReviewItem], data_dir: Path
) -> None:
    item = real_items[0]
    (v1,) = _real_versions()
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    wrong_keys = compiled_for_version(v1).arrays["wrong_keys"]
    names = imagenet_class_names(data_dir)
    e = item.example_index
    wrong = sorted(int(k) % 1000 for k in wrong_keys if int(k) // 1000 == e)

    body = api_client(reviewers(1)[0]).get(f"/api/review/items/{item.pk}/").json()
    assert body == {
        "id": item.pk, "benchmark": "imagenet", "label_set": "real", "image_set": "imagenet-val",
        "example_index": e, "file_name": f"ILSVRC2012_val_{e + 1:08d}.JPEG",
        "predicted": {"class_id": item.class_id, "name": names[item.class_id]},
        "max_score": None,
        "accepted": [{"class_id": c, "name": names[c]} for c in sorted(real[e])],
        "wrong": [{"class_id": c, "name": names[c]} for c in wrong],
        "submission_count": 1, "status": "open", "verdict": "", "votes": 0, "panel_size": 3,
        "voted": False, "version": 1, "judgement": "unjudged", "panel": [],
    }
    assert item.class_id not in real[e] and item.class_id not in wrong


def test_it_decides_by_api_votes_when_the_panel_of_three_is_full(
    real_items: list[ReviewItem],
) -> None:
    item = real_items[0]
    first, second, third = reviewers(3)
    url = f"/api/review/items/{item.pk}/votes/"
    response = api_client(first).post(url, {"verdict": "wrong", "severity": "major",
                                            "category": "fine_grained"}, format="json")
    assert (response.status_code, response.json()) == (201, {
        "item": item.pk, "status": "open", "verdict": "", "problematic": False, "votes": 1,
        "panel_size": 3, "version": None})
    again = api_client(first).post(url, {"verdict": "correct"}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_voted")
    bad = api_client(second).post(url, {"verdict": "maybe"}, format="json")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "verdict")
    mixed = api_client(second).post(url, {"verdict": "correct", "severity": "minor"},
                                    format="json")
    assert mixed.json() == {"error": {
        "code": "invalid_input", "message": "severity and category describe a wrong prediction",
        "field": "severity"}}
    assert api_client(second).post(url, {"verdict": "wrong", "problematic": True},
                                   format="json").json()["status"] == "open"
    last = api_client(third).post(url, {"verdict": "correct", "problematic": True,
                                        "note": "looks fine"}, format="json")
    assert (last.status_code, last.json()) == (201, {
        "item": item.pk, "status": "decided", "verdict": "wrong", "problematic": True,
        "votes": 3, "panel_size": 3, "version": 2})
    v1, v2 = _real_versions()
    assert (v2.parent_id, v2.author.username) == (v1.pk, "reviewer2")  # type: ignore[union-attr]
    closed = api_client(factories.host_create("late")).post(
        url, {"verdict": "correct"}, format="json")
    assert (closed.status_code, closed.json()["error"]["code"]) == (409, "already_decided")
    missing = api_client(third).post("/api/review/items/999999/votes/", {"verdict": "correct"},
                                     format="json")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


def test_it_decides_through_the_review_page(real_items: list[ReviewItem], data_dir: Path) -> None:
    Benchmark.objects.filter(slug="imagenet").update(review_panel_size=1)
    first, second = real_items[0], real_items[1]
    names = imagenet_class_names(data_dir)
    client = Client()
    client.force_login(factories.host_create("boss"))
    page = client.get("/review/imagenet/next/").content.decode()
    assert f"ILSVRC2012_val_{first.example_index + 1:08d}.JPEG" in page
    assert f"<strong>{names[first.class_id]}</strong>" in page
    assert f'name="item" value="{first.pk}"' in page
    assert 'data-key="c"' in page and 'data-key="p"' in page
    response = client.post("/review/imagenet/next/", {
        "item": first.pk, "verdict": "wrong", "severity": "minor",
        "category": "spurious_correlation", "note": "a dog"})
    assert (response.status_code, response["Location"]) == (302, "/review/imagenet/next/")
    first.refresh_from_db()
    assert (first.status, first.verdict, first.version.number) == (  # type: ignore[union-attr]
        "decided", "wrong", 2)
    vote = ReviewVote.objects.get(item=first)
    assert (vote.severity, vote.category, vote.note) == ("minor", "spurious_correlation", "a dog")
    # the next page shows the next item; severity sent with "correct" is dropped, not an error
    assert f'name="item" value="{second.pk}"' in client.get("/review/imagenet/next/").content \
        .decode()
    client.post("/review/imagenet/next/", {"item": second.pk, "verdict": "correct",
                                            "severity": "major", "problematic": "on"})
    second.refresh_from_db()
    assert (second.verdict, second.problematic) == ("correct", True)
    assert ReviewVote.objects.get(item=second).severity == ""
    assert [v.number for v in _real_versions()] == [1, 2, 3]


def _png_pixels(uri: str) -> np.ndarray:
    data = base64.b64decode(uri.removeprefix("data:image/png;base64,"))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (depth, color) == (8, 0)
    length = struct.unpack(">I", data[33:37])[0]
    assert data[37:41] == b"IDAT"
    raw = zlib.decompress(data[41:41 + length])
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, width + 1)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:]


def test_it_draws_the_mnist_digit_under_review(loaded: Settings, data_dir: Path) -> None:
    label_set = LabelSet.objects.get(benchmark__slug="mnist", slug="original")
    ReviewItem.objects.create(label_set=label_set, example_index=7, class_id=3,
                              submission_count=2, max_score=0.75)
    client = Client()
    client.force_login(reviewers(1)[0])
    page = client.get("/review/mnist/next/").content.decode()
    uri = page.split('class="review-image" src="', 1)[1].split('"', 1)[0]
    assert (_png_pixels(uri) == datasets.read_mnist_images(data_dir)[7]).all()
    assert "mnist-test[7]" in page and "top score 0.7500" in page


def imagenet_class_names(data_dir: Path) -> list[str]:
    """ImageNet's class names in id order, read from class_info.json here."""
    info = json.loads((data_dir / "imagenet/class_info.json").read_text())
    return [entry["synset"][0] for entry in info]
