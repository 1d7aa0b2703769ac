"""Toy benchmarks for the home page's tests: the toy bundle of
tests/workers/scoring/bundles/bundle_files.py with its label sets slugged `given` and `fixed`
(as tests/presentation/given_bundle.py: the pages find the reference label set by its family),
under any slug, name and modality, and models scored on it by the real task.

Its labels are [0, 1, 2, 0, 1, 2]; `fixed` (votes, threshold 3) corrects example 1 to class 2
and leaves example 3 out: it is [0, 2, 2, -, 1, 2] on the examples {0, 1, 2, 4, 5}. The
models and their figures, counted by hand:

| model | predictions        | given | rank | fixed | rank | shift |
|-------|--------------------|-------|------|-------|------|-------|
| m1    | [0, 1, 2, 0, 1, 2] | 6/6   | 1    | 4/5   | 2    | -1    |
| m2    | [0, 1, 2, 0, 1, 0] | 5/6   | 2    | 3/5   | 3    | -1    |
| m3    | [0, 2, 2, 1, 1, 2] | 4/6   | 3    | 5/5   | 1    | +2    |
"""

from __future__ import annotations

import io
import itertools
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import call_command

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle

M1, M2, M3 = [0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 0], [0, 2, 2, 1, 1, 2]
_task_ids = itertools.count()


def toy_add(folder: Path, *, slug: str, name: str, modality: str) -> Benchmark:
    """A toy benchmark from its bundle (one test set, `<slug>-test`, of 6 examples; label sets
    `given` and `fixed`), added as staff add one (`manage.py benchmark_add`)."""
    document = manifest()
    del document["reviewable"]
    document.update(slug=slug, name=name, modality=modality, headline="given")
    document["example_sets"] = [{**document["example_sets"][0], "slug": f"{slug}-test"}]
    original, corrected = document["label_sets"][:2]
    document["label_sets"] = [
        {**original, "slug": "given", "name": "Given labels"},
        {**corrected, "slug": "fixed", "name": "Fixed labels", "thresholds": [3],
         "original": "given"}]
    call_command("benchmark_add", str(write_bundle(folder / slug, document)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    return Benchmark.objects.get(slug=slug)


def scored(benchmark: Benchmark, owner: User, model: str, predicted: list[int], *,
           created: datetime, public: bool = True) -> Submission:
    """A submission scored by the real task (the settings must allow it:
    EVALSERVER_DAILY_QUOTA = 0), then dated `created`."""
    submission = submission_create(owner=owner, benchmark=benchmark, model_name=model,
                                   public=public, files={f"{benchmark.slug}-test":
                                                         factories.upload_json(predicted)})
    task = f"home-{next(_task_ids)}"
    assert score_submission.apply(args=[submission.pk], task_id=task).get() == "scored"
    Submission.objects.filter(pk=submission.pk).update(created=created)
    benchmark_leaderboard_touch(benchmark_id=benchmark.pk)  # as any change of a board's rows
    return submission


def day(n: int) -> datetime:
    return datetime(2024, 3, n, 12, tzinfo=UTC)


def reviews_add(folder: Path) -> dict[str, Submission]:
    """A text benchmark, `toy-reviews`, with the table's three public models (alice's m1 and
    m2, bob's m3) and carol's private one, dated after them; an image benchmark,
    `toy-pictures`, with none; a hidden one, `toy-hidden`."""
    benchmark = toy_add(folder, slug="toy-reviews", name="Toy reviews", modality="text")
    alice, bob = factories.user_create("alice"), factories.user_create("bob")
    subs = {"m1": scored(benchmark, alice, "m1", M1, created=day(1)),
            "m3": scored(benchmark, bob, "m3", M3, created=day(7)),
            "m2": scored(benchmark, alice, "m2", M2, created=day(5)),
            "private": scored(benchmark, factories.user_create("carol"), "private", M3,
                              created=day(20), public=False)}
    toy_add(folder, slug="toy-pictures", name="Toy pictures", modality="image")
    hidden = toy_add(folder, slug="toy-hidden", name="Toy hidden", modality="image")
    Benchmark.objects.filter(pk=hidden.pk).update(hidden=True)
    return subs
