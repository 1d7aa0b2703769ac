"""What a label audit reads, checked before it is queued and read again by the worker: its
options, the given labels, the images (AUL) and the submissions' score matrices (confident
learning). `workers.audits` imports torch, so it is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from leaderboard.audits.models import Audit
from leaderboard.catalog.image_sources import (
    benchmark_preprocessing,
    example_set_names,
    example_set_source,
    example_set_source_problem,
)
from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet
from leaderboard.catalog.selectors import (
    label_set_correctable_slug,
    label_set_reference_slug,
    label_set_version_current,
)
from leaderboard.common.errors import ServiceError
from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.submissions.stored_files import stored_compact, uploaded_file_paths
from workers.scoring.predictions import PredictionError, parse_predictions

MAX_CANDIDATES_DEFAULT = 100
MAX_CANDIDATES_LIMIT = 1000
MAX_SUBMISSIONS = 20
DEVICES = ("auto", "cpu", "cuda")


class AuditError(ServiceError):
    """An audit the server refuses to start, or one that cannot run."""


@dataclass(frozen=True)
class Option:
    """One audit option: its type, its range (inclusive unless open) or choices, default."""

    kind: type
    default: Any
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        what = "an integer" if self.kind is int else "a number"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"{what} in {left}{self.low:g}, {self.high:g}{right}"

    def check(self, value: Any) -> Any:
        """The value, converted to the option's type, or None when it is not allowed."""
        if self.choices:
            return value if isinstance(value, str) and value in self.choices else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if self.kind is int:
            if isinstance(value, float) and not value.is_integer():
                return None
            value = int(value)
        else:
            value = float(value)
        assert self.low is not None and self.high is not None
        if value < self.low or (self.low_open and value == self.low):
            return None
        if value > self.high or (self.high_open and value == self.high):
            return None
        return value


def audit_options(kind: str) -> dict[str, Option]:
    """The options an audit of this kind accepts, with the core's defaults."""
    # Imported here, not at the top: workers.audits imports torch (the AUL probe), which
    # the web process does not load just to show a form.
    from workers.audits import FILTER_BY_CHOICES, AulConfig, ConfidentLearningOptions

    limit = Option(int, MAX_CANDIDATES_DEFAULT, 0, MAX_CANDIDATES_LIMIT)
    if kind == Audit.Kind.AUL:
        aul = AulConfig()
        return {
            "epochs": Option(int, aul.epochs, 1, 200),
            "batch_size": Option(int, aul.batch_size, 1, 4096),
            "lr": Option(float, aul.lr, 0, 10, low_open=True),
            "momentum": Option(float, aul.momentum, 0, 1, high_open=True),
            "channels": Option(int, aul.channels, 1, 128),
            "seed": Option(int, aul.seed, 0, 2**31 - 1),
            "bins": Option(int, aul.bins, 5, 200),
            "gmm_n_init": Option(int, aul.gmm_n_init, 1, 20),
            "num_threads": Option(int, aul.num_threads, 1, 64),
            # "auto": CUDA when the worker has it (the CPU is bit-for-bit reproducible)
            "device": Option(str, "auto", choices=DEVICES),
            "max_candidates": limit,
        }
    cl = ConfidentLearningOptions()
    return {
        "filter_by": Option(str, cl.filter_by, choices=FILTER_BY_CHOICES),
        "frac_noise": Option(float, cl.frac_noise, 0, 1, low_open=True),
        "min_examples_per_class": Option(int, cl.min_examples_per_class, 0, 100_000),
        "max_candidates": limit,
    }


