"""Label audits (docs/metrics.md §13): a maintainer starts one, a worker runs it, and its flags,
best first, become ground-truth review candidates on the benchmark's corrected label set.

queued -> running -> done | failed, the claimed-job lifecycle of leaderboard/jobs/: the worker's
runner claims (leaderboard/tasks/cpu.py), a redelivered task (same id) may take its own claim back,
a
duplicate cannot, and only the task holding the claim stores a result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from leaderboard import queue
from leaderboard.audits.inputs import (
    MAX_SUBMISSIONS,
    AuditError,
    audit_config_clean,
    audit_images,
    audit_images_check,
    audit_label_sets,
    given_labels,
    submission_probabilities,
    submission_scores_check,
)
from leaderboard.audits.models import Audit
from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.permissions import benchmark_user_can_host
from leaderboard.jobs.lifecycle import job_finish, job_held
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.review.ground_truth.services import ground_truth_candidate_create
from leaderboard.review.panel.services import ReviewError
from leaderboard.submissions.models import Submission
from workers.scoring.datasets import DataError

Status = Audit.Status
log = logging.getLogger(__name__)

__all__ = [
    "AuditError",
    "audit_create",
    "audit_run",
]


def _submissions(benchmark: Benchmark, submission_ids: Iterable[Any]) -> list[Submission]:
    ids: list[int] = []
    for value in submission_ids:
        if isinstance(value, bool) or not isinstance(value, int):
            raise AuditError("invalid_submission", f"submission ids are integers, got {value!r}",
                             field="submission_ids")
        if value not in ids:
            ids.append(value)
    if not ids:
        raise AuditError("no_submissions", "confident learning needs at least one scored "
                         "submission with probabilities", field="submission_ids")
    if len(ids) > MAX_SUBMISSIONS:
        raise AuditError("too_many_submissions", f"at most {MAX_SUBMISSIONS} submissions",
                         field="submission_ids")
    found = Submission.objects.select_related("benchmark").in_bulk(ids)
    out = []
    for submission_id in ids:
        submission = found.get(submission_id)
        if submission is None:
            raise AuditError("invalid_submission", f"no submission #{submission_id}",
                             field="submission_ids")
        if submission.benchmark_id != benchmark.pk:
            raise AuditError("invalid_submission", f"submission #{submission_id} is on "
                             f"{submission.benchmark.slug}, not {benchmark.slug}",
                             field="submission_ids")
        if submission.status != Submission.Status.SCORED:
            raise AuditError("invalid_submission", f"submission #{submission_id} is "
                             f"{submission.status}, not scored", field="submission_ids")
        out.append(submission)
    return out


def audit_create(*, author: User, benchmark: Benchmark, kind: str,
                 submission_ids: Sequence[int] = (),
                 config: dict[str, Any] | None = None) -> Audit:
    """Check and store an audit, then queue its task once the transaction commits. Only the
    hosts of the benchmark's team start one (docs/hosts/teams.md)."""
    if not benchmark_user_can_host(user=author, benchmark=benchmark):
        raise AuditError("permission_denied", f"only the hosts of {benchmark.slug}'s host team "
                         "may start its label audits", field="benchmark", http_status=403)
    if kind not in Audit.Kind.values:
        raise AuditError("invalid_kind", f"kind must be one of {', '.join(Audit.Kind.values)}",
                         field="kind")
    clean = audit_config_clean(kind=kind, config=config or {})
    _, corrected = audit_label_sets(benchmark)
    example_set = corrected.example_set
    submissions: list[Submission] = []
    if kind == Audit.Kind.CONFIDENT_LEARNING:
        submissions = _submissions(benchmark, submission_ids)
        for submission in submissions:
            submission_scores_check(submission, example_set)
    else:
        if submission_ids:
            raise AuditError("invalid_submission", "an AUL audit trains its own probe on the "
                             "images; it uses no submissions", field="submission_ids")
        audit_images_check(example_set)
    with transaction.atomic():
        audit = Audit.objects.create(benchmark=benchmark, example_set=example_set,
                                     label_set=corrected, kind=kind, config=clean,
                                     created_by=author)
        audit.submissions.set(submissions)
        # its task: confident learning on the cpu queue, AUL on the gpu queue
        queue.job_queue(kind="audit", job_id=audit.pk, variant=kind)
    return audit


# ---------------------------------------------------------------- the worker's side


def _progress(audit_id: int, task_id: str) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        Audit.objects.filter(id=audit_id, status=Status.RUNNING, claimed_by=task_id).update(
            result={"progress": {"epochs_done": done, "epochs_total": total}})

    return report


