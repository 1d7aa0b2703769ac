"""`review.decided` to the owners whose submissions raised a decided item, after the decision
commits; `review.queue_grew` to maintainers once a benchmark's open queue reaches the
threshold."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.services import notification_preference_update
from leaderboard.review.models import ReviewItem, ReviewItemSubmission
from leaderboard.review.services import review_vote_cast
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import LABELS, manifest, write_bundle

pytestmark = pytest.mark.django_db


def _scored_toy(tmp_path: Path, owner_name: str) -> Any:
    call_command("benchmark_add", str(write_bundle(tmp_path / "toy", manifest())),
                 stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = Benchmark.objects.get(slug="toy")
    owner = factories.user_create(owner_name)
    notification_preference_update(user=owner, event="review.decided", email=True,
                                   webhook=False)
    predicted = [(label + 1) % 3 for label in LABELS]  # wrong everywhere: novel pairs
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="m",
                                   files={"toy-test": factories.upload_json(predicted)})
    assert score_submission.apply(args=[submission.pk], task_id="t-r").get() == "scored"
    return benchmark, submission


def test_it_tells_the_owner_of_a_decision_on_an_item_their_submission_raised(
    catalog_settings: Settings, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark, submission = _scored_toy(tmp_path, "raiser")
    Benchmark.objects.filter(pk=benchmark.pk).update(review_panel_size=1)
    source = ReviewItemSubmission.objects.filter(submission=submission).order_by("item_id")[0]
    reviewer = factories.host_create("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        review_vote_cast(item_id=source.item_id, reviewer=reviewer, verdict="correct")
    item = ReviewItem.objects.get(id=source.item_id)
    assert item.status == "decided" and item.version is not None
    [delivery] = NotificationDelivery.objects.filter(event="review.decided")
    assert delivery.user == submission.owner
    assert delivery.payload["data"] == {
        "item": {"id": item.pk, "benchmark": "toy", "label_set": item.label_set.slug,
                 "example_index": item.example_index, "class_id": item.class_id,
                 "verdict": "correct", "version": item.version.number},
        "submissions": [submission.pk]}


def test_it_tells_maintainers_when_the_review_queue_reaches_the_threshold(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    catalog_settings.EVALSERVER_REVIEW_QUEUE_NOTIFY_THRESHOLD = 2
    maintainer = factories.host_create("maintainer")
    notification_preference_update(user=maintainer, event="review.queue_grew", email=True,
                                   webhook=False)
    _scored_toy(tmp_path, "queue-filler")
    open_items = ReviewItem.objects.filter(status="open").count()
    assert open_items >= 2
    [delivery] = NotificationDelivery.objects.filter(event="review.queue_grew")
    assert delivery.user == maintainer
    assert delivery.payload["data"] == {"benchmark": "toy", "open_items": open_items,
                                        "threshold": 2}
