"""Checkpoint submissions through the server: the API and the submit page take a model, a real
Celery worker on the gpu queue runs it in the sandbox and scores its predictions exactly as an
upload of those predictions is scored; a refused or failing model stores or breaks nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient
from safetensors.torch import save_file

from leaderboard.submissions.models import CheckpointFile, Score, Submission, SubmissionFile
from leaderboard.tasks.gpu import run_checkpoint
from tests import factories
from tests.conftest import wait_for_status
from tests.workers.inference import builders
from tests.workers.inference.test_end_to_end import direct, export_onnx


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _post(client: APIClient, name: str, **files):  # type: ignore[no-untyped-def]
    return client.post("/api/submissions/", {"benchmark": "mnist", "model_name": name, **files},
                       format="multipart")


def _records(submission_id: int) -> dict[str, tuple[int, int, int | None]]:
    """(correct, total, top-5 correct) per label set."""
    return {s.label_set.slug: (s.correct, s.total, (s.record.get("top5") or {}).get("correct"))
            for s in Score.objects.filter(submission_id=submission_id).select_related(
                "label_set")}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_scores_onnx_and_safetensors_checkpoints_as_their_predictions(
    gpu_worker_queues: None, loaded: Settings, tmp_path: Path, scoring_worker: Path,
    trained_mnist: torch.nn.Module, mnist_images: np.ndarray,
) -> None:
    onnx_path = export_onnx(trained_mnist, (1, 28, 28), tmp_path / "cnn.onnx")
    weights = tmp_path / "cnn.safetensors"
    save_file(trained_mnist.state_dict(), str(weights))
    scores = direct(trained_mnist, mnist_images)
    client = _api(factories.user_create("researcher"))
    with open(onnx_path, "rb") as a, open(weights, "rb") as b:
        ids = [_post(client, "cnn onnx", checkpoint=a).json()["id"],
               _post(client, "cnn safetensors", checkpoint=b).json()["id"]]
    ids.append(_post(client, "cnn predictions", **{
        "mnist-test": factories.upload_npy(scores, tmp_path, "scores.npy")}).json()["id"])
    assert list(Submission.objects.order_by("id").values_list("kind", flat=True)) == [
        "checkpoint", "checkpoint", "predictions"]

    for submission_id in ids:
        assert wait_for_status(submission_id, ("scored", "failed"), timeout=240,
                               log=scoring_worker) == "scored", \
            Submission.objects.get(id=submission_id).failure_reason
    predictions = _records(ids[2])
    assert set(predictions) == {"original", "corrected"}
    assert _records(ids[0]) == predictions
    assert _records(ids[1]) == predictions
    labels = np.load(Path(loaded.EVALSERVER_DATA_DIR) / "mnist/original_labels.npy")
    assert predictions["original"][:2] == (int((scores.argmax(axis=1) == labels).sum()), 10_000)
    for submission_id, fmt in zip(ids[:2], ("onnx", "safetensors"), strict=True):
        checkpoint = CheckpointFile.objects.get(submission_id=submission_id)
        assert (checkpoint.format, checkpoint.device) == (fmt, "cpu")
        assert checkpoint.images_per_second is not None and checkpoint.images_per_second > 0
        (row,) = SubmissionFile.objects.filter(submission_id=submission_id)
        assert (row.example_set.slug, row.original_name) == ("mnist-test", "cnn on mnist-test.npy")
    body = client.get(f"/api/submissions/{ids[0]}/").json()
    assert (body["kind"], body["checkpoint"]["format"], body["checkpoint"]["original_name"]) \
        == ("checkpoint", "onnx", "cnn.onnx")
    page = Client().get(f"/submissions/{ids[1]}/").content.decode()
    assert "cnn.safetensors (safetensors state dict" in page and "ran on cpu at" in page


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["model.pt", "model.pth", "model.safetensors", "model.onnx",
                                  "model.npy"])
def test_it_refuses_a_pickle_and_stores_nothing(loaded: Settings, tmp_path: Path,
                                                name: str) -> None:
    target = tmp_path / "created-by-unpickling"
    upload = factories.upload_from_path(_write(tmp_path / name, builders.hostile_pickle(target)))
    response = _post(_api(factories.user_create()), "evil", checkpoint=upload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "checkpoint"
    assert error["code"] == "pickle_refused"  # told by its bytes, whatever its name
    assert not target.exists()
    assert not Submission.objects.exists() and not CheckpointFile.objects.exists()
    assert not (Path(loaded.MEDIA_ROOT) / "checkpoints").exists()


@pytest.mark.django_db
def test_it_refuses_a_checkpoint_with_predictions_files(loaded: Settings,
                                                        tmp_path: Path) -> None:
    model = builders.save(builders.linear_model(), tmp_path / "m.onnx")
    response = _post(_api(factories.user_create()), "both",
                     checkpoint=factories.upload_from_path(model),
                     **{"mnist-test": factories.upload_npy(np.zeros(10_000, np.int64), tmp_path)})
    assert (response.status_code, response.json()["error"]["code"]) == (
        400, "checkpoint_and_predictions")
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_it_fails_a_crashing_model_with_its_reason_and_runs_the_next(
    loaded: Settings, tmp_path: Path
) -> None:
    client = _api(factories.user_create())
    crashing = builders.save(builders.failing_model(), tmp_path / "crash.onnx")
    fine = builders.save(builders.linear_model(), tmp_path / "fine.onnx")
    ids = [_post(client, name, checkpoint=factories.upload_from_path(path)).json()["id"]
           for name, path in (("crash", crashing), ("fine", fine))]
    assert [run_checkpoint.apply(args=[i], task_id=f"gpu-{i}").get() for i in ids] == [
        "failed", "scored"]
    crashed = Submission.objects.get(id=ids[0])
    assert crashed.failure_code == "model_crashed"
    assert "Reshape" in crashed.failure_reason or "reshape" in crashed.failure_reason
    assert not SubmissionFile.objects.filter(submission_id=ids[0]).exists()
    assert set(_records(ids[1])) == {"original", "corrected"}


@pytest.mark.django_db
def test_it_documents_the_input_on_the_submit_page(loaded: Settings, client: Client) -> None:
    client.force_login(factories.user_create())
    html = client.get("/submit/").content.decode()
    section = html.split('id="checkpoint"', 1)[1].split("</fieldset>", 1)[0]
    assert "Run on: <code>mnist-test</code>." in section
    assert "(x - mean) / std with mean (0.1307) and std (0.3081)" in section
    assert "This server has no imagenet images: submit predictions instead." in section


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.django_db
def test_it_leaves_an_onnx_graph_to_the_worker_which_refuses_it_by_name(
    loaded: Settings, tmp_path: Path
) -> None:
    """The web process does not parse ONNX graphs (~27x the file in memory): a model with a
    custom operator is accepted at upload, and the gpu task fails it with the named reason
    its sandboxed child gives, storing no predictions."""
    custom = builders.save(builders.with_custom_op(), tmp_path / "custom.onnx")
    response = _post(_api(factories.user_create()), "custom",
                     checkpoint=factories.upload_from_path(custom))
    assert response.status_code == 201
    submission_id = response.json()["id"]
    assert run_checkpoint.apply(args=[submission_id], task_id="gpu-custom").get() == "failed"
    failed = Submission.objects.get(id=submission_id)
    assert failed.failure_code == "onnx_custom_domain"
    assert failed.failure_reason == (
        "the model imports operator domain 'com.example.evil'; only the standard "
        "ONNX operators (domain '' / 'ai.onnx') are accepted")
    assert not SubmissionFile.objects.filter(submission_id=submission_id).exists()
