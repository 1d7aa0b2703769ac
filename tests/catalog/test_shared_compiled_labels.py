"""Two benchmarks whose label files are the same compile to one content hash and share one
stored file (leaderboard/catalog/label_set_version_files.py); each must still be scored on its
own example set. Before, the second benchmark's submissions were marked scored with no score on
it: the stored file named the first benchmark's example set (found by bench/ladder.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.submissions.models import Score
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import LABELS, manifest, write_bundle

pytestmark = pytest.mark.django_db


def test_it_scores_two_benchmarks_with_the_same_labels_each_on_its_own_example_set(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    first = manifest()
    second = manifest()
    second.update(slug="toy2", name="Toy again", main_example_set="toy2-test", reviewable=[])
    second["example_sets"] = [{**second["example_sets"][0], "slug": "toy2-test"}]
    second["label_sets"] = [{**second["label_sets"][0], "example_set": "toy2-test"}]
    for name, document in (("a", first), ("b", second)):
        call_command("benchmark_add", str(write_bundle(tmp_path / name, document)),
                     stdout=io.StringIO(), stderr=io.StringIO())
    hashes = set(LabelSetVersion.objects.filter(label_set__slug="original")
                 .values_list("content_hash", flat=True))
    assert len(hashes) == 1  # one stored file for both
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    predicted = [0, 1, 2, 1, 1, 2]  # against LABELS [0, 1, 2, 0, 1, 2]: 5 of 6
    assert sum(p == t for p, t in zip(predicted, LABELS, strict=True)) == 5
    submission = submission_create(owner=factories.user_create("u"),
                                   benchmark=Benchmark.objects.get(slug="toy2"), model_name="m",
                                   files={"toy2-test": factories.upload_json(predicted)})
    assert score_submission.apply(args=[submission.pk], task_id="t-shared").get() == "scored"
    score = Score.objects.get(submission=submission, label_set__slug="original")
    assert (score.correct, score.total) == (5, 6)
