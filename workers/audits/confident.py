"""Confident learning (Northcutt et al. 2021) over the probabilities of chosen submissions.

The flagging itself is cleanlab's `cleanlab.filter.find_label_issues`; this module validates
the inputs, averages the submissions' probability matrices (applying a softmax first when the
rows are logits), and packages cleanlab's answer with the evidence a reviewer needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from cleanlab.count import num_label_issues
from cleanlab.filter import find_label_issues

# cleanlab's filter_by values (cleanlab 2.9); checked here so a bad option fails with a
# ValueError naming the choices instead of cleanlab's bare assert.
FILTER_BY_CHOICES = (
    "prune_by_noise_rate",
    "prune_by_class",
    "both",
    "confident_learning",
    "predicted_neq_given",
    "low_normalized_margin",
    "low_self_confidence",
)


@dataclass(frozen=True)
class ConfidentLearningOptions:
    """How to read the submissions and which cleanlab filter to apply.

    `logits`: the matrices hold logits (or any unnormalised scores); a softmax turns each
    row into probabilities before averaging. Otherwise rows must be probabilities: non-negative
    and summing to 1 within `sum_tolerance` (float16 uploads are off by ~1e-3 at most).
    `n_jobs` defaults to 1 because cleanlab parallelises with multiprocessing, which a Celery
    prefork worker (a daemonic process) is not allowed to do; for 50,000 x 1,000 the serial
    path takes seconds.
    """

    filter_by: str = "prune_by_noise_rate"
    frac_noise: float = 1.0
    min_examples_per_class: int = 1
    logits: bool = False
    sum_tolerance: float = 1e-3
    n_jobs: int = 1

    def __post_init__(self) -> None:
        if self.filter_by not in FILTER_BY_CHOICES:
            raise ValueError(
                f"filter_by must be one of {', '.join(FILTER_BY_CHOICES)}; got {self.filter_by!r}"
            )
        if not 0.0 < self.frac_noise <= 1.0:
            raise ValueError(f"frac_noise must be in (0, 1], got {self.frac_noise}")
        if self.min_examples_per_class < 0:
            raise ValueError("min_examples_per_class must be >= 0")
        if not 0.0 < self.sum_tolerance < 1.0:
            raise ValueError("sum_tolerance must be in (0, 1)")
        if self.n_jobs < 1:
            raise ValueError("n_jobs must be >= 1")


@dataclass(frozen=True)
class ConfidentLearningResult:
    """cleanlab's flags, most likely errors first, and what they rest on.

    Arrays are aligned with `flagged` (one entry per flagged example): `given_labels`,
    `suggested_labels` (argmax of the averaged probabilities), `self_confidence` (averaged
    probability of the given label, cleanlab's ranking score: ascending). `estimated_num_issues`
    is cleanlab's own estimate of how many labels are wrong (`cleanlab.count.num_label_issues`,
    from the calibrated confident joint); `estimated_noise_rate` is that over `num_examples`,
    `flagged_fraction` is the share actually flagged by `filter_by`.
    """

    flagged: np.ndarray
    given_labels: np.ndarray
    suggested_labels: np.ndarray
    self_confidence: np.ndarray
    num_examples: int
    num_classes: int
    num_submissions: int
    estimated_num_issues: int
    options: ConfidentLearningOptions
    submission_ids: tuple[str, ...]
    evidence: list[dict[str, Any]] = field(repr=False)

    @property
    def num_flagged(self) -> int:
        return int(self.flagged.shape[0])

    @property
    def flagged_fraction(self) -> float:
        return self.num_flagged / self.num_examples

    @property
    def estimated_noise_rate(self) -> float:
        return self.estimated_num_issues / self.num_examples

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (ints, floats, strings, lists, dicts)."""
        return {
            "method": "confident_learning",
            "options": asdict(self.options),
            "submission_ids": list(self.submission_ids),
            "num_examples": self.num_examples,
            "num_classes": self.num_classes,
            "num_submissions": self.num_submissions,
            "num_flagged": self.num_flagged,
            "flagged_fraction": self.flagged_fraction,
            "estimated_num_issues": self.estimated_num_issues,
            "estimated_noise_rate": self.estimated_noise_rate,
            "flagged": self.flagged.tolist(),
            "evidence": self.evidence,
        }


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64, shifted by the row maximum so large logits do not overflow."""
    z = np.asarray(scores, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def _check_labels(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, got shape {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    if labels.min() < 0:
        raise ValueError(f"labels must be >= 0, found {int(labels.min())}")
    return labels.astype(np.int64)


def _to_probabilities(
    matrix: np.ndarray,
    *,
    position: int,
    shape: tuple[int, int] | None,
    options: ConfidentLearningOptions,
) -> np.ndarray:
    """One submission's matrix as float64 probabilities, or a ValueError naming the problem."""
    name = f"submission {position}"
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D [examples, classes] matrix, got {matrix.shape}")
    if shape is not None and matrix.shape != shape:
        raise ValueError(f"{name}: shape {matrix.shape} differs from submission 0's {shape}")
    if matrix.dtype.kind not in "fiu":
        raise ValueError(f"{name}: expected numbers, got dtype {matrix.dtype}")
    finite = np.isfinite(matrix)
    if not finite.all():
        row = int(np.flatnonzero(~finite.all(axis=1))[0])
        raise ValueError(f"{name}: non-finite value in row {row}")
    if options.logits:
        return softmax(matrix)
    probs = matrix.astype(np.float64)
    if probs.min() < 0:
        row = int(np.flatnonzero((probs < 0).any(axis=1))[0])
        raise ValueError(
            f"{name}: negative probability in row {row} (logits? pass logits=True)"
        )
    off = np.abs(probs.sum(axis=1) - 1.0)
    if off.max() > options.sum_tolerance:
        row = int(np.argmax(off))
        raise ValueError(
            f"{name}: row {row} sums to {probs[row].sum():.6g}, not 1 within "
            f"{options.sum_tolerance:g} (logits? pass logits=True)"
        )
    return probs


