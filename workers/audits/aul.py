"""The area-under-the-loss-curve audit: sum each example's probe losses over the epochs, fit
a two-component Gaussian mixture to those sums, and read the noise rate and the flags off the
high-mean component (docs/metrics.md §13; Pleiss et al., "Detecting Noisy Training Data with
Loss Curves").
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sklearn.mixture import GaussianMixture

from .probe import ProgressCallback, train_probe


@dataclass(frozen=True)
class AulConfig:
    """Probe training and mixture settings. The defaults were chosen on the real MNIST test
    set (10,000 images, one CPU core: ~15 s): ten epochs let clean examples' losses fall while
    most flipped labels are not yet memorised; longer training or a wider probe did not help."""

    epochs: int = 10
    batch_size: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    channels: int = 16
    seed: int = 0
    device: str = "cpu"
    num_threads: int = 1
    bins: int = 50
    gmm_n_init: int = 1

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "channels", "num_threads", "bins", "gmm_n_init"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class MixtureFit:
    """A two-component Gaussian mixture over the AUL values, components ordered (low, high)
    by mean whatever order sklearn found them in (`sklearn_high` says which it was).

    `noise_rate` is the high-mean component's weight; `posterior` each example's probability
    of belonging to it; `flags` = posterior > 0.5 on the high side of the low component's mean
    (with unequal variances the wider component also wins the far *low* tail, which would
    otherwise flag the most confidently clean examples); `flagged` their indices, most likely
    first (posterior, then AUL, descending).
    """

    means: tuple[float, float]
    stds: tuple[float, float]
    weights: tuple[float, float]
    posterior: np.ndarray
    flags: np.ndarray
    flagged: np.ndarray
    converged: bool
    sklearn_high: int

    @property
    def noise_rate(self) -> float:
        return self.weights[1]

    def density(self, x: np.ndarray, component: int) -> np.ndarray:
        """Weighted density of one component (0 low, 1 high) at x."""
        mean, std, weight = self.means[component], self.stds[component], self.weights[component]
        z = (np.asarray(x, dtype=np.float64) - mean) / std
        return weight * np.exp(-0.5 * z * z) / (std * math.sqrt(2.0 * math.pi))

    def summary(self) -> dict[str, Any]:
        return {
            "noise_rate": self.noise_rate,
            "num_flagged": int(self.flagged.shape[0]),
            "components": [
                {"name": name, "mean": self.means[i], "std": self.stds[i],
                 "weight": self.weights[i]}
                for i, name in enumerate(("low", "high"))
            ],
            "converged": self.converged,
        }


@dataclass(frozen=True)
class Histogram:
    """AUL histogram plus both fitted components as counts per bin, for one chart: the curves
    are N * bin width * weighted density at each bin centre, so they overlay the bars."""

    counts: np.ndarray
    edges: np.ndarray
    centres: np.ndarray
    low_curve: np.ndarray | None
    high_curve: np.ndarray | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts.tolist(),
            "edges": self.edges.tolist(),
            "centres": self.centres.tolist(),
            "low_curve": None if self.low_curve is None else self.low_curve.tolist(),
            "high_curve": None if self.high_curve is None else self.high_curve.tolist(),
        }


def aul_scores(losses: np.ndarray) -> np.ndarray:
    """Area under each example's loss curve: float64 [N], the sum over epochs of [epochs, N]."""
    losses = np.asarray(losses)
    if losses.ndim != 2 or losses.shape[0] == 0 or losses.shape[1] == 0:
        raise ValueError(f"losses must be a non-empty [epochs, N] array, got {losses.shape}")
    if not np.isfinite(losses).all():
        raise ValueError("losses contain non-finite values (did the probe diverge? lower lr)")
    return losses.sum(axis=0, dtype=np.float64)


