"""Hosting a benchmark that takes checkpoints (docs/architecture.md, second worked example):
a tiny image test set whose bundle declares what a model receives (`[inputs]`) and where its
images are (`images`, docs/bundles.md §2.1 and §4.1), added as a host adds one, then an ONNX
model submitted to it is run by a real gpu-queue worker and scored. Nothing in the server
knows this benchmark's slug: the expected accuracy is computed here with NumPy from the
declared mean and std, not by the server's preprocessing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.bundle_loading import benchmark_bundle_add
from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import CheckpointFile, Score
from tests import factories
from tests.conftest import wait_for_status
from tests.workers.inference.test_end_to_end import export_onnx
from tests.workers.scoring.bundles.bundle_files import toml_dumps

SLUG = "tiny-rgb"
SIZE, CLASSES, SIDE = 12, 3, 8
MEAN, STD = (0.5, 0.4, 0.3), (0.25, 0.2, 0.15)
MANIFEST = {
    "schema": 1, "slug": SLUG, "name": "Tiny RGB", "modality": "image", "files": "data",
    "description": "Twelve 8x8 colour images of three classes.",
    "classes": {"count": CLASSES, "source": "inline", "names": ["red", "green", "blue"]},
    "inputs": {"shape": [3, SIDE, SIDE], "color": "RGB", "mean": list(MEAN), "std": list(STD)},
    "example_sets": [{"slug": "tiny-rgb-test", "name": "Tiny RGB test", "size": SIZE,
                      "images": {"format": "npy", "path": "tiny/images.npy"}}],
    "label_sets": [{"slug": "original", "kind": "single", "name": "Original labels",
                    "labels": "tiny/labels.npy"}],
}


def _linear_model() -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * SIDE * SIDE, CLASSES))
    return model.eval()


def _predicted(pixels: np.ndarray, model: torch.nn.Module) -> np.ndarray:
    """The model's classes on the declared inputs, by hand: NHWC uint8 -> NCHW, / 255,
    (x - mean) / std per channel, then the linear layer in float64."""
    x = pixels.transpose(0, 3, 1, 2) / 255.0
    x = (x - np.array(MEAN)[None, :, None, None]) / np.array(STD)[None, :, None, None]
    linear = model[1]
    weight = linear.weight.detach().numpy().astype(np.float64)
    bias = linear.bias.detach().numpy().astype(np.float64)
    return np.argmax(x.reshape(SIZE, -1) @ weight.T + bias, axis=1)


@pytest.fixture
def tiny_data_dir(catalog_settings: Settings, tmp_path: Path) -> Path:
    """The host's data directory (request before `scoring_worker`, which is then started
    with it): the images, the labels and the manifest."""
    data = tmp_path / "data"
    (data / "tiny").mkdir(parents=True)
    pixels = np.random.default_rng(7).integers(0, 256, (SIZE, SIDE, SIDE, 3), dtype=np.uint8)
    np.save(data / "tiny/images.npy", pixels)
    catalog_settings.EVALSERVER_DATA_DIR = data
    return data


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_runs_and_scores_a_checkpoint_on_a_hosted_image_benchmark(
    gpu_worker_queues: None, tiny_data_dir: Path, scoring_worker: Path, tmp_path: Path,
) -> None:
    model = _linear_model()
    pixels = np.load(tiny_data_dir / "tiny/images.npy")
    predicted = _predicted(pixels, model)
    # the first seven labels agree with the model, the other five do not: 7 of 12 correct
    labels = np.where(np.arange(SIZE) < 7, predicted, (predicted + 1) % CLASSES)
    np.save(tiny_data_dir / "tiny/labels.npy", labels.astype(np.int64))
    manifest = tiny_data_dir / "tiny.toml"
    manifest.write_text(toml_dumps(MANIFEST))
    benchmark_bundle_add(path=manifest, data_dir=tiny_data_dir)
    assert Benchmark.objects.get(slug=SLUG).inputs["input_shape"] == [3, SIDE, SIDE]

    client = APIClient()
    client.force_authenticate(factories.user_create("researcher"))
    with open(export_onnx(model, (3, SIDE, SIDE), tmp_path / "linear.onnx"), "rb") as handle:
        answer = client.post("/api/submissions/", {"benchmark": SLUG, "model_name": "linear",
                                                   "checkpoint": handle}, format="multipart")
    assert answer.status_code == 201, answer.json()
    submission_id = answer.json()["id"]
    assert wait_for_status(submission_id, ("scored", "failed"), timeout=240,
                           log=scoring_worker) == "scored"
    score = Score.objects.get(submission_id=submission_id, label_set__slug="original")
    assert (score.correct, score.total) == (7, SIZE)
    assert CheckpointFile.objects.get(submission_id=submission_id).format == "onnx"


@pytest.mark.django_db
def test_it_refuses_a_state_dict_where_the_bundle_names_no_network(
    tiny_data_dir: Path, tmp_path: Path,
) -> None:
    np.save(tiny_data_dir / "tiny/labels.npy", np.zeros(SIZE, dtype=np.int64))
    manifest = tiny_data_dir / "tiny.toml"
    manifest.write_text(toml_dumps(MANIFEST))
    benchmark_bundle_add(path=manifest, data_dir=tiny_data_dir)
    weights = tmp_path / "w.safetensors"
    from safetensors.torch import save_file

    save_file(_linear_model().state_dict(), str(weights))
    client = APIClient()
    client.force_authenticate(factories.user_create("researcher"))
    with open(weights, "rb") as handle:
        answer = client.post("/api/submissions/", {"benchmark": SLUG, "model_name": "w",
                                                   "checkpoint": handle}, format="multipart")
    error = answer.json()["error"]
    assert (answer.status_code, error["code"]) == (400, "unsupported_format")
    assert "this one names none: upload an ONNX model" in error["message"]
