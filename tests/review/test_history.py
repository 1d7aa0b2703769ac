"""A label set's history: versions newest first and the rank shifts each caused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem, VersionRescore
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score, Submission
from leaderboard.tasks.cpu import rescore_version
from tests import factories
from tests.api_support import api_client
from tests.review.conftest import resnet50_top1, submit_imagenet
from workers.scoring import revisions

pytestmark = pytest.mark.django_db


def _accepted(keys: np.ndarray, example: int) -> set[int]:
    low, high = np.searchsorted(keys, [example * 1000, (example + 1) * 1000])
    return {int(k) - example * 1000 for k in keys[low:high]}


@pytest.fixture
def swapped(loaded: Settings, data_dir: Path, tmp_path: Path) -> dict[str, object]:
    """ResNet-50 (A) and a copy (B) one ReaL-correct ahead of it; then one version accepts two
    of A's novel predictions that B does not make, so A ends one ahead of B."""
    top1 = resnet50_top1(data_dir)
    a = submit_imagenet(top1, tmp_path, "model-a")
    v1 = LabelSetVersion.objects.get(label_set__benchmark__slug="imagenet",
                                     label_set__slug="real")
    arrays = compiled_for_version(v1).arrays
    accepted_keys, mask = arrays["accepted_keys"], arrays["mask"]
    e1, e2 = (ReviewItem.objects.filter(label_set=v1.label_set)
              .order_by("example_index")[:2])
    # an included example A gets wrong, that B gets right
    f = next(i for i in range(50_000) if mask[i] and i not in (e1.example_index, e2.example_index)
             and int(top1[i]) not in _accepted(accepted_keys, i))
    other = top1.copy()
    other[f] = min(_accepted(accepted_keys, f))
    for item in (e1, e2):  # B predicts a class that is not accepted there either
        other[item.example_index] = next(
            c for c in range(1000)
            if c != item.class_id and c not in _accepted(accepted_keys, item.example_index))
    b = submit_imagenet(other, tmp_path, "model-b")
    staff = factories.host_create("curator")
    v2 = review.label_set_version_revise(
        label_set=v1.label_set, items=[e1, e2], author=staff, note="two decisions",
        verdicts=[revisions.Verdict(i.example_index, i.class_id, "correct", False)
                  for i in (e1, e2)])
    # its re-scoring task, in this process: every submission (2) scored on v2, the job done
    assert rescore_version.apply(args=[v2.pk], task_id=f"rescore-{v2.pk}").get() == "done"
    assert VersionRescore.objects.get(version=v2).submissions == 2
    return {"a": a, "b": b, "v1": v1, "v2": v2, "items": (e1, e2), "author": staff}


def _correct(submission: Submission, version: LabelSetVersion) -> int:
    return Score.objects.get(submission=submission, label_set_version=version).correct


def test_it_reports_rank_shifts_equal_to_a_direct_computation(swapped: dict) -> None:
    a, b, v1, v2 = swapped["a"], swapped["b"], swapped["v1"], swapped["v2"]
    # the direct computation: B one ahead on v1, A one ahead on v2
    assert _correct(b, v1) == _correct(a, v1) + 1
    assert _correct(a, v2) == _correct(a, v1) + 2
    assert _correct(b, v2) == _correct(b, v1)
    body = api_client().get("/api/benchmarks/imagenet/label-sets/real/versions/2/").json()
    assert body["compared"] == 2
    assert body["rank_shifts"] == [
        {"submission_id": a.pk, "model_name": "model-a", "rank_before": 2, "rank_after": 1,
         "shift": 1, "accuracy_before": Score.objects.get(submission=a,
                                                          label_set_version=v1).accuracy,
         "accuracy_after": Score.objects.get(submission=a, label_set_version=v2).accuracy},
        {"submission_id": b.pk, "model_name": "model-b", "rank_before": 1, "rank_after": 2,
         "shift": -1, "accuracy_before": Score.objects.get(submission=b,
                                                           label_set_version=v1).accuracy,
         "accuracy_after": Score.objects.get(submission=b, label_set_version=v2).accuracy},
    ]
    assert api_client().get("/api/benchmarks/imagenet/label-sets/real/versions/1/").json()[
        "rank_shifts"] == []


