"""A new label-set version is published (becomes what boards and the API show) only once every
scored submission has its score on it; until then the public board keeps the previous
version's figures and says the label set is being re-scored (docs/metrics.md §14)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get, label_set_version_current
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score
from leaderboard.submissions.selectors import submission_scores
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import rescore_version, score_submission
from tests import factories
from tests.conftest import wait_for_status
from tests.review.conftest import resnet50_top1, reviewers, submit_imagenet
from workers.scoring import revisions

BOARD = "/api/benchmarks/imagenet/leaderboard/"
# The worker sleeps this long after claiming a submission, and a re-scoring this long between
# storing its scores and publishing the version: the window the test looks through.
DELAY_MS = 5000


def real_accuracy(version: LabelSetVersion, top1: np.ndarray) -> float:
    """ReaL top-1 accuracy computed directly from the version's arrays: the share of images
    with a non-empty label list whose prediction is in it (docs/metrics.md §4)."""
    arrays = compiled_for_version(version).arrays
    keys = np.arange(top1.size) * 1000 + top1
    hits = np.isin(keys, arrays["accepted_keys"])[arrays["mask"]]
    return int(hits.sum()) / int(hits.size)


def real_column(board: dict[str, Any]) -> dict[str, Any]:
    """The real column's version fields."""
    column = next(c for c in board["columns"] if c["slug"] == "real")
    return {key: column[key] for key in ("version", "version_hash", "rescoring",
                                         "pending_version")}


def real_figures(board: dict[str, Any]) -> dict[int, float]:
    return {row["submission_id"]: row["scores"]["real"]["accuracy"] for row in board["rows"]}


def page_header(html: str) -> str:
    """The real column's header cell of the board page."""
    return html.split('data-label-set="real"', 1)[1].split("</th>", 1)[0]


