"""Stored scores re-computed on the current label-set versions (manage.py scores_recompute).

When what a metric reports changes (docs/metrics.md §5.1: multi-label accuracy became a mean
over classes), the scores the board shows are computed again by the re-scoring job every new
version gets (`services.label_set_version_rescore`), here and now or by the workers.

A current version compiled by an older builder may lack an array the metric now reads (the
multi-label `original_labels`). Versions are immutable and named by their content, so it is
first upgraded: a new version, the same labels plus that array (workers/scoring/upgrades.py),
published like a review decision, so its history says what happened and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import label_set_version_latest, label_set_versions_current
from leaderboard.jobs.lifecycle import job_claim
from leaderboard.review.models import VersionRescore
from leaderboard.review.panel import (
    ReviewError,
    label_set_revision_publish,
    version_rescore_request,
)
from leaderboard.review.services import Progress, version_rescore_run
from workers.scoring import upgrades
from workers.scoring.label_set_builders import CompiledLabelSet

UPGRADE_NOTE = ("Upgraded to the current label-set builder: the same labels, plus {arrays} "
                "(for the class-mean accuracy, docs/metrics.md §5.1).")


@dataclass(frozen=True)
class Upgrade:
    version: LabelSetVersion
    added: list[str]


def _original_labels(label_set: LabelSet) -> CompiledLabelSet:
    """The current `original` labels of the label set's image set (what its classes mean)."""
    for version in label_set_versions_current(benchmark=label_set.benchmark):
        if (version.label_set.family == "original"
                and version.label_set.image_set_id == label_set.image_set_id):
            return compiled_for_version(version)
    raise ReviewError("no_original_labels",
                      f"{label_set} needs the original labels of its image set, and "
                      f"{label_set.benchmark.slug} has no `original` label set on it")


def label_set_version_upgrade(*, label_set: LabelSet, author: User | None = None
                              ) -> Upgrade | None:
    """A new version of the label set adding the arrays its current version lacks (re-scored
    after commit, as every new version); None when the current version lacks nothing."""
    current = label_set_version_latest(label_set=label_set)
    missing = [] if current is None else upgrades.missing_arrays(compiled_for_version(current))
    if not missing:
        return None
    original = _original_labels(label_set).arrays["labels"]

    def revise(parent: CompiledLabelSet) -> tuple[CompiledLabelSet, list[dict[str, Any]]]:
        try:
            return upgrades.compiled_upgrade(parent, original_labels=original), []
        except ValueError as exc:  # no upgrade for it, or labels that do not fit it
            raise ReviewError("no_upgrade", str(exc)) from None

    version = label_set_revision_publish(label_set=label_set, author=author, revise=revise,
                                         note=UPGRADE_NOTE.format(arrays=", ".join(missing)))
    return Upgrade(version, missing)


def version_rescore_now(*, version_id: int, task_id: str,
                        progress: Progress | None = None) -> str:
    """Re-score every scored submission on the version in this process, as its re-scoring
    job (`services.version_rescore_run`, what a worker runs): asked for and claimed under
    `task_id` in one transaction, so a worker that receives the job's message finds it held
    and leaves it. "done", or "skipped" when the job could not be claimed (out of attempts)
    or was asked for again meanwhile. Stopped half-way (an error, Ctrl-C), the job stays
    running under a task no broker knows, and the sweep hands it to a worker."""
    with transaction.atomic():
        version_rescore_request(version_id=version_id)
        # the attempts of the worker's re-scoring task (workers/jobs.py), the same job
        if not job_claim(VersionRescore, job_id=version_id, task_id=task_id,
                         max_attempts=settings.EVALSERVER_RESCORE_MAX_ATTEMPTS):
            return "skipped"
    done = version_rescore_run(version_id=version_id, task_id=task_id, progress=progress)
    return "done" if done else "skipped"
