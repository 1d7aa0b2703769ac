"""Fixtures for the label-audit tests: the real MNIST test set (images, labels, the
cross-validated probabilities of cleanlab/label-errors) and a small set with injected noise."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import mnist_labels, mnist_probs
from workers.scoring import datasets


@pytest.fixture(scope="session", name="mnist_labels")
def mnist_labels_fixture(data_dir: Path) -> np.ndarray:
    return mnist_labels(data_dir)


@pytest.fixture(scope="session", name="mnist_probs")
def mnist_probs_fixture(data_dir: Path) -> np.ndarray:
    return mnist_probs(data_dir)


@pytest.fixture(scope="session")
def mnist_images(data_dir: Path) -> np.ndarray:
    return datasets.read_mnist_images(data_dir)


@dataclass(frozen=True)
class NoisySet:
    images: np.ndarray
    labels: np.ndarray  # with the flips
    flipped: np.ndarray  # indices whose label was changed, sorted


@pytest.fixture(scope="session")
def noisy_mnist(mnist_images: np.ndarray, mnist_labels: np.ndarray) -> NoisySet:
    """The first 1,000 MNIST test images with 10% of labels flipped (seed 0) to another class."""
    rng = np.random.default_rng(0)
    labels = mnist_labels[:1000].copy()
    flipped = np.sort(rng.choice(1000, size=100, replace=False))
    labels[flipped] = (labels[flipped] + rng.integers(1, 10, size=100)) % 10
    assert (labels[flipped] != mnist_labels[flipped]).all()
    return NoisySet(mnist_images[:1000], labels, flipped)
