"""Creating submissions and moving them through queued -> running -> scored | failed (the
claimed-job lifecycle of leaderboard/jobs/; the worker's runner claims, leaderboard/tasks/cpu.py).

Every status change is a conditional UPDATE, so a redelivered or duplicated task never
scores twice and a late task cannot overwrite a newer state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from leaderboard import queue
from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.phases.selectors import benchmark_phase_opened
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    example_namer,
    label_set_versions_to_score,
)
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.jobs.lifecycle import PLATFORM_FAILURE_CODES, job_finish, job_held
from leaderboard.submissions import checkpoints
from leaderboard.submissions.board_significance import board_significance_schedule
from leaderboard.submissions.file_checks import SubmissionError, submission_files_check
from leaderboard.submissions.models import HitVector, Score, Submission, SubmissionFile
from leaderboard.submissions.participation.services import participation_check
from leaderboard.submissions.releases.services import releases_record
from leaderboard.submissions.signals import submission_scored
from leaderboard.submissions.stored_files import (
    compacts_storing,
    uploaded_file_paths,
    uploads_store,
)
from workers.scoring.families.base import ExampleNamer
from workers.scoring.hits import NovelPairs
from workers.scoring.predictions import Predictions, parse_predictions
from workers.scoring.scorer import score_predictions
from workers.scoring.significance import pack_hits

Status = Submission.Status
K = TypeVar("K")


def _sha256(upload: Any) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def submission_quota_left(*, owner: User, benchmark: Benchmark) -> int | None:
    """Submissions the user may still make on this benchmark now (None: no quota).

    Counted: those scored, failed by the user's fault, and those still queued or running
    (so a burst cannot overrun it); not counted: cancelled ones and failures of the server's
    (`PLATFORM_FAILURE_CODES`), whose re-run is free too (docs/api.md
    §6.5)."""
    quota = settings.EVALSERVER_DAILY_QUOTA
    if not quota:
        return None
    since = timezone.now() - timedelta(days=1)
    opened = benchmark_phase_opened(benchmark=benchmark)
    if opened is not None and opened > since:  # a new phase: its own quota
        since = opened
    used = (Submission.objects.filter(owner=owner, benchmark=benchmark, created__gte=since)
            .exclude(status=Status.CANCELLED)
            .exclude(status=Status.FAILED, failure_code__in=PLATFORM_FAILURE_CODES).count())
    return max(0, quota - used)


def submission_create(
    *,
    owner: User,
    benchmark: Benchmark,
    model_name: str,
    files: Mapping[str, Any],
    description: str = "",
    public: bool = True,
    paper_url: str = "",
    code_url: str = "",
    enforce_quota: bool = True,
    checkpoint: Any = None,
) -> Submission:
    """Store the files (or the `checkpoint`, a model file, instead) and the row durably, then
    queue scoring (or the model's run) once the transaction commits. The benchmark's
    participation rules are checked first (docs/hosts/participation.md): a refusal is 403."""
    participation_check(user=owner, benchmark=benchmark)
    model_name = model_name.strip()
    if not model_name:
        raise SubmissionError("missing_model_name", "name the model", field="model_name")
    if checkpoint is not None:
        if files:
            raise SubmissionError(
                "checkpoint_and_predictions",
                "send either a checkpoint or predictions files, not both",
                field=checkpoints.CHECKPOINT_FIELD)
        info = checkpoints.checkpoint_validate(benchmark=benchmark, upload=checkpoint)
    else:
        submission_files_check(benchmark=benchmark, files=files)
    stored: list[str] = []
    try:
        with transaction.atomic():
            # The user's row lock serialises this user's concurrent submissions, so the count
            # and the insert below cannot interleave (PostgreSQL; SQLite locks the database).
            User.objects.select_for_update().filter(pk=owner.pk).first()
            if enforce_quota:
                left = submission_quota_left(owner=owner, benchmark=benchmark)
                if left == 0:
                    raise SubmissionError(
                        "quota_exceeded",
                        f"daily quota reached: {settings.EVALSERVER_DAILY_QUOTA} submissions "
                        f"per 24 hours on {benchmark.slug}; try again later",
                        http_status=429,
                    )
            submission = Submission.objects.create(
                owner=owner, benchmark=benchmark, model_name=model_name,
                description=description, public=public, paper_url=paper_url, code_url=code_url,
                kind=Submission.Kind.PREDICTIONS if checkpoint is None
                else Submission.Kind.CHECKPOINT,
            )
            if checkpoint is not None:
                stored.append(checkpoints.checkpoint_store(
                    submission=submission, upload=checkpoint, info=info))
                queue.job_queue(kind="submission", job_id=submission.pk, variant=submission.kind)
                return submission
            example_sets = {s.slug: s for s in benchmark.example_sets.all()}
            rows = [SubmissionFile(submission=submission, example_set=example_sets[slug],
                                   original_name=Path(upload.name).name[:255],
                                   size=upload.size, sha256=_sha256(upload))
                    for slug, upload in files.items()]
            stored += uploads_store(submission_id=submission.pk, rows=rows,
                                    uploads=list(files.values()))
            for row in rows:
                row.save()
            queue.job_queue(kind="submission", job_id=submission.pk, variant=submission.kind)
    except BaseException:
        for name in stored:  # nothing partial: no file outlives a rolled-back row
            default_storage.delete(name)
        raise
    return submission


# ---------------------------------------------------------------- the worker's side


def _compact(preds: Predictions) -> dict[str, np.ndarray]:
    """An example set's arrays in the submission's compact file (workers/scoring/compact.py)."""
    arrays: dict[str, np.ndarray] = {"topk": preds.topk.astype(np.int16)}
    if preds.topk_scores is not None:
        arrays["topk_scores"] = preds.topk_scores
    if preds.scores is not None:
        arrays["scores"] = preds.scores
        arrays["scores_kind"] = np.array(preds.scores_kind or "")
    return arrays


def submission_scores_compute(*, submission_id: int, task_id: str) -> bool:
    """Parse the files, score them on each label set's current version and on any newer one
    being re-scored, store Score rows; idempotent.

    Raises PredictionError for a bad file (the caller marks the submission failed).
    Returns False when this task no longer holds the claim (nothing is written then).
    """
    submission = Submission.objects.select_related("benchmark").get(id=submission_id)
    benchmark = submission.benchmark
    predictions: dict[str, Predictions] = {}
    namers: dict[str, ExampleNamer] = {}
    # in upload order (the database gives none otherwise): failures name the same file each run
    rows = list(submission.files.select_related("example_set").order_by("pk"))
    # paths: the .npy reader memory-maps an upload (from an object store: copies; the
    # uploads are one object there, and the compact arrays stored below one file, stored
    # while the scores are computed: stored_files.py)
    with uploaded_file_paths(rows) as paths:
        for row, path in zip(rows, paths, strict=True):
            try:
                preds = parse_predictions(
                    path, num_examples=row.example_set.size, num_classes=benchmark.num_classes,
                    max_bytes=settings.EVALSERVER_MAX_UPLOAD_BYTES, filename=row.original_name,
                    keep_scores=benchmark.num_classes <= 100,
                )
            except Exception as exc:
                exc.example_set = row.example_set.slug  # type: ignore[attr-defined]
                raise
            predictions[row.example_set.slug] = preds
            namers[row.example_set.slug] = example_namer(example_set=row.example_set)
    with compacts_storing(rows=rows, arrays={slug: _compact(preds)
                                             for slug, preds in predictions.items()}):
        versions = label_set_versions_to_score(benchmark=benchmark)
        names = benchmark_class_names(benchmark=benchmark)
        scores, novel = _scores_on_versions(predictions, versions, names, namers)
        # A version made while this was scoring (a review decision) may be re-scored and
        # published before this commits, without this submission: score it too, so that
        # does not happen.
        made = [v for v in label_set_versions_to_score(benchmark=benchmark) if v not in versions]
        if made:
            more, newer_novel = _scores_on_versions(predictions, made, names, namers)
            scores, novel, versions = scores + more, {**novel, **newer_novel}, versions + made
    with transaction.atomic():
        if not job_held(Submission, job_id=submission_id, task_id=task_id):
            return False
        for version, record, hits in scores:
            score_upsert(submission=submission, version=version, record=record, hits=hits)
        # A hidden label set's figure is shown only as its release mechanism gives it.
        releases_record(submission=submission)
        job_finish(Submission, job_id=submission_id, task_id=task_id, status=Status.SCORED)
        benchmark_leaderboard_touch(benchmark_id=benchmark.pk)
        # A version made in the last moment was re-scored without it (it was not scored yet):
        # its re-scoring must run again so that no submission misses a version. Until then it
        # stays unpublished, unless that re-scoring published it before this commits (then
        # this one row lacks its figure on the board until the re-run finishes).
        scored_on = {version.pk for version in versions}
        missed = sorted(newer.pk for newer in label_set_versions_to_score(benchmark=benchmark)
                        if newer.pk not in scored_on)
        # The review queue takes the unjudged top-1 pairs and re-queues the missed versions,
        # in this transaction (leaderboard/review/receivers.py).
        submission_scored.send(sender=Submission, submission=submission, novel=novel,
                               missed_versions=missed)
    # After the commit: the boards' rank_ub with this submission (docs/metrics.md §10.3).
    board_significance_schedule(benchmark_id=benchmark.pk)
    return True


def _scores_on_versions(
    predictions: Mapping[str, Predictions], versions: Sequence[LabelSetVersion],
    class_names: tuple[str, ...], example_names: Mapping[str, ExampleNamer],
) -> tuple[list[tuple[LabelSetVersion, dict[str, Any], np.ndarray | None]],
           dict[LabelSet, NovelPairs]]:
    """The records on every version (each label set's current one, and those being re-scored:
    `label_set_versions_to_score`, newest first per label set), and the unjudged top-1 pairs
    of each label set's newest version (what review has not decided yet)."""
    by_label_set: dict[int, list[LabelSetVersion]] = {}
    for version in versions:
        by_label_set.setdefault(version.label_set_id, []).append(version)
    # The current versions together (a new test set's gap needs the original's accuracy);
    # then each newer version on its own, oldest first, so the newest's pairs come last.
    layers = [[newest_first[-1] for newest_first in by_label_set.values()]]
    layers += [[version] for newest_first in by_label_set.values()
               for version in reversed(newest_first[:-1])]
    scores: list[tuple[LabelSetVersion, dict[str, Any], np.ndarray | None]] = []
    novel: dict[LabelSet, NovelPairs] = {}
    for layer in layers:
        on = {version.label_set.slug: version for version in layer}
        result = score_predictions(predictions, [compiled_for_version(v) for v in layer],
                                   class_names=class_names, example_names=example_names)
        for slug, record in result.records.items():
            scores.append((on[slug], record, result.hits.get(slug)))
            pairs = result.novel.get(slug)
            if pairs is None:
                novel.pop(on[slug].label_set, None)
            else:
                novel[on[slug].label_set] = pairs
    return scores, novel


SCORE_FIELDS = (
    "label_set", "accuracy", "correct", "total", "ci_low", "ci_high", "record", "hits", "updated",
)


def _score_row(submission_id: int, version: LabelSetVersion, record: dict[str, Any],
               hits: str | None) -> Score:
    return Score(
        submission_id=submission_id, label_set_version=version,
        label_set_id=version.label_set_id, accuracy=record.get("accuracy"),
        correct=record.get("correct") or 0, total=record.get("total") or 0,
        ci_low=record.get("ci_low"), ci_high=record.get("ci_high"), record=record,
        hits_id=hits,
    )


def score_upsert(*, submission: Submission, version: LabelSetVersion,
                 record: dict[str, Any], hits: np.ndarray | None = None) -> Score:
    """One Score row per (submission, version): re-scoring replaces it, never duplicates."""
    return scores_upsert(version=version, records={submission.pk: record},
                         hits=None if hits is None else {submission.pk: hits})[0]


def hit_vectors_store(*, hits: Mapping[K, np.ndarray]) -> dict[K, str]:
    """Store per-example hit vectors (scorer.headline_hits) packed, once per content; returns
    each one's digest (what Score.hits points at). A vector already stored is not written
    again: most of a new version's vectors are its parent's."""
    packed = {key: pack_hits(vector) for key, vector in hits.items()}
    digests = {key: hashlib.sha256(bits).hexdigest() for key, bits in packed.items()}
    HitVector.objects.bulk_create(
        [HitVector(digest=digests[key], bits=bits) for key, bits in packed.items()],
        ignore_conflicts=True, batch_size=500)
    return digests


def scores_upsert(*, version: LabelSetVersion, records: dict[int, dict[str, Any]],
                  hits: Mapping[int, np.ndarray] | None = None) -> list[Score]:
    """Many submissions' Score rows on one version in one statement (insert or replace).

    `hits`: per submission, scorer.headline_hits (stored packed, for the leaderboard's
    paired tests); a score written without it stores none."""
    digests = hit_vectors_store(hits=hits or {})
    return Score.objects.bulk_create(
        [_score_row(submission_id, version, record, digests.get(submission_id))
         for submission_id, record in records.items()],
        update_conflicts=True, unique_fields=("submission", "label_set_version"),
        update_fields=SCORE_FIELDS,
    )


def scores_copy(*, parent: LabelSetVersion, version: LabelSetVersion,
                exclude: Sequence[int]) -> None:
    """Every Score on `parent` becomes the same Score on `version` (the record's version_hash
    updated; the hits too, which only an excluded submission's can change), except for the
    `exclude`d submissions; one INSERT ... SELECT in the database,
    because a decision that moves a few scores must not rewrite ten thousand from Python."""
    table = connection.ops.quote_name(Score._meta.db_table)
    if connection.vendor == "postgresql":
        record = "jsonb_set(record, '{version_hash}', to_jsonb(%s::text))"
    elif connection.vendor == "sqlite":
        record = "json_set(record, '$.version_hash', %s)"
    else:  # pragma: no cover - the project runs on SQLite and PostgreSQL only
        raise NotImplementedError(connection.vendor)
    skip = ""
    if exclude:
        skip = f"AND submission_id NOT IN ({', '.join(['%s'] * len(exclude))})"
    now = timezone.now()
    sql = f"""
        INSERT INTO {table} (submission_id, label_set_version_id, label_set_id, accuracy,
                             correct, total, ci_low, ci_high, record, hits_digest, created,
                             updated)
        SELECT submission_id, %s, label_set_id, accuracy, correct, total, ci_low, ci_high,
               {record}, hits_digest, %s, %s
        FROM {table} WHERE label_set_version_id = %s {skip}
        ON CONFLICT (submission_id, label_set_version_id) DO UPDATE SET
            accuracy = excluded.accuracy, correct = excluded.correct, total = excluded.total,
            ci_low = excluded.ci_low, ci_high = excluded.ci_high, record = excluded.record,
            hits_digest = excluded.hits_digest, updated = excluded.updated
    """  # noqa: S608 - only quoted identifiers and placeholders are interpolated
    with connection.cursor() as cursor:
        cursor.execute(sql, [version.pk, version.content_hash, now, now, parent.pk, *exclude])


def submission_visibility_set(*, submission: Submission, public: bool) -> None:
    # One transaction: the generation bump commits with the change it announces
    # (leaderboard/presentation/caching.py), whichever caller (page, API, admin action).
    with transaction.atomic():
        # a withdrawn submission stays off the boards (leaderboard/submissions/control/)
        rows = Submission.objects.filter(pk=submission.pk)
        if public:
            rows = rows.filter(withdrawn__isnull=True)
        if not rows.update(public=public):
            raise SubmissionError("withdrawn", "this submission was withdrawn: it cannot be "
                                  "shown on the leaderboard again", http_status=409)
        benchmark_leaderboard_touch(benchmark_id=submission.benchmark_id)
        # the worker recomputes the boards' rank_ub with (or without) this row, after commit
        queue.board_significance_queue(benchmark_id=submission.benchmark_id)


def submission_details_set(*, submission: Submission, model_name: str, description: str,
                           paper_url: str, code_url: str) -> None:
    """What the submitter named and linked, as a maintainer corrects it in the admin; the
    leaderboard shows the name and links, so its cached pages are invalidated with it."""
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(
            model_name=model_name, description=description, paper_url=paper_url,
            code_url=code_url)
        benchmark_leaderboard_touch(benchmark_id=submission.benchmark_id)
