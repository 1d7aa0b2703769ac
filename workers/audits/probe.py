"""A small CNN probe trained on an example set's given labels, recording every example's loss.

The AUL audit (Pleiss et al., "Detecting Noisy Training Data with Loss Curves") needs, for
each example, its loss at each epoch of training on the (possibly noisy) labels: examples
the network learns through generalisation have a low loss early, mislabeled ones only fall
once memorised, so the sum over epochs separates them.

Which loss is recorded: the training-pass loss, i.e. each example's cross-entropy in the
forward pass of its own minibatch, before that minibatch's optimizer step. This is what the
paper uses (training dynamics), costs nothing extra, and, measured on MNIST with 10% flipped
labels, separated noisy from clean better than a separate evaluation pass after each epoch
(which also took over twice as long). The probe has no dropout or batch norm, so train and
eval mode compute the same function anyway.

Determinism: weights come from `torch.manual_seed(seed)` inside `torch.random.fork_rng` (the
caller's global RNG is left as it was), the epoch order from a seeded `torch.Generator`,
`torch.use_deterministic_algorithms(True)` is on and the intra-op thread count is fixed for
the run (float reductions split across a different number of threads can round differently).
No NumPy randomness is used. On the CPU two runs with the same arguments give bit-identical
losses; on CUDA deterministic kernels are requested with warn_only, so identical results are
likely but not guaranteed. These are process-wide torch settings, restored afterwards: do not
train two probes concurrently in threads of one process (Celery's prefork pool is fine).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# progress(epochs_done, epochs_total), called after each epoch (a Celery task can report it).
ProgressCallback = Callable[[int, int], None]


class ProbeCNN(nn.Module):
    """conv(3x3, w) - ReLU - maxpool 2 - conv(3x3, 2w) - ReLU - maxpool 2 - linear.

    Deliberately small: it must train on 10,000 MNIST images in seconds on one CPU core, and
    a probe that memorises the noisy labels quickly would blur the loss curves AUL relies on.
    """

    def __init__(self, in_channels: int, height: int, width: int, num_classes: int,
                 channels: int = 16) -> None:
        super().__init__()
        if height < 4 or width < 4:
            raise ValueError(f"images must be at least 4x4 for the probe, got {height}x{width}")
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(2 * channels * (height // 4) * (width // 4), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def as_image_tensor(images: np.ndarray) -> torch.Tensor:
    """[N, H, W] or [N, C, H, W] images (uint8 or float, any scale) as a float32 [N, C, H, W]
    tensor standardised per channel over the whole set, the probe's only preprocessing (it
    makes the pixel scale irrelevant, so 0-255 and 0-1 images train identically)."""
    array = np.asarray(images)
    if array.ndim == 3:
        array = array[:, None]
    if array.ndim != 4 or array.shape[0] == 0:
        raise ValueError(f"images must be [N, H, W] or [N, C, H, W], got shape {array.shape}")
    if array.dtype.kind not in "fiu":
        raise ValueError(f"images must be numbers, got dtype {array.dtype}")
    x = torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))
    if not torch.isfinite(x).all():
        raise ValueError("images contain non-finite values")
    # float64 statistics: a float32 sum over 10^7 pixels loses digits.
    mean = x.double().mean(dim=(0, 2, 3), keepdim=True)
    std = x.double().std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)
    return ((x - mean) / std).float()


@contextmanager
def deterministic_torch(seed: int, num_threads: int, device: torch.device) -> Iterator[None]:
    """Seeded, deterministic torch for the duration; the previous settings come back after."""
    previous_threads = torch.get_num_threads()
    previous_det = torch.are_deterministic_algorithms_enabled()
    previous_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    cuda = device.type == "cuda"
    if cuda:
        # cuBLAS is only deterministic with a fixed workspace; must be set before it starts.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    fork_devices = [device.index or 0] if cuda else []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(seed)
        torch.set_num_threads(num_threads)
        torch.use_deterministic_algorithms(True, warn_only=cuda)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(previous_det, warn_only=previous_warn)
            torch.set_num_threads(previous_threads)


@dataclass(frozen=True)
class ProbeRun:
    """What one probe training recorded. `losses` float32 [epochs, N]: each example's
    training-pass cross-entropy per epoch. From the last epoch's training-pass logits (the
    same forward pass that gave the loss): `predicted` int64 [N], the argmax, and `suggested`
    int64 [N], the argmax with the given label masked out, i.e. the most likely class other
    than the given one (what a reviewer is offered as the alternative). Ties go to the
    lower class id (torch.argmax returns the first maximum)."""

    losses: np.ndarray
    predicted: np.ndarray
    suggested: np.ndarray


def train_probe(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    device: str = "cpu",
    progress: ProgressCallback | None = None,
    num_classes: int | None = None,
    channels: int = 16,
    momentum: float = 0.9,
    num_threads: int = 1,
) -> ProbeRun:
    """Train a `ProbeCNN` on (images, labels) with SGD; return the losses of every epoch and
    the last epoch's predicted and suggested classes (see `ProbeRun`).

    Every example is seen exactly once per epoch (a seeded permutation; the last, smaller
    batch is kept), so every entry is filled. `num_classes` defaults to max(label) + 1.
    `num_threads` defaults to 1: on a 2-core machine one thread was ~8x faster than two for
    this small network, and a fixed count keeps the result reproducible. Reading the argmaxes
    off the logits changes nothing in the training: the losses are the same bits as without.
    """
    x = as_image_tensor(images)
    y_np = np.asarray(labels)
    if y_np.ndim != 1 or y_np.shape[0] != x.shape[0]:
        raise ValueError(f"need one label per image: {y_np.shape} labels, {x.shape[0]} images")
    if y_np.dtype.kind not in "iu" or y_np.min() < 0:
        raise ValueError("labels must be non-negative integers")
    k = int(y_np.max()) + 1 if num_classes is None else num_classes
    if y_np.max() >= k:
        raise ValueError(f"label {int(y_np.max())} is outside the {k} classes")
    if epochs < 1 or batch_size < 1 or lr <= 0 or num_threads < 1:
        raise ValueError("epochs, batch_size, num_threads must be >= 1 and lr > 0")
    y = torch.from_numpy(y_np.astype(np.int64))
    n = x.shape[0]
    target = torch.device(device)
    losses = torch.empty((epochs, n), dtype=torch.float32)
    predicted = torch.empty(n, dtype=torch.int64)
    suggested = torch.empty(n, dtype=torch.int64)

    with deterministic_torch(seed, num_threads, target):
        model = ProbeCNN(x.shape[1], x.shape[2], x.shape[3], k, channels).to(target)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        order = torch.Generator().manual_seed(seed)
        x, y = x.to(target), y.to(target)
        model.train()
        for epoch in range(epochs):
            permutation = torch.randperm(n, generator=order)
            last = epoch == epochs - 1
            for start in range(0, n, batch_size):
                index = permutation[start : start + batch_size]
                batch_index = index.to(target)
                logits = model(x[batch_index])
                given = y[batch_index]
                loss = F.cross_entropy(logits, given, reduction="none")
                losses[epoch, index] = loss.detach().to("cpu", torch.float32)
                if last:
                    scores = logits.detach()
                    predicted[index] = scores.argmax(dim=1).to("cpu")
                    # elementwise (no scatter): deterministic on every device
                    is_given = F.one_hot(given, k).bool()
                    masked = torch.where(is_given, float("-inf"), scores)
                    suggested[index] = masked.argmax(dim=1).to("cpu")
                optimizer.zero_grad(set_to_none=True)
                loss.mean().backward()
                optimizer.step()
            if progress is not None:
                progress(epoch + 1, epochs)
    return ProbeRun(losses.numpy(), predicted.numpy(), suggested.numpy())