def audit_config_clean(*, kind: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Every option of the kind: the given value (checked) or its default."""
    if not isinstance(config, Mapping):
        raise AuditError("invalid_config", "config must be an object of options",
                         field="config")
    options = audit_options(kind)
    unknown = sorted(set(config) - set(options))
    if unknown:
        raise AuditError("invalid_config",
                         f"unknown option {unknown[0]!r} for a {kind} audit; known: "
                         + ", ".join(options), field=f"config.{unknown[0]}")
    out: dict[str, Any] = {}
    for name, option in options.items():
        if name not in config:
            out[name] = option.default
            continue
        value = option.check(config[name])
        if value is None:
            raise AuditError("invalid_config",
                             f"{name} must be {option.describe()}, got {config[name]!r}",
                             field=f"config.{name}")
        out[name] = value
    return out


# ---------------------------------------------------------------- labels and images


def audit_label_sets(benchmark: Benchmark) -> tuple[LabelSet, LabelSet]:
    """(original, corrected): the labels audited and the set the candidates go to: the
    benchmark's reference label set and its corrected one (the first of the correctable
    family), asked of the rows by family whatever their slugs (docs/families.md)."""
    slugs = (label_set_reference_slug(benchmark_id=benchmark.pk),
             label_set_correctable_slug(benchmark_id=benchmark.pk))
    by_slug = {s.slug: s for s in LabelSet.objects.filter(
        benchmark=benchmark, slug__in=[slug for slug in slugs if slug is not None])
        .select_related("example_set", "benchmark")}
    original, corrected = (by_slug.get(slug or "") for slug in slugs)
    if original is None or corrected is None:
        raise AuditError("no_corrected_label_set",
                         f"{benchmark.slug} has no original and corrected label sets to audit",
                         field="benchmark")
    if original.labels_hidden or corrected.labels_hidden:  # its candidates would tell them
        raise AuditError("hidden_label_set", f"{benchmark.slug}'s labels are hidden: they are "
                         "not audited", field="benchmark")
    if original.example_set_id != corrected.example_set_id:
        raise AuditError("no_corrected_label_set", f"{benchmark.slug}'s original and corrected "
                         "label sets are on different example sets", field="benchmark")
    return original, corrected


def given_labels(original: LabelSet) -> np.ndarray:
    """The original labels (int64 [N]) of the current version of the reference label set."""
    version = label_set_version_current(label_set=original)
    if version is None:
        raise AuditError("no_version", f"{original} has no version")
    return np.asarray(compiled_for_version(version).arrays["labels"], dtype=np.int64)


# The AUL probe trains on the whole example set in memory: a larger one is refused (ImageNet's
# 50,000 images of 224x224 would take 30 GB); confident learning needs no images.
MAX_AUDIT_PIXELS = 2 * 10**9


def audit_images_check(example_set: ExampleSet) -> None:
    """Refuse an AUL audit of an example set the server has no images of (nothing is read)."""
    benchmark = example_set.benchmark
    inputs = benchmark_preprocessing(benchmark=benchmark)
    if inputs is not None and example_set.images:
        c, h, w = inputs.input_shape
        if example_set.size * c * h * w > MAX_AUDIT_PIXELS:
            raise AuditError(
                "no_images", f"no images configured for the AUL probe on {example_set.slug}: "
                f"it trains on the whole example set in memory ({example_set.size:,} images of "
                f"{h}x{w}, {example_set.size * c * h * w * 4 / 1e9:.0f} GB); use confident "
                "learning there", field="benchmark")
    problem = example_set_source_problem(example_set=example_set)
    if problem is not None:
        raise AuditError("no_images", f"no images configured for {example_set.slug}: {problem}",
                         field="benchmark")


def audit_images(example_set: ExampleSet) -> np.ndarray:
    """The example set's pixels in canonical order, uint8 [N, C, H, W] (the probe standardizes
    each channel itself: docs/audits.md)."""
    audit_images_check(example_set)
    source = example_set_source(example_set=example_set)
    assert source is not None
    # the checkpoint worker's loader, imported only where images are read (a worker)
    from workers.inference.images import load_images, source_pixels

    if source.format == "folder":
        inputs = benchmark_preprocessing(benchmark=example_set.benchmark)
        assert inputs is not None
        return load_images(source, inputs=inputs, size=example_set.size,
                           names=example_set_names(example_set=example_set))
    pixels = source_pixels(source)
    if pixels.shape[0] != example_set.size:
        raise AuditError("no_images", f"{example_set.slug}: the source holds {pixels.shape[0]} "
                         f"images, expected {example_set.size}", field="benchmark")
    return pixels


# ---------------------------------------------------------------- submissions' scores


def _no_scores(submission: Submission, example_set: ExampleSet) -> AuditError:
    return AuditError(
        "no_probabilities",
        f"submission #{submission.pk} ({submission.model_name}) uploaded class ids only for "
        f"{example_set.slug}; confident learning needs a score matrix [N, classes]",
        field="submission_ids")


def _compact_members(row: SubmissionFile) -> list[str] | None:
    """The arrays of the submission file's compact .npz (None when there is none)."""
    if not row.compact:
        return None
    with stored_compact(row.compact, example_set=row.example_set.slug) as arrays:
        return list(arrays)


def submission_scores_check(submission: Submission, example_set: ExampleSet) -> SubmissionFile:
    """The submission's file for the example set, when its upload held scores (from the compact
    arrays the scoring worker wrote: `topk_scores` is there exactly when scores were given)."""
    row = submission.files.filter(example_set=example_set).first()
    if row is None:
        raise AuditError("no_probabilities", f"submission #{submission.pk} "
                         f"({submission.model_name}) has no predictions for {example_set.slug}",
                         field="submission_ids")
    members = _compact_members(row)
    if members is not None and "scores" not in members and "topk_scores" not in members:
        raise _no_scores(submission, example_set)
    return row


def submission_probabilities(submission: Submission, example_set: ExampleSet) -> np.ndarray:
    """The submission's score matrix for the example set as float32 probabilities [N, K]: the
    compact `scores` when stored, else the original upload parsed again with its scores;
    logits go through a softmax."""
    from workers.audits import softmax  # torch comes with workers.audits: workers only

    row = submission_scores_check(submission, example_set)
    scores: np.ndarray | None = None
    kind: str | None = None
    if row.compact and "scores" in (_compact_members(row) or []):
        with stored_compact(row.compact, example_set=row.example_set.slug) as arrays:
            scores, kind = arrays["scores"], str(arrays["scores_kind"])
    else:
        try:
            with uploaded_file_paths([row]) as [path]:  # the .npy reader memory-maps it
                preds = parse_predictions(
                    path, num_examples=example_set.size,
                    num_classes=submission.benchmark.num_classes,
                    max_bytes=settings.EVALSERVER_MAX_UPLOAD_BYTES, keep_scores=True,
                    filename=row.original_name)
        except PredictionError as exc:
            raise AuditError("invalid_predictions", f"submission #{submission.pk}: "
                             f"{exc.message}", field="submission_ids") from None
        scores, kind = preds.scores, preds.scores_kind
    if scores is None:
        raise _no_scores(submission, example_set)
    if kind == "logits":
        scores = softmax(scores)
    # float32: the core averages in float64 one matrix at a time, but keeps every matrix
    # (it reads the flagged rows again for the evidence): 200 MB per ImageNet submission
    return np.asarray(scores, dtype=np.float32)
