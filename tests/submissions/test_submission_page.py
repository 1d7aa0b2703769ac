"""A submission's page: status, every metric, who may see it, the owner's public switch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from django.utils.html import escape
from pytest_django.fixtures import Settings
from scipy.stats import binomtest

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.templatetags.leaderboard_extras import percent
from tests import factories
from tests.pages import leaderboard_table, score_tables
from tests.scored_models import predictions, score_in_process, submit_model
from workers.scoring.stats import accuracy_record

pytestmark = pytest.mark.django_db


def _cp(correct: int, total: int) -> str:
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="exact")
    return f"{percent(interval.low)}–{percent(interval.high)}"


def _row(label: str, correct: int, total: int) -> list[str]:
    return [label, f"{percent(correct / total)}%", f"{correct:,} / {total:,}", _cp(correct, total)]


def _version(slug: str) -> LabelSetVersion:
    return LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10", label_set__slug=slug)


def test_it_shows_every_metric_of_a_scored_submission(
    client: Client, loaded: Settings, data_dir: Path
) -> None:
    submission = submit_model(data_dir, "vgg16_keras")
    assert score_in_process(submission) == "scored"
    labels = np.load(data_dir / "cifar10/original_labels.npy")
    v6_labels = np.load(data_dir / "cifar10/cifar10.1_v6_labels.npy")
    original = int((predictions(data_dir, "vgg16_keras", "cifar10-test") == labels).sum())
    v6 = int((predictions(data_dir, "vgg16_keras", "cifar10.1-v6") == v6_labels).sum())
    corrected = Score.objects.get(submission=submission, label_set__slug="corrected")
    human = Score.objects.get(submission=submission, label_set__slug="cifar10h").record

    response = client.get(f"/submissions/{submission.pk}/")  # anonymous: public and scored

    assert response.status_code == 200
    page = response.content.decode()
    assert '<strong class="status-badge status-scored" id="status-text">scored</strong>' in page
    assert "leaderboard/status.js" not in page  # nothing to poll
    tables, versions = score_tables(page)
    assert list(tables) == [v.label_set.slug for v in
                            LabelSetVersion.objects.filter(label_set__benchmark__slug="cifar10")
                            .order_by("label_set_id")]
    assert tables["original"] == [_row("Top-1 accuracy", original, 10_000)]
    version = _version("original")
    assert versions["original"] == (f"on cifar10-test · label set version 1 "
                                    f"{version.content_hash[:12]}")
    assert tables["cifar10.1-v6"] == [
        _row("Top-1 accuracy", v6, 2_000),
        ["Gap to original accuracy (original test set accuracy minus this one)",
         f"{(original / 10_000 - v6 / 2_000) * 100:.2f} points"],
    ]
    acc1, cacc1 = corrected.record["correctable"]["acc1"], corrected.record["correctable"]["cacc1"]
    pruned = corrected.record["original_on_pruned"]
    assert tables["corrected"] == [
        _row("Top-1 accuracy on corrected labels (pruned set)", corrected.correct,
             corrected.total),
        _row("Correctable set: Acc@1 (original labels)", acc1["correct"], acc1["total"]),
        _row("Correctable set: cAcc@1 (corrected labels)", cacc1["correct"], cacc1["total"]),
        _row("Original labels on the same pruned set", pruned["correct"], pruned["total"]),
    ]
    probs = np.load(data_dir / "cifar10/cifar10h_probs.npy")
    top1 = predictions(data_dir, "vgg16_keras", "cifar10-test")
    agreement = float(probs[np.arange(10_000), top1].mean())
    plurality = int((probs[np.arange(10_000), top1] == probs.max(axis=1)).sum())
    assert tables["cifar10h"] == [
        _row("Plurality accuracy (human majority class)", plurality, 10_000),
        ["Human agreement (mean human probability of the prediction)",
         f"{percent(agreement)}%", "10,000 examples",
         f"{percent(human['human_agreement']['ci_low'])}–"
         f"{percent(human['human_agreement']['ci_high'])}"],
    ]  # integer predictions: no probabilities, so no cross-entropy line


def test_it_shows_top5_and_the_imagenet_families_extras(
    client: Client, loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    """Top-5 from a real score matrix; the multi-label and ImageNet-M lines (with the novel
    predictions awaiting review) from records of those families written onto CIFAR-10 rows,
    since the ImageNet multi-label file is optional."""
    labels = np.load(data_dir / "cifar10/original_labels.npy")
    rng = np.random.default_rng(0)
    scores = rng.random((10_000, 10)).astype(np.float32)
    scores[np.arange(10_000), labels] += 0.5 * (rng.random(10_000) < 0.9)
    owner = factories.user_create("erin")
    submission = submission_create(
        owner=owner, benchmark=factories.cifar10(), model_name="logits",
        files={"cifar10-test": factories.upload_npy(scores, tmp_path)})
    assert score_in_process(submission) == "scored"
    top1 = scores.argmax(axis=1)
    top5 = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    correct1 = int((top1 == labels).sum())
    correct5 = int((top5 == labels[:, None]).any(axis=1).sum())
    multilabel = Score.objects.get(submission=submission, label_set__slug="cifar10h")
    Score.objects.filter(pk=multilabel.pk).update(**accuracy_record(9_000, 9_500), record={
        **multilabel.record, "family": "multilabel", "novel_count": 17,
        "collapsed": accuracy_record(9_100, 9_500), "organism": accuracy_record(4_000, 4_300),
        "object": accuracy_record(5_000, 5_200)})
    miss = {"index": 41, "file": "ILSVRC2012_val_00000042.JPEG", "predicted": 5,
            "predicted_name": "electric ray"}
    Score.objects.filter(submission=submission, label_set__slug="corrected").update(
        **accuracy_record(67, 68), record={"family": "subset", "misses": [miss]})

    client.force_login(owner)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()

    tables, _ = score_tables(page)
    assert tables["original"] == [_row("Top-1 accuracy", correct1, 10_000),
                                  _row("Top-5 accuracy", correct5, 10_000)]
    assert tables["cifar10h"] == [
        _row("Multi-label accuracy (top-1)", 9_000, 9_500),
        _row("With class collapse", 9_100, 9_500),
        _row("Organism classes", 4_000, 4_300),
        _row("Object classes", 5_000, 5_200),
        ["Predictions awaiting review", "17"],
    ]
    assert tables["corrected"] == [["Correct of the listed images", "67 of 68"],
                                   _row("Accuracy", 67, 68)]
    assert "1 miss (file, predicted class)" in page
    assert "<code>ILSVRC2012_val_00000042.JPEG</code>: electric ray (5)" in page
    assert "<strong>17</strong> on <code>cifar10h</code>" in page


def test_it_shows_why_a_submission_failed(client: Client, loaded: Settings,
                                          data_dir: Path) -> None:
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0  # past the in-request check: the worker's
    owner = factories.user_create("frank")
    preds = [3] * 10_000
    preds[17] = 10
    submission = submission_create(
        owner=owner, benchmark=factories.cifar10(), model_name="bad",
        files={"cifar10-test": factories.upload_json(preds)})
    assert score_in_process(submission) == "failed"
    submission.refresh_from_db()
    client.force_login(owner)

    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    status = client.get(f"/submissions/{submission.pk}/status.json")

    assert '<strong class="status-badge status-failed" id="status-text">failed</strong>' in page
    assert submission.failure_reason.startswith("cifar10-test: ")
    assert "row 17" in submission.failure_reason
    assert f"<strong>Why:</strong> {escape(submission.failure_reason)}</p>" in page
    assert status.json() == {"id": submission.pk, "status": "failed",
                             "failure_reason": submission.failure_reason, "hint": ""}
    assert "no-cache" in status["Cache-Control"]


def test_it_polls_while_queued(client: Client, loaded: Settings, data_dir: Path) -> None:
    submission = submit_model(data_dir, "vgg16_keras")
    client.force_login(submission.owner)

    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    status = client.get(f"/submissions/{submission.pk}/status.json")

    assert f'data-poll-url="/submissions/{submission.pk}/status.json"' in page
    assert "leaderboard/status.js" in page
    assert "This page updates itself when scoring finishes." in page
    assert status.json() == {"id": submission.pk, "status": "queued", "failure_reason": "",
                             "hint": "waiting for a worker to score it."}
    assert '<span id="status-hint">waiting for a worker to score it.</span>' in page


def test_it_hides_private_and_unscored_submissions_from_others(
    client: Client, loaded: Settings, data_dir: Path
) -> None:
    private = submit_model(data_dir, "vgg16_keras", public=False)
    assert score_in_process(private) == "scored"
    queued = submit_model(data_dir, "resnet_basic_110")  # public, not scored yet
    other = factories.user_create("mallory")
    staff = factories.host_create("staff")
    paths = [f"/submissions/{private.pk}/", f"/submissions/{private.pk}/status.json",
             f"/submissions/{queued.pk}/", f"/submissions/{queued.pk}/status.json"]

    anonymous = [client.get(p).status_code for p in paths]
    client.force_login(other)
    as_other = [client.get(p) for p in paths]
    client.force_login(staff)
    as_staff = [client.get(p).status_code for p in paths]
    client.force_login(private.owner)
    as_owner = client.get(paths[0]).status_code

    assert anonymous == [404, 404, 404, 404]
    assert [r.status_code for r in as_other] == [404, 404, 404, 404]
    assert as_other[0]["Content-Type"].startswith("text/html")
    assert "There is no page here, or it is private." in as_other[0].content.decode()
    assert as_staff == [200, 200, 200, 200]
    assert as_owner == 200


def test_it_lets_only_the_owner_switch_public_and_private(
    client: Client, loaded: Settings, data_dir: Path
) -> None:
    submission = submit_model(data_dir, "vgg16_keras")
    assert score_in_process(submission) == "scored"
    url = f"/submissions/{submission.pk}/visibility/"
    client.force_login(factories.user_create("mallory"))
    assert client.post(url, {"public": "0"}).status_code == 404
    assert Submission.objects.get(pk=submission.pk).public is True

    client.force_login(submission.owner)
    assert ">Make private</button>" in client.get(f"/submissions/{submission.pk}/").content.decode()
    response = client.post(url, {"public": "0"})

    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    assert Submission.objects.get(pk=submission.pk).public is False
    assert leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1] == []
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert ">Make public</button>" in page
    client.post(url, {"public": "1"})
    rows = leaderboard_table(client.get("/benchmarks/cifar10/").content.decode())[1]
    assert [r.model for r in rows] == ["vgg16_keras"]


def test_it_lists_the_users_own_submissions(client: Client, loaded: Settings,
                                            data_dir: Path) -> None:
    owner = factories.user_create("grace")
    scored = submit_model(data_dir, "vgg16_keras", owner=owner)
    assert score_in_process(scored) == "scored"
    queued = submit_model(data_dir, "resnet_basic_110", owner=owner, public=False)
    someone_else = submit_model(data_dir, "resnet_preact_basic_110")
    original = Score.objects.get(submission=scored, label_set__slug="original")
    client.force_login(owner)

    page = client.get("/submissions/").content.decode()

    assert f'id="submission-{scored.pk}"' in page and f'id="submission-{queued.pk}"' in page
    assert f'id="submission-{someone_else.pk}"' not in page
    assert page.index(f'id="submission-{queued.pk}"') < page.index(f'id="submission-{scored.pk}"')
    assert f'<td class="num">{percent(original.accuracy)}%</td>' in page
    assert '<span class="status-badge status-queued">queued</span>' in page