def average_probabilities(
    matrices: Sequence[np.ndarray], options: ConfidentLearningOptions | None = None
) -> np.ndarray:
    """The mean of the submissions' probability matrices (float64 [N, K]), after validation.

    Summed one matrix at a time, so the peak is two float64 matrices whatever the number of
    submissions (a 50,000 x 1,000 ImageNet matrix is 400 MB).
    """
    options = options or ConfidentLearningOptions()
    if len(matrices) == 0:
        raise ValueError("no probability matrices given: pick at least one submission")
    total: np.ndarray | None = None
    for position, matrix in enumerate(matrices):
        shape = None if total is None else (total.shape[0], total.shape[1])
        probs = _to_probabilities(matrix, position=position, shape=shape, options=options)
        if probs.shape[1] < 2:
            raise ValueError(f"submission {position}: need at least 2 classes, got {probs.shape}")
        if total is None:
            total = probs  # a fresh array (astype and softmax copy), safe to add into
        else:
            total += probs
    assert total is not None
    total /= len(matrices)
    return total


def _evidence(
    flagged: np.ndarray,
    labels: np.ndarray,
    mean_probs: np.ndarray,
    matrices: Sequence[np.ndarray],
    submission_ids: tuple[str, ...],
    options: ConfidentLearningOptions,
) -> list[dict[str, Any]]:
    """Per flagged example: the averaged view and each submission's own (its top-1 and the
    probability it gives the given and the suggested label), for the review page."""
    rows = mean_probs[flagged]
    given = labels[flagged]
    suggested = rows.argmax(axis=1)
    per_submission = []
    for matrix in matrices:
        # Only the flagged rows are re-read, so this costs nothing next to the average.
        sub = np.asarray(matrix)[flagged]
        per_submission.append(softmax(sub) if options.logits else sub.astype(np.float64))
    out = []
    for j, index in enumerate(flagged.tolist()):
        out.append(
            {
                "index": index,
                "rank": j + 1,
                "given_label": int(given[j]),
                "suggested_label": int(suggested[j]),
                "self_confidence": float(rows[j, given[j]]),
                "suggested_probability": float(rows[j, suggested[j]]),
                "submissions": [
                    {
                        "submission": submission_ids[s],
                        "top1": int(probs[j].argmax()),
                        "given_probability": float(probs[j, given[j]]),
                        "suggested_probability": float(probs[j, suggested[j]]),
                    }
                    for s, probs in enumerate(per_submission)
                ],
            }
        )
    return out


def run_confident_learning(
    labels: np.ndarray,
    probabilities: Sequence[np.ndarray],
    options: ConfidentLearningOptions | None = None,
    *,
    num_classes: int | None = None,
    submission_ids: Sequence[str | int] | None = None,
) -> ConfidentLearningResult:
    """Flag likely label errors among `labels` (int[N]) from the submissions' averaged
    probabilities (each float[N, K]), ranked by cleanlab's self-confidence (lowest first).

    `num_classes`, when given (the benchmark's class count), must equal K. Raises ValueError
    on any malformed input before cleanlab runs.
    """
    options = options or ConfidentLearningOptions()
    labels = _check_labels(labels)
    mean_probs = average_probabilities(probabilities, options)
    n, k = mean_probs.shape
    if n != labels.shape[0]:
        raise ValueError(f"{labels.shape[0]} labels but the probability matrices have {n} rows")
    if num_classes is not None and k != num_classes:
        raise ValueError(f"the probability matrices have {k} columns, expected {num_classes}")
    if labels.max() >= k:
        raise ValueError(f"label {int(labels.max())} is outside the {k} classes 0..{k - 1}")
    if submission_ids is None:
        ids = tuple(str(i) for i in range(len(probabilities)))
    else:
        ids = tuple(str(s) for s in submission_ids)
        if len(ids) != len(probabilities):
            raise ValueError(f"{len(ids)} submission ids for {len(probabilities)} matrices")

    flagged = find_label_issues(
        labels,
        mean_probs,
        filter_by=options.filter_by,
        frac_noise=options.frac_noise,
        min_examples_per_class=options.min_examples_per_class,
        return_indices_ranked_by="self_confidence",
        n_jobs=options.n_jobs,
    )
    flagged = np.asarray(flagged, dtype=np.int64)
    estimated = int(num_label_issues(labels, mean_probs))
    given = labels[flagged]
    return ConfidentLearningResult(
        flagged=flagged,
        given_labels=given,
        suggested_labels=mean_probs[flagged].argmax(axis=1).astype(np.int64),
        self_confidence=mean_probs[flagged, given],
        num_examples=n,
        num_classes=k,
        num_submissions=len(probabilities),
        estimated_num_issues=estimated,
        options=options,
        submission_ids=ids,
        evidence=_evidence(flagged, labels, mean_probs, probabilities, ids, options),
    )
