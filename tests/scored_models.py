"""Real CIFAR-10 models scored in-process: the `scored_models` fixture (registered by
tests/conftest.py) and helpers to submit and score a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission
from leaderboard.tasks.cpu import score_submission
from tests import factories

# Three real CIFAR-10 models (published predictions, modestyachts/CIFAR-10.1) whose order
# changes between label sets: on cifar10.1-v6 the last on original comes first.
MODELS = ("resnet_basic_110", "vgg16_keras", "resnet_preact_basic_110")



submit_model = factories.submission_for_model


def score_in_process(submission: Submission) -> str:
    """Run the real scoring task body in this process (no broker)."""
    result: str = score_submission.apply(args=(submission.pk,),
                                         task_id=f"web-{submission.pk}").get()
    return result


def predictions(data_dir: Path, model: str, example_set: str) -> np.ndarray:
    path = factories.cifar10_model_files(data_dir, model)[example_set]
    return np.array(json.loads(path.read_text()))


@pytest.fixture
def scored_models(loaded: Settings, data_dir: Path) -> dict[str, Submission]:
    """The three models, submitted by three users and scored, in MODELS order."""
    out = {}
    for model in MODELS:
        submission = submit_model(data_dir, model)
        assert score_in_process(submission) == "scored"
        out[model] = submission
    return out