@pytest.fixture
def slow_worker(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    monkeypatch.setenv("EVALSERVER_SCORING_DELAY_MS", str(DELAY_MS))
    log: Path = request.getfixturevalue("scoring_worker")
    return log


def _wait(condition: Any, what: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} after {timeout} s\n{log.read_text()}")
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("problematic", [False, True], ids=["incremental", "full"])
def test_it_keeps_every_previous_figure_on_the_board_until_the_new_version_is_scored(
    loaded: Settings, data_dir: Path, tmp_path: Path, problematic: bool,
    request: pytest.FixtureRequest,
) -> None:
    top1 = resnet50_top1(data_dir)
    other = top1.copy()
    other[:1000] = (other[:1000] + 1) % 1000  # a second model, the same beyond image 1000
    models = {"resnet50": top1, "other": other}
    subs = {}
    for name, predictions in models.items():
        subs[name] = submission_create(
            owner=factories.user_create(name), model_name=name,
            benchmark=benchmark_get(slug="imagenet"),
            files={"imagenet-val": factories.upload_npy(predictions, tmp_path, f"{name}.npy")})
        # scored here, as the worker's task does, without the worker's pause (only the
        # re-scoring's window is looked through); the worker started below finds their
        # messages and skips them: they are scored
        assert score_submission.apply(args=[subs[name].pk]).get() == "scored"
    slow_worker: Path = request.getfixturevalue("slow_worker")
    for submission in subs.values():
        assert wait_for_status(submission.pk, ("scored", "failed"), timeout=240,
                               log=slow_worker) == "scored"
    real = LabelSetVersion.objects.get(label_set__benchmark__slug="imagenet",
                                       label_set__slug="real")
    before = {s.pk: real_accuracy(real, models[n]) for n, s in subs.items()}
    board = APIClient().get(BOARD).json()
    assert real_figures(board) == before
    # a pair both models predict top-1 and nobody has judged: three reviewers accept it (the
    # changed pair: an incremental re-scoring), or find it wrong and flag the image's labels
    # (the image leaves the evaluated set: a full one)
    item = (ReviewItem.objects.filter(label_set=real.label_set, example_index__gte=1000)
            .order_by("id").first())
    assert item is not None
    for reviewer in reviewers(3):
        review.review_vote_cast(item_id=item.pk, reviewer=reviewer,
                                verdict="wrong" if problematic else "correct",
                                problematic=problematic)
    new = LabelSetVersion.objects.get(label_set=real.label_set, number=2)
    incremental = rescoring._changed_pairs(compiled_for_version(real),
                                        compiled_for_version(new)) is not None
    assert incremental is not problematic  # the path the worker takes
    after = {s.pk: real_accuracy(new, models[n]) for n, s in subs.items()}
    assert after != before

    def shows_previous(board: dict[str, Any]) -> None:
        assert real_column(board) == {"version": 1, "version_hash": real.content_hash,
                                      "rescoring": True, "pending_version": 2}
        assert real_figures(board) == before
        html = Client().get("/benchmarks/imagenet/?sort=real").content.decode()
        assert "re-scoring v2…" in page_header(html) and ">v1<" in page_header(html)
        assert "re-scoring version 2" in html

    # the decision has committed; the worker is re-scoring (or about to)
    shows_previous(APIClient().get(BOARD).json())
    assert label_set_version_current(label_set=real.label_set) == real
    # every new score is stored on the new version, and it is still not shown
    on_new = Score.objects.filter(label_set_version=new)
    _wait(lambda: on_new.count() == 2, "no score on version 2", slow_worker)
    shows_previous(APIClient().get(BOARD, {"sort": "real"}).json())
    new.refresh_from_db()
    assert new.published is None  # the board above was read inside the window
    assert {s.submission_id: s.accuracy for s in on_new} == after
    # published with its last scores: the board moves to it, every figure at once
    _wait(lambda: LabelSetVersion.objects.get(pk=new.pk).published is not None,
          "version 2 not published", slow_worker)
    board = APIClient().get(BOARD).json()
    assert real_column(board) == {"version": 2, "version_hash": new.content_hash,
                                  "rescoring": False, "pending_version": None}
    assert real_figures(board) == after
    html = Client().get("/benchmarks/imagenet/?sort=real").content.decode()
    assert ">v2<" in page_header(html) and "re-scoring" not in html
    default = APIClient().get("/api/benchmarks/imagenet/").json()
    assert next(ls for ls in default["label_sets"] if ls["slug"] == "real")["version"] == 2


@pytest.mark.django_db
def test_it_scores_a_submission_made_meanwhile_on_both_versions(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    top1 = resnet50_top1(data_dir)
    first = submit_imagenet(top1, tmp_path, "first")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    real = item.label_set.versions.get(number=1)
    # a decision: version 2, whose re-scoring has not run (no worker here)
    new = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(item.example_index, item.class_id, "correct")])
    assert new.published is None
    assert label_set_version_current(label_set=item.label_set) == real
    history = "/api/benchmarks/imagenet/label-sets/real/versions/"
    listed = APIClient().get(history).json()
    assert [(v["number"], v["published"] is None) for v in listed] == [(2, True), (1, False)]
    second = submit_imagenet(top1, tmp_path, "second")

    # the new submission has its score on both; the first only on version 1 so far
    assert set(Score.objects.filter(label_set__slug="real", submission=second)
               .values_list("label_set_version__number", flat=True)) == {1, 2}
    assert Score.objects.get(submission=second, label_set_version=new).accuracy == \
        real_accuracy(new, top1)
    assert not Score.objects.filter(submission=first, label_set_version=new).exists()
    board = APIClient().get(BOARD).json()
    assert real_column(board)["version"] == 1 and real_column(board)["rescoring"] is True
    assert real_figures(board) == {s.pk: real_accuracy(real, top1) for s in (first, second)}
    # the submission's own page shows the published version too
    assert submission_scores(submission=second)["real"].label_set_version == real

    assert rescore_version.apply(args=[new.pk], task_id="rescore").get() == "done"

    new.refresh_from_db()
    assert new.published is not None
    assert APIClient().get(history).json()[0]["published"] == \
        new.published.isoformat().replace("+00:00", "Z")
    board = APIClient().get(BOARD).json()
    assert real_column(board)["version"] == 2 and real_column(board)["rescoring"] is False
    assert real_figures(board) == {s.pk: real_accuracy(new, top1) for s in (first, second)}


@pytest.mark.django_db
def test_it_does_not_publish_while_a_scored_submission_lacks_its_score(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    top1 = resnet50_top1(data_dir)
    first = submit_imagenet(top1, tmp_path, "first")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    new = review.label_set_version_revise(
        label_set=item.label_set, items=[item], author=None,
        verdicts=[revisions.Verdict(item.example_index, item.class_id, "wrong")])
    second = submit_imagenet(top1, tmp_path, "second")
    # as if the second had been scored in the moment before the version existed, and the
    # version's re-scoring had gone through the scored submissions before it was one of them
    Score.objects.filter(submission=second, label_set_version=new).delete()
    first_files = rescoring._scored_files(new.label_set).filter(submission=first)
    assert rescoring._rescore_rows(new, compiled_for_version(new), first_files) == 1

    assert rescoring._publish_when_complete(new) is False
    new.refresh_from_db()
    assert new.published is None
    assert label_set_version_current(label_set=item.label_set).number == 1
    # its re-scoring, asked for again by that submission, scores both and publishes
    assert rescoring.label_set_version_rescore(version_id=new.pk) == 2
    new.refresh_from_db()
    published = new.published
    assert published is not None
    assert label_set_version_current(label_set=item.label_set) == new
    assert set(Score.objects.filter(label_set_version=new)
               .values_list("submission_id", flat=True)) == {first.pk, second.pk}
    assert rescoring.label_set_version_rescore(version_id=new.pk) == 2  # again: published once
    new.refresh_from_db()
    assert new.published == published
