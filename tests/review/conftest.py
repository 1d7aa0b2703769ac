"""Fixtures of the review tests: maintainers, a bare benchmark, real ImageNet submissions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User

from leaderboard.catalog.models import LabelSet
from leaderboard.submissions.models import Submission
from tests import factories
from workers.scoring import datasets


def reviewers(n: int, prefix: str = "reviewer") -> list[User]:
    """n reviewers of the site team (which owns the built-in benchmarks)."""
    return [factories.reviewer_create(f"{prefix}{i}") for i in range(n)]


def resnet50_top1(data_dir: Path) -> np.ndarray:
    """The real cleanlab cross-validated ResNet-50 top-1, in canonical (file-number) order."""
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    return datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)


def submit_imagenet(top1: np.ndarray, tmp_path: Path, name: str) -> Submission:
    """Submit top-1 predictions for imagenet-val as a new user, scored in this process."""
    return factories.submission_scored("imagenet", "imagenet-val", top1, tmp_path, name)


@pytest.fixture
def bare_label_set(db: None) -> LabelSet:
    """A benchmark with one label set and no versions: enough for queues and permissions."""
    return factories.toy_label_set()
