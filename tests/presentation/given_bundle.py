"""A hosted benchmark whose label sets keep the built-in families but not their slugs: the toy
bundle of tests/workers/scoring/bundles/bundle_files.py with its given labels slugged `given`
and its corrected ones `fixed` (docs/families.md: a page asks the rows for a label set by its
family, never by a slug), and two public submissions scored on it by the real task.

The toy labels are [0, 1, 2, 0, 1, 2]; the votes (threshold 3) correct example 1 to class 2
(the correctable set C = {1}) and leave example 3 out (multi-label): `fixed` covers P =
{0, 1, 2, 4, 5}, and B = P - C = {0, 2, 4, 5}.
- "first" predicts the given labels: 6/6 on `given`, 4/5 on `fixed` (misses example 1).
- "second" misses examples 1 and 3 on `given` (4/6) and none of `fixed` (5/5)."""

from __future__ import annotations

import io
from pathlib import Path

from django.core.management import call_command

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle

PREDICTIONS = {"first": [0, 1, 2, 0, 1, 2], "second": [0, 2, 2, 1, 1, 2]}


def given_benchmark_add(folder: Path) -> tuple[Benchmark, dict[str, Submission]]:
    """The benchmark `toy` added from its bundle, and its submissions by model name (the
    settings must allow them: EVALSERVER_DAILY_QUOTA = 0)."""
    document = manifest()
    del document["reviewable"]
    document["headline"] = "given"
    document["example_sets"] = document["example_sets"][:1]
    original, corrected = document["label_sets"][:2]
    document["label_sets"] = [
        {**original, "slug": "given", "name": "Given labels"},
        {**corrected, "slug": "fixed", "thresholds": [3], "original": "given"}]
    call_command("benchmark_add", str(write_bundle(folder, document)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = Benchmark.objects.get(slug="toy")
    submissions = {}
    for name, predicted in PREDICTIONS.items():
        submission = submission_create(owner=factories.user_create(name), benchmark=benchmark,
                                       model_name=name, public=True,
                                       files={"toy-test": factories.upload_json(predicted)})
        assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == "scored"
        submissions[name] = submission
    return benchmark, submissions