def _check_aul(aul: np.ndarray) -> np.ndarray:
    values = np.asarray(aul, dtype=np.float64)
    if values.ndim != 1 or values.shape[0] < 2:
        raise ValueError(f"need a 1-D array of at least 2 AUL values, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("AUL values must be finite")
    if np.ptp(values) == 0:
        raise ValueError("all AUL values are equal: there is nothing for a mixture to separate")
    return values


def fit_mixture(aul: np.ndarray, seed: int = 0, *, n_init: int = 1) -> MixtureFit:
    """`GaussianMixture(n_components=2, random_state=seed)` on the AUL values, relabelled so
    that component 1 is always the high-mean one (sklearn's order depends on its init)."""
    values = _check_aul(aul)
    column = values.reshape(-1, 1)
    gmm = GaussianMixture(n_components=2, random_state=seed, n_init=n_init).fit(column)
    raw_means = gmm.means_.ravel()
    high = int(np.argmax(raw_means))
    order = (1 - high, high)
    stds = np.sqrt(np.asarray(gmm.covariances_).reshape(2))
    posterior = gmm.predict_proba(column)[:, high]
    flags = (posterior > 0.5) & (values > raw_means[1 - high])
    candidates = np.flatnonzero(flags)
    ranked = candidates[np.lexsort((-values[candidates], -posterior[candidates]))]
    return MixtureFit(
        means=(float(raw_means[order[0]]), float(raw_means[order[1]])),
        stds=(float(stds[order[0]]), float(stds[order[1]])),
        weights=(float(gmm.weights_[order[0]]), float(gmm.weights_[order[1]])),
        posterior=posterior,
        flags=flags,
        flagged=ranked.astype(np.int64),
        converged=bool(gmm.converged_),
        sklearn_high=high,
    )


def histogram(aul: np.ndarray, bins: int = 50, fit: MixtureFit | None = None) -> Histogram:
    """Counts and edges of the AUL values; with a fit, both components scaled to counts."""
    values = _check_aul(aul)
    counts, edges = np.histogram(values, bins=bins)
    centres = (edges[:-1] + edges[1:]) / 2
    low = high = None
    if fit is not None:
        scale = values.shape[0] * np.diff(edges)
        low, high = scale * fit.density(centres, 0), scale * fit.density(centres, 1)
    return Histogram(counts.astype(np.int64), edges, centres, low, high)


@dataclass(frozen=True)
class AulResult:
    """Everything an AUL audit produced. `losses` (float32 [epochs, N]) and `aul` (float64 [N])
    cover every example; `mixture` holds the fit, the flags and the noise-rate estimate.
    `predicted_labels` (int64 [N]) is the probe's argmax in the last epoch's training pass,
    `suggested_labels` (int64 [N]) its most likely class other than the given label: the
    alternative a reviewer is offered for a flagged example (never the given label)."""

    config: AulConfig
    labels: np.ndarray
    losses: np.ndarray = field(repr=False)
    aul: np.ndarray = field(repr=False)
    predicted_labels: np.ndarray = field(repr=False)
    suggested_labels: np.ndarray = field(repr=False)
    mixture: MixtureFit
    histogram: Histogram
    train_seconds: float
    fit_seconds: float

    @property
    def num_examples(self) -> int:
        return int(self.aul.shape[0])

    @property
    def flagged(self) -> np.ndarray:
        return self.mixture.flagged

    @property
    def num_flagged(self) -> int:
        return int(self.mixture.flagged.shape[0])

    @property
    def noise_rate(self) -> float:
        return self.mixture.noise_rate

    def evidence(self) -> list[dict[str, Any]]:
        """Per flagged example, most likely first: what a reviewer sees next to the image."""
        out = []
        for rank, index in enumerate(self.flagged.tolist(), start=1):
            out.append(
                {
                    "index": index,
                    "rank": rank,
                    "given_label": int(self.labels[index]),
                    "suggested_label": int(self.suggested_labels[index]),
                    "predicted_label": int(self.predicted_labels[index]),
                    "aul": float(self.aul[index]),
                    "noisy_probability": float(self.mixture.posterior[index]),
                    "first_epoch_loss": float(self.losses[0, index]),
                    "last_epoch_loss": float(self.losses[-1, index]),
                }
            )
        return out

    def to_dict(self, *, include_scores: bool = False) -> dict[str, Any]:
        """Plain JSON types only. `include_scores` adds every example's AUL (N floats)."""
        out: dict[str, Any] = {
            "method": "aul",
            "config": asdict(self.config),
            "num_examples": self.num_examples,
            "num_flagged": self.num_flagged,
            "noise_rate": self.noise_rate,
            "mixture": self.mixture.summary(),
            "histogram": self.histogram.to_dict(),
            "flagged": self.flagged.tolist(),
            "evidence": self.evidence(),
            "train_seconds": self.train_seconds,
            "fit_seconds": self.fit_seconds,
        }
        if include_scores:
            out["aul"] = self.aul.tolist()
        return out


def run_aul_audit(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    config: AulConfig | None = None,
    num_classes: int | None = None,
    progress: ProgressCallback | None = None,
) -> AulResult:
    """Train the probe on the audited set's own given labels, then fit the mixture.

    `images` [N, H, W] or [N, C, H, W]; `labels` int[N]; `num_classes` is the benchmark's
    class count (default max(label) + 1); `progress(done, total)` after each epoch.
    """
    config = config or AulConfig()
    start = time.perf_counter()
    run = train_probe(
        images,
        labels,
        epochs=config.epochs,
        batch_size=config.batch_size,
        lr=config.lr,
        seed=config.seed,
        device=config.device,
        progress=progress,
        num_classes=num_classes,
        channels=config.channels,
        momentum=config.momentum,
        num_threads=config.num_threads,
    )
    trained = time.perf_counter()
    aul = aul_scores(run.losses)
    mixture = fit_mixture(aul, config.seed, n_init=config.gmm_n_init)
    hist = histogram(aul, config.bins, mixture)
    return AulResult(
        config=config,
        labels=np.asarray(labels).astype(np.int64),
        losses=run.losses,
        aul=aul,
        predicted_labels=run.predicted,
        suggested_labels=run.suggested,
        mixture=mixture,
        histogram=hist,
        train_seconds=trained - start,
        fit_seconds=time.perf_counter() - trained,
    )