def _run_confident_learning(audit: Audit, labels: np.ndarray) -> dict[str, Any]:
    # workers.audits imports torch (the AUL probe): here, so the web process never does
    from workers.audits import ConfidentLearningOptions, run_confident_learning

    config = audit.config
    submissions = list(audit.submissions.select_related("benchmark").order_by("id"))
    matrices = [submission_probabilities(s, audit.example_set) for s in submissions]
    options = ConfidentLearningOptions(
        filter_by=config["filter_by"], frac_noise=config["frac_noise"],
        min_examples_per_class=config["min_examples_per_class"])
    result = run_confident_learning(labels, matrices, options,
                                    num_classes=audit.benchmark.num_classes,
                                    submission_ids=[s.pk for s in submissions])
    data = result.to_dict()
    data["noise_rate"] = result.estimated_noise_rate
    return data


def _run_aul(audit: Audit, labels: np.ndarray, task_id: str) -> dict[str, Any]:
    import torch  # here, not at the top: only an AUL audit needs it, never the web process

    from workers.audits import AulConfig, run_aul_audit  # torch, as above

    config = {k: v for k, v in audit.config.items() if k != "max_candidates"}
    if config["device"] == "auto":
        config["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    elif config["device"] == "cuda" and not torch.cuda.is_available():
        raise AuditError("no_gpu", "the audit asks for CUDA and this worker has no GPU")
    images = audit_images(audit.example_set)
    result = run_aul_audit(images, labels, config=AulConfig(**config),
                           num_classes=audit.benchmark.num_classes,
                           progress=_progress(audit.pk, task_id))
    return result.to_dict()


def _validation(benchmark: str, flagged: list[int], top: list[int]) -> dict[str, Any] | None:
    """Precision and recall of all flags, and of the top ones, against the human-validated
    errors (None when the benchmark has no vote file)."""
    from workers.audits import load_validated_errors, precision_recall  # torch, as above

    try:
        errors = load_validated_errors(settings.EVALSERVER_DATA_DIR, benchmark)
    except (ValueError, DataError, OSError):
        return None
    return {
        "threshold": errors.threshold,
        "all": precision_recall(flagged, errors.errors, errors.checked),
        "top": {"k": len(top), **precision_recall(top, errors.errors, errors.checked)},
    }


def _candidates(audit: Audit, evidence: list[dict[str, Any]]
                ) -> tuple[list[int], dict[str, int]]:
    """Up to max_candidates ground-truth candidates from the flags in ranked order, skipping
    examples with an open candidate and flags whose suggestion is the given label."""
    limit = int(audit.config["max_candidates"])
    open_examples = set(GroundTruthCandidate.objects.filter(
        label_set=audit.label_set, status=GroundTruthCandidate.Status.OPEN,
    ).values_list("example_index", flat=True))
    created: list[int] = []
    skipped = {"already_open": 0, "same_as_given": 0}
    for entry in evidence:
        if len(created) >= limit:
            break
        index, given, guessed = entry["index"], entry["given_label"], entry["suggested_label"]
        if index in open_examples:
            skipped["already_open"] += 1
            continue
        if guessed == given:
            skipped["same_as_given"] += 1
            continue
        try:
            candidate = ground_truth_candidate_create(
                label_set=audit.label_set, example_index=index, guessed=guessed, given=given,
                source=f"audit:{audit.pk}",
                evidence={"method": audit.kind, "audit": audit.pk,
                          **{k: v for k, v in entry.items() if k != "index"}})
        except ReviewError as exc:
            if exc.code != "already_open":  # opened since the query above: skip it too
                raise
            skipped["already_open"] += 1
            continue
        created.append(candidate.pk)
    return created, skipped


def audit_run(*, audit_id: int, task_id: str) -> bool:
    """The audit task's work on a claimed audit (the worker's runner claims it first): run the
    core on the original labels, then in one transaction store the result and create the
    candidates. True once done; False when this task no longer holds the claim. Raises
    AuditError, DataError or ValueError for inputs the audit cannot use (the runner stores
    them as its failure, leaderboard/tasks/registry.py)."""
    audit = Audit.objects.select_related("benchmark", "example_set", "label_set").get(id=audit_id)
    original, _ = audit_label_sets(audit.benchmark)
    labels = given_labels(original)
    if audit.kind == Audit.Kind.CONFIDENT_LEARNING:
        result = _run_confident_learning(audit, labels)
    else:
        result = _run_aul(audit, labels, task_id)
    flagged = [int(i) for i in result["flagged"]]
    limit = int(audit.config["max_candidates"])
    result["validation"] = _validation(audit.benchmark.slug, flagged, flagged[:limit])
    try:
        with transaction.atomic():
            if not job_held(Audit, job_id=audit_id, task_id=task_id):
                return False
            created, skipped = _candidates(audit, result["evidence"])
            result["candidates"] = {"created": len(created), "ids": created,
                                    "skipped": skipped}
            job_finish(Audit, job_id=audit_id, task_id=task_id, status=Status.DONE,
                       result=result, candidates_created=len(created))
    except ReviewError as exc:  # a flag the corrected label set refuses: nothing is kept
        raise AuditError(exc.code, f"ground-truth candidates: {exc.message}") from exc
    return True
