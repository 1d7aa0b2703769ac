"""A hidden label set end to end on the web side (docs/metrics.md §17): a bundle declares one
(`hidden = true`, the Ladder with step 0.25), three submissions of one participant are scored
by the worker's task, and only what the Ladder releases reaches the API, the submission page
and the board; the label set's history and export are refused. The expected releases are
worked out by hand below, not by the release core."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from evalserver_client.cli import report
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.review.label_exchange import LabelIOError, labels_export
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, npy_bytes, write_bundle

pytestmark = pytest.mark.django_db

SECRET = [0, 1, 2, 2, 1, 0]
# Three submissions of one participant, in order, and their hits on SECRET:
FIRST = [0, 1, 2, 0, 0, 1]  # 3 of 6: loss 0.5, the first release: [0.5]_0.25 = 0.5
SECOND = [0, 1, 2, 2, 0, 1]  # 4 of 6: loss 1/3 is not below 0.5 - 0.25: nothing released
THIRD = [0, 1, 2, 2, 1, 0]  # 6 of 6: loss 0 < 0.25: released [0]_0.25 = 0, accuracy 1.0


@pytest.fixture
def toy_with_secret(catalog_settings: Settings, tmp_path: Path) -> Benchmark:
    document = manifest()
    document["label_sets"].append({"slug": "secret", "kind": "single", "name": "Secret",
                                   "labels": "secret.npy", "hidden": True,
                                   "release": "ladder", "step": 0.25})
    files = {**data_files(), "secret.npy": npy_bytes(np.array(SECRET, dtype=np.int64))}
    path = write_bundle(tmp_path / "bundle", document, files)
    call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return factories.participation_open(Benchmark.objects.get(slug="toy"))


def _scored(benchmark: Benchmark, owner: object, name: str, predicted: list[int]) -> Submission:
    submission = submission_create(owner=owner, benchmark=benchmark, model_name=name,
                                   files={"toy-test": factories.upload_json(predicted)})
    assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == "scored"
    return submission


def test_it_releases_only_what_the_ladder_gives(toy_with_secret: Benchmark) -> None:
    secret = LabelSet.objects.get(benchmark=toy_with_secret, slug="secret")
    assert (secret.labels_hidden, secret.release, secret.release_step) == (True, "ladder", 0.25)
    owner = factories.user_create("researcher")
    first, second, third = (_scored(toy_with_secret, owner, name, predicted) for name, predicted
                            in (("first", FIRST), ("second", SECOND), ("third", THIRD)))
    # the scores are kept (re-scoring and the reveal need them), and read only on purpose
    assert sorted(Score.with_hidden.filter(label_set=secret).values_list(
        "submission_id", "correct")) == [(first.pk, 3), (second.pk, 4), (third.pk, 6)]
    assert not Score.objects.filter(label_set=secret).exists()

    api = APIClient()
    api.force_authenticate(owner)
    answers = {s.pk: api.get(f"/api/submissions/{s.pk}/").json() for s in (first, second, third)}
    for answer in answers.values():
        assert "secret" not in answer["scores"]
    picked = {pk: {k: a["releases"][0][k] for k in ("label_set", "improved", "released", "best",
                                                   "mechanism", "step", "total")}
              for pk, a in answers.items()}
    ladder = {"label_set": "secret", "mechanism": "ladder", "step": 0.25, "total": 6}
    assert picked == {
        first.pk: {**ladder, "improved": True, "released": 0.5, "best": 0.5},
        second.pk: {**ladder, "improved": False, "released": None, "best": 0.5},
        third.pk: {**ladder, "improved": True, "released": 1.0, "best": 1.0},
    }
    assert answers[second.pk]["releases"][0]["message"] == (
        "Not released: it did not beat your released best, 50.00%, by more than the step "
        "0.25 the Ladder needs; the board still shows 50.00%.")

    board = Client().get("/api/benchmarks/toy/leaderboard/").json()
    cells = {row["submission_id"]: row["scores"].get("secret") for row in board["rows"]}
    assert cells[first.pk] is None and cells[second.pk] is None  # the best moved to the third
    assert (cells[third.pk]["accuracy"], cells[third.pk]["correct"]) == (1.0, None)
    by_secret = Client().get("/api/benchmarks/toy/leaderboard/?sort=secret").json()
    assert [(r["submission_id"], r["rank_ub"], r["mcnemar_p"]) for r in by_secret["rows"]] == [
        (third.pk, None, None)]

    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/submissions/{second.pk}/").content.decode()
    assert "Not released: it did not beat your released best" in page
    for query in ("", "?sort=secret"):
        assert Client().get(f"/benchmarks/toy/{query}").status_code == 200


def test_it_refuses_a_hidden_label_sets_history_and_export(toy_with_secret: Benchmark) -> None:
    assert Client().get("/benchmarks/toy/label-sets/secret/history/").status_code == 404
    versions = Client().get("/api/benchmarks/toy/label-sets/secret/versions/")
    assert versions.status_code == 404
    assert Client().get("/benchmarks/toy/label-sets/original/history/").status_code == 200
    with pytest.raises(LabelIOError, match="hidden label set"):
        labels_export(benchmark="toy", label_set="secret")


def test_it_prints_only_the_released_figures_in_the_client(toy_with_secret: Benchmark) -> None:
    owner = factories.user_create("researcher")
    _scored(toy_with_secret, owner, "first", FIRST)  # the released best, 50%
    second = _scored(toy_with_secret, owner, "second", SECOND)
    api = APIClient()
    api.force_authenticate(owner)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert report(api.get(f"/api/submissions/{second.pk}/").json()) == 0
    lines = printed.getvalue().splitlines()
    assert "secret" not in "".join(lines[:lines.index(
        "hidden label set  released  your best  mechanism")])
    assert lines[-2:] == [
        "secret                   -     50.00%     ladder",
        "secret: Not released: it did not beat your released best, 50.00%, by more than the "
        "step 0.25 the Ladder needs; the board still shows 50.00%."]
