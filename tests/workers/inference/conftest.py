"""Fixtures for the checkpoint tests: the real MNIST test images, preprocessed once, and a
small MNIST CNN really trained on part of them (seeded, a few seconds on CPU)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.workers.inference.support import MNIST
from workers.inference import ImageSource, architectures, load_images

TRAIN_IMAGES = 2000


@pytest.fixture(scope="session")
def mnist_images(data_dir: Path) -> np.ndarray:
    """The 10,000 real MNIST test images as the server preprocesses them."""
    return load_images(ImageSource("idx", data_dir / "mnist/t10k-images-idx3-ubyte.gz"),
                       inputs=MNIST, size=10000)


@pytest.fixture(scope="session")
def mnist_labels(data_dir: Path) -> np.ndarray:
    with gzip.open(data_dir / "mnist/t10k-labels-idx1-ubyte.gz", "rb") as handle:
        raw = handle.read()
    return np.frombuffer(raw[8:], dtype=np.uint8).astype(np.int64)


@pytest.fixture(scope="session")
def trained_mnist(mnist_images: np.ndarray, mnist_labels: np.ndarray) -> torch.nn.Module:
    """The server's MNIST CNN after one seeded epoch on the first 2,000 real test images."""
    torch.manual_seed(0)
    # channels-last trains this CNN about ten times faster on CPU; the weights are the same
    layout = torch.channels_last
    model = architectures.build("mnist-cnn").to(memory_format=layout).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    images = torch.from_numpy(mnist_images[:TRAIN_IMAGES]).contiguous(memory_format=layout)
    labels = torch.from_numpy(mnist_labels[:TRAIN_IMAGES])
    order = torch.randperm(TRAIN_IMAGES, generator=torch.Generator().manual_seed(0))
    for start in range(0, TRAIN_IMAGES, 50):
        batch = order[start : start + 50]
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images[batch]), labels[batch])
        loss.backward()
        optimizer.step()
    # back to the default layout: safetensors saves only contiguous tensors
    return model.to(memory_format=torch.contiguous_format).eval()
