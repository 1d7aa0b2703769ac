"""`scores.changed`: once a re-scoring has published a version, each owner whose public
submission's accuracy or rank differs from the version it was made from is told both."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.services import label_set_version_create
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.services import notification_preference_update
from leaderboard.submissions.models import Score
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from leaderboard.tasks.registry import JOBS
from tests import factories
from tests.workers.scoring.bundles.bundle_files import LABELS, manifest, write_bundle

pytestmark = pytest.mark.django_db


def test_it_tells_owners_their_accuracy_and_rank_before_and_after(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    call_command("benchmark_add", str(write_bundle(tmp_path / "toy", manifest())),
                 stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = Benchmark.objects.get(slug="toy")
    wrong = [(label + 1) % 3 for label in LABELS]
    submissions = {}
    for name, right in (("a", 6), ("b", 5), ("c", 4)):  # 6, 5 and 4 of 6 right on version 1
        owner = factories.user_create(name)
        notification_preference_update(user=owner, event="scores.changed", email=True,
                                       webhook=False)
        predicted = LABELS[:right] + wrong[right:]
        submission = submission_create(owner=owner, benchmark=benchmark, model_name=name,
                                       files={"toy-test": factories.upload_json(predicted)})
        assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == \
            "scored"
        submissions[name] = submission
    original = LabelSet.objects.get(benchmark=benchmark, slug="original")
    first = original.versions.get(number=1)
    assert [Score.objects.get(submission=submissions[n], label_set_version=first).correct
            for n in "abc"] == [6, 5, 4]
    second = label_set_version_create(label_set=original, content_hash="a" * 64, summary={},
                                      parent=first)
    for name, right in (("a", 5), ("b", 5), ("c", 4)):  # a drops to a tie with b; c as before
        Score.with_hidden.create(submission=submissions[name], label_set_version=second,
                                 label_set=original, accuracy=right / 6, correct=right, total=6)

    JOBS["rescore"].after(second.pk)  # type: ignore[misc]  (as the runner does once done)

    told = {d.user.username: d.payload["data"]["changes"]
            for d in NotificationDelivery.objects.select_related("user")}
    assert told == {
        "a": [{"submission": submissions["a"].pk, "label_set": "original",
               "before": {"version": 1, "accuracy": 1.0, "rank": 1},
               "after": {"version": 2, "accuracy": 5 / 6, "rank": 1}}],
        "b": [{"submission": submissions["b"].pk, "label_set": "original",
               "before": {"version": 1, "accuracy": 5 / 6, "rank": 2},
               "after": {"version": 2, "accuracy": 5 / 6, "rank": 1}}],
    }  # c: 4 of 6 and third on both, not told
    JOBS["rescore"].after(second.pk)  # type: ignore[misc]  (run again: not sent twice)
    assert NotificationDelivery.objects.count() == 2