def test_it_lists_the_versions_newest_first_with_their_decisions(swapped: dict) -> None:
    v1, v2, (e1, e2) = swapped["v1"], swapped["v2"], swapped["items"]
    author: User = swapped["author"]
    body = api_client().get("/api/benchmarks/imagenet/label-sets/real/versions/").json()
    assert [(v["number"], v["hash"], v["parent"], v["author"]) for v in body] == [
        (2, v2.content_hash, 1, author.username), (1, v1.content_hash, None, None)]
    assert body[0]["note"] == "two decisions"
    assert [v["rescore_status"] for v in body] == ["done", "none"]
    assert [(s["item"], s["example"], s["class_id"], s["verdict"], s["file_name"])
            for s in body[0]["settled"]] == [
        (i.pk, i.example_index, i.class_id, "correct",
         f"ILSVRC2012_val_{i.example_index + 1:08d}.JPEG") for i in (e1, e2)]
    missing = api_client().get("/api/benchmarks/imagenet/label-sets/nope/versions/")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


def test_it_shows_the_history_page_with_arrows(swapped: dict) -> None:
    a, b = swapped["a"], swapped["b"]
    html = Client().get("/benchmarks/imagenet/label-sets/real/history/").content.decode()
    assert html.index('id="v2"') < html.index('id="v1"')
    row_a = html.split(f'<tr data-submission="{a.pk}">', 1)[1].split("</tr>", 1)[0]
    row_b = html.split(f'<tr data-submission="{b.pk}">', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">2</td><td class="num">1</td>' in row_a and "▲1" in row_a
    assert '<td class="num">1</td><td class="num">2</td>' in row_b and "▼1" in row_b
    assert "by curator" in html
    board = Client().get("/benchmarks/imagenet/").content.decode()
    assert 'href="/benchmarks/imagenet/label-sets/real/history/"' in board


def test_it_compares_any_two_versions(swapped: dict) -> None:
    a, b, v1, v2, (e1, e2) = (swapped["a"], swapped["b"], swapped["v1"], swapped["v2"],
                              swapped["items"])
    # v3 accepts a third novel prediction (B makes it too): both gain, nobody's rank moves
    e3 = (ReviewItem.objects.filter(label_set=v1.label_set, sources__submission=a)
          .exclude(example_index__in=[e1.example_index, e2.example_index])
          .order_by("example_index").first())
    assert e3 is not None
    v3 = review.label_set_version_revise(
        label_set=v1.label_set, items=[e3], author=None,
        verdicts=[revisions.Verdict(e3.example_index, e3.class_id, "correct", False)])
    assert rescoring.label_set_version_rescore(version_id=v3.pk) == 2
    assert (_correct(a, v3), _correct(b, v3)) == (_correct(a, v2) + 1, _correct(b, v2) + 1)

    url = "/api/benchmarks/imagenet/label-sets/real/versions/3/"
    parent = api_client().get(url).json()
    assert (parent["against"], parent["compared"], parent["rank_shifts"]) == (2, 2, [])
    far = api_client().get(url, {"against": 1}).json()
    assert (far["against"], far["compared"]) == (1, 2)
    assert [(s["submission_id"], s["rank_before"], s["rank_after"], s["shift"])
            for s in far["rank_shifts"]] == [(a.pk, 2, 1, 1), (b.pk, 1, 2, -1)]
    back = api_client().get("/api/benchmarks/imagenet/label-sets/real/versions/1/",
                            {"against": 3}).json()
    assert [(s["submission_id"], s["shift"]) for s in back["rank_shifts"]] == [
        (b.pk, 1), (a.pk, -1)]
    missing = api_client().get(url, {"against": 9})
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    for bad_number in ("two", "1.0", " 1"):
        bad = api_client().get(url, {"against": bad_number})
        assert (bad.status_code, bad.json()["error"]["field"]) == (400, "against")

    html = Client().get("/benchmarks/imagenet/label-sets/real/history/",
                        {"compare": 3, "against": 1}).content.decode()
    section = html.split('id="comparison"', 1)[1].split("</section>", 1)[0]
    assert "Version 3 against version 1" in section
    row_a = section.split(f'<tr data-submission="{a.pk}">', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">2</td><td class="num">1</td>' in row_a and "▲1" in row_a
    nothing = Client().get("/benchmarks/imagenet/label-sets/real/history/",
                           {"compare": 3, "against": 7}).content.decode()
    assert "This label set has no version 3 or 7." in nothing
