"""Review of a hidden label set (docs/metrics.md §17.5): its novel predictions reach the review
queue, which only reviewers see; a decision makes a new version, and re-scoring runs the
release mechanism again on it, so the released number changes only through the mechanism.
The toy ReaL-like set (tests/workers/scoring/bundles/bundle_files.py), hidden and released
exactly."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.review.models import ReviewItem
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.api_support import api_client
from tests.review.conftest import reviewers
from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle

pytestmark = pytest.mark.django_db

# Against the toy ReaL labels [[0], [2], [], [0], [1], [2, 1]]: examples 0, 3, 4, 5 right,
# example 2 has no label (not scored), example 1's class 0 was never judged: a novel pair,
# wrong until reviewers decide. 4 of 5; once (1, 0) is accepted, 5 of 5.
PREDICTED = [0, 0, 0, 0, 1, 2]


def test_it_reviews_a_hidden_set_for_reviewers_only_and_releases_the_new_version(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    document = manifest()
    real = next(ls for ls in document["label_sets"] if ls["slug"] == "real")
    real.update(hidden=True, release="exact")
    call_command("benchmark_add", str(write_bundle(tmp_path / "b", document)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    owner = factories.user_create("participant")
    benchmark = factories.participation_open(Benchmark.objects.get(slug="toy"))
    submission = submission_create(owner=owner, benchmark=benchmark,
                                   model_name="m",
                                   files={"toy-test": factories.upload_json(PREDICTED)})
    assert score_submission.apply(args=[submission.pk], task_id="t-hidden-review").get() \
        == "scored"
    (item,) = ReviewItem.objects.filter(label_set__slug="real")
    assert (item.example_index, item.class_id) == (1, 0)

    participant = api_client(owner)
    assert participant.get("/api/review/toy/queue/").status_code == 403
    assert participant.get(f"/api/review/items/{item.pk}/").status_code == 403
    browser = Client()
    browser.force_login(owner)
    assert browser.get("/review/toy/next/").status_code == 403
    assert api_client().get("/api/review/toy/queue/").status_code == 401
    panel = reviewers(3)
    queue = api_client(panel[0]).get("/api/review/toy/queue/").json()
    assert [(r["id"], r["label_set"]) for r in queue["results"]] == [(item.pk, "real")]

    def released() -> list[tuple[int, float | None, float]]:
        body = participant.get(f"/api/submissions/{submission.pk}/").json()
        return [(r["version"], r["released"], r["best"]) for r in body["releases"]]

    assert released() == [(1, 0.8, 0.8)]
    for reviewer in panel:
        api_client(reviewer).post(f"/api/review/items/{item.pk}/votes/",
                                  {"verdict": "correct"}, format="json")
    v2 = LabelSetVersion.objects.get(label_set__slug="real", number=2)
    assert v2.published is None and released() == [(1, 0.8, 0.8)]
    assert rescoring.label_set_version_rescore(version_id=v2.pk) == 1
    assert released() == [(2, 1.0, 1.0)]
    board = Client().get("/api/benchmarks/toy/leaderboard/").json()
    assert board["rows"][0]["scores"]["real"]["accuracy"] == 1.0

