"""Label audits, free of Django: confident learning over submitted probabilities, the area
under the loss curve (AUL) of a probe trained on an example set, and the precision and recall of
either audit's flags against the examples humans confirmed as label errors
(docs/metrics.md §13). A Celery task calls `run_confident_learning` or `run_aul_audit` and stores
`result.to_dict()`; nothing here touches the database.
"""

from __future__ import annotations

from .aul import (
    AulConfig,
    AulResult,
    Histogram,
    MixtureFit,
    aul_scores,
    fit_mixture,
    histogram,
    run_aul_audit,
)
from .confident import (
    FILTER_BY_CHOICES,
    ConfidentLearningOptions,
    ConfidentLearningResult,
    average_probabilities,
    run_confident_learning,
    softmax,
)
from .probe import ProbeCNN, ProbeRun, train_probe
from .validation import (
    ValidatedErrors,
    load_validated_errors,
    precision_recall,
    validated_errors,
)

__all__ = [
    "FILTER_BY_CHOICES",
    "AulConfig",
    "AulResult",
    "ConfidentLearningOptions",
    "ConfidentLearningResult",
    "Histogram",
    "MixtureFit",
    "ProbeCNN",
    "ProbeRun",
    "ValidatedErrors",
    "aul_scores",
    "average_probabilities",
    "fit_mixture",
    "histogram",
    "load_validated_errors",
    "precision_recall",
    "run_aul_audit",
    "run_confident_learning",
    "softmax",
    "train_probe",
    "validated_errors",
]
