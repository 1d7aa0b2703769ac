"""Re-scoring: every new label-set version (a review decision, an import, an upgrade) has its
job, which scores each scored submission on it and then publishes it (docs/metrics.md §14);
a worker runs it (`version_rescore_run`), or manage.py scores_recompute here and now.

When what a metric reports changes (docs/metrics.md §5.1: multi-label accuracy became a mean
over classes), the scores the board shows are computed again by that same job.

A current version compiled by an older builder may lack an array the metric now reads (the
multi-label `original_labels`). Versions are immutable and named by their content, so it is
first upgraded (its family's `upgrade`, workers/scoring/upgrades.py): a new version, the
same labels plus that array, published like a review decision, so its history says what
happened and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import Max

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    example_namer,
    label_set_version_latest,
    label_set_versions_current,
)
from leaderboard.catalog.services import benchmark_leaderboard_touch, label_set_version_publish
from leaderboard.jobs.lifecycle import job_claim, job_finish
from leaderboard.review.models import VersionRescore
from leaderboard.review.panel.services import (
    ReviewError,
    label_set_revision_publish,
    version_rescore_request,
)
from leaderboard.review.rescoring.pool import ScoringInputs, scored_chunks
from leaderboard.review.rescoring.topk_index import IndexedFile, topk_at, topk_index_build
from leaderboard.review.services import review_items_record
from leaderboard.submissions.board_significance import board_significance_schedule
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from leaderboard.submissions.releases.services import releases_replay
from leaderboard.submissions.services import scores_copy, scores_upsert
from workers.scoring import label_set_builders
from workers.scoring.families.registry import family_named, missing_arrays
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.significance import unpack_hits

# Submissions whose new scores are written in one statement while re-scoring.
RESCORE_CHUNK = 200
# Told (submissions done, submissions in all) as re-scoring goes (manage.py scores_recompute).
Progress = Callable[[int, int], None]


def version_rescore_run(*, version_id: int, task_id: str,
                        progress: Progress | None = None) -> bool:
    """The re-scoring task's work on a claimed job (the worker's runner, or manage.py
    scores_recompute, holds its claim under `task_id`): re-score, finish. True once done;
    False when the claim was lost meanwhile, or the job asked for again while this ran (the
    task that request sent finishes it). `progress` is told how far the re-scoring is."""
    done = label_set_version_rescore(version_id=version_id, progress=progress)
    # Off the decision's path (its scores are published): the index the next one reads.
    label_set_topk_index_build(label_set=LabelSet.objects.get(versions__id=version_id))
    return job_finish(VersionRescore, job_id=version_id, task_id=task_id,
                      status=VersionRescore.Status.DONE, submissions=done)


def label_set_version_rescore(*, version_id: int, progress: Progress | None = None) -> int:
    """Score every scored submission on this version (idempotent); returns how many. The
    re-scoring job's state is its caller's (`version_rescore_run`).

    A version that differs from its parent only in which (example, class) pairs are judged
    how, at a few examples, re-scores only the submissions that predict a changed pair (fast:
    only each stored file's rows at those examples are read); anything else re-scores every
    submission from its stored predictions.

    Then the version is published (becomes current) if every scored submission now has its
    score on it: until then boards show the version before, with every figure it has."""
    version = LabelSetVersion.objects.select_related(
        "label_set__benchmark", "label_set__example_set", "parent").get(id=version_id)
    done = _rescore_incrementally(version)
    if done is None:
        done = _rescore_fully(version, progress)
    elif progress is not None:
        progress(done, done)
    if settings.EVALSERVER_SCORING_DELAY_MS:  # tests and debugging: scores stored, unpublished
        time.sleep(settings.EVALSERVER_SCORING_DELAY_MS / 1000)
    if not _publish_when_complete(version):
        benchmark_leaderboard_touch(benchmark_id=version.label_set.benchmark_id)
    # After the commit: the boards' rank_ub on the (maybe newly current) version, §10.3.
    board_significance_schedule(benchmark_id=version.label_set.benchmark_id)
    return done


def _publish_when_complete(version: LabelSetVersion) -> bool:
    """Publish the version, in one transaction with the check that no scored submission lacks
    its score on it (docs/metrics.md §14). One scored while this re-scoring ran, and missed by
    it, has asked for the re-scoring again (submissions.services.submission_scores_compute):
    that run publishes it."""
    with transaction.atomic():
        scored_on = Score.with_hidden.filter(label_set_version=version).values("submission_id")
        if _scored_files(version.label_set).exclude(submission_id__in=scored_on).exists():
            return False
        releases_replay(version=version)
        return label_set_version_publish(version_id=version.pk)


def _scored_files(label_set: LabelSet) -> Any:
    return (SubmissionFile.objects.filter(
        submission__benchmark=label_set.benchmark, submission__status=Submission.Status.SCORED,
        example_set=label_set.example_set).exclude(compact="").select_related("submission"))


def _rescore_fully(version: LabelSetVersion, progress: Progress | None = None) -> int:
    files = _scored_files(version.label_set)
    total = files.count() if progress is not None else 0

    def report(done: int) -> None:
        if progress is not None:
            progress(done, total)

    report(0)
    return _rescore_rows(version, compiled_for_version(version),
                         files.iterator(chunk_size=RESCORE_CHUNK), report)


# Beyond this many changed examples, reading each stored file's rows one by one costs more
# than reading the files whole.
INCREMENTAL_MAX_EXAMPLES = 64


def _changed_pairs(old: label_set_builders.CompiledLabelSet,
                   new: label_set_builders.CompiledLabelSet) -> np.ndarray | None:
    """The (example * num_classes + class) keys whose membership differs in any key array of
    the two versions; None when anything else differs (a mask, a per-example array), since
    then a total may change and every score must be recomputed."""
    if (old.family != new.family or old.size != new.size
            or set(old.arrays) != set(new.arrays)):
        return None
    changed = []
    for name, array in new.arrays.items():
        if name.endswith("_keys"):
            changed.append(_sorted_symmetric_difference(array, old.arrays[name]))
        elif not np.array_equal(array, old.arrays[name]):
            return None
    return np.unique(np.concatenate(changed)) if changed else None


def _sorted_symmetric_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.setxor1d of two sorted unique key arrays (what a compiled label set stores) by
    binary search, without sorting their concatenation again: a decision's version differs
    from its parent in a few keys of several hundred thousand (30x faster on ReaL's)."""
    if np.array_equal(a, b):
        return a[:0]

    def only(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if y.size == 0:
            return x
        position = np.searchsorted(y, x)
        position[position == y.size] = 0
        return x[y[position] != x]

    return np.union1d(only(a, b), only(b, a))


def _rescore_incrementally(version: LabelSetVersion) -> int | None:
    """The parent's scores, re-computed only for submissions that predict (anywhere in their
    stored top-k) a pair whose judgement changed; None when that shortcut is not exact or not
    cheap (then every submission is re-scored).

    Every metric of a key-based family (ReaL, multi-label, ImageNet-M) sums per-example terms
    that depend only on the judgement of the submission's own predicted pairs, so a submission
    none of whose predicted pairs changed keeps its record; it is copied inside the database."""
    label_set, parent = version.label_set, version.parent
    if parent is None:
        return None
    new, old = compiled_for_version(version), compiled_for_version(parent)
    changed = _changed_pairs(old, new)
    if changed is None:
        return None
    examples = np.unique(changed // new.num_classes)
    if examples.size > INCREMENTAL_MAX_EXAMPLES:
        return None
    files = _scored_files(label_set)
    rows = _indexed_files(files)
    parent_ids = set(Score.with_hidden.filter(label_set_version=parent)
                     .values_list("submission_id", flat=True))
    if any(row.submission_id not in parent_ids for row in rows):
        return None  # a submission was not scored on the parent
    # [submission, example, k], from the top-k index where it has the segment (topk_index.py)
    tops = topk_at(storage=_compact_storage(), example_set_id=label_set.example_set_id,
                   files=rows, examples=examples)
    # a missing guess (-1) is a key no pair has
    keys = np.where(tops >= 0, examples[None, :, None] * new.num_classes + tops, -1)
    hit = cast(list[bool], np.isin(keys, changed).reshape(len(rows), -1).any(axis=1).tolist())
    moved = [row.submission_id for row, h in zip(rows, hit, strict=True) if h]
    if not _rescore_revised(version, old, new, examples,
                            {row.submission_id: top for row, top, h in
                             zip(rows, tops, hit, strict=True) if h}):
        _rescore_rows(version, new, list(files.filter(submission_id__in=moved)))
    scores_copy(parent=parent, version=version, exclude=moved)
    return len(rows)


def _rescore_revised(version: LabelSetVersion, old: CompiledLabelSet, new: CompiledLabelSet,
                     examples: np.ndarray, tops: dict[int, np.ndarray]) -> bool:
    """The moved submissions' scores on a version made by review decisions, from their
    parent's and their top-k at the changed examples (the family's `revised_record`, exactly
    what scoring their stored files gives) instead of from each stored file; False (nothing
    written) where that does not apply: a family without one, a version whose novel pairs must
    be recorded as items (`_rescore_rows`), a parent score stored without its hits."""
    label_set = version.label_set
    revised_record = family_named(new.family).revised_record
    if revised_record is None or (label_set.reviewable and "settled" not in version.summary):
        return False
    stored = {submission_id: (record, bits) for submission_id, record, bits in
              Score.with_hidden.filter(label_set_version=version.parent_id,
                                       submission_id__in=list(tops))
              .values_list("submission_id", "record", "hits__bits")}
    if len(stored) != len(tops) or any(bits is None for _, bits in stored.values()):
        return False
    size = int(np.count_nonzero(new.arrays["mask"]))
    records: dict[int, dict[str, Any]] = {}
    hits: dict[int, np.ndarray] = {}
    for submission_id, top in tops.items():
        record, bits = stored[submission_id]
        records[submission_id], hits[submission_id] = revised_record(
            old, new, record, unpack_hits(bytes(bits), size), examples, top)
        if len(records) == RESCORE_CHUNK:
            scores_upsert(version=version, records=records, hits=hits)
            records, hits = {}, {}
    if records:
        scores_upsert(version=version, records=records, hits=hits)
    return True


def _compact_storage() -> Storage:
    return SubmissionFile._meta.get_field("compact").storage


def _indexed_files(files: Any) -> list[IndexedFile]:
    return [IndexedFile(submission_id, file_id, sha256, str(compact), example_set) for
            submission_id, file_id, sha256, compact, example_set in
            files.values_list("submission_id", "id", "sha256", "compact", "example_set__slug")]


def label_set_topk_index_build(*, label_set: LabelSet) -> int:
    """Build the top-k index segments the label set's example set lacks (topk_index.py): after
    a re-score has published, so a decision's next re-score finds them. Returns how many;
    none for a family without pair keys, whose re-scores are never incremental."""
    current = label_set_version_latest(label_set=label_set)
    if current is None or not any(name.endswith("_keys")
                                  for name in compiled_for_version(current).arrays):
        return 0
    newest = Submission.objects.aggregate(newest=Max("id"))["newest"] or 0
    return topk_index_build(storage=_compact_storage(), example_set_id=label_set.example_set_id,
                            files=_indexed_files(_scored_files(label_set)), newest_id=newest)


def _rescore_rows(version: LabelSetVersion, compiled: label_set_builders.CompiledLabelSet,
                  rows: Any, progress: Callable[[int], None] | None = None) -> int:
    """Score each stored file on the version from its compact predictions (in
    EVALSERVER_RESCORE_PROCESSES processes when there are many: rescoring/pool.py), in
    chunked upserts."""
    label_set = version.label_set
    inputs = ScoringInputs(compiled, benchmark_class_names(benchmark=label_set.benchmark),
                           example_namer(example_set=label_set.example_set),
                           label_set.example_set.slug)
    # A version made by review decisions only ever judges more pairs, so it has no novel pair
    # that is not already an item; a version from elsewhere (an import) may have new ones.
    record_items = label_set.reviewable and "settled" not in version.summary
    done = 0
    chunk: dict[int, dict[str, Any]] = {}
    hits: dict[int, np.ndarray] = {}
    for scored_rows, scored in scored_chunks(inputs=inputs, rows=rows,
                                             processes=settings.EVALSERVER_RESCORE_PROCESSES):
        for row, result in zip(scored_rows, scored, strict=True):
            chunk[result.submission_id] = result.record
            hits[result.submission_id] = result.hits
            if result.novel is not None and record_items:
                with transaction.atomic():
                    review_items_record(submission=row.submission, label_set=label_set,
                                        novel=result.novel)
            if len(chunk) == RESCORE_CHUNK:
                scores_upsert(version=version, records=chunk, hits=hits)
                done += len(chunk)
                chunk, hits = {}, {}
                if progress is not None:
                    progress(done)
    if chunk:
        scores_upsert(version=version, records=chunk, hits=hits)
        done += len(chunk)
        if progress is not None:
            progress(done)
    return done


UPGRADE_NOTE = ("Upgraded to the current label-set builder: the same labels, plus {arrays} "
                "(for the class-mean accuracy, docs/metrics.md §5.1).")


@dataclass(frozen=True)
class Upgrade:
    version: LabelSetVersion
    added: list[str]


def _original_labels(label_set: LabelSet) -> CompiledLabelSet:
    """The current `original` labels of the label set's example set (what its classes mean)."""
    for version in label_set_versions_current(benchmark=label_set.benchmark):
        if (family_named(version.label_set.family).reference
                and version.label_set.example_set_id == label_set.example_set_id):
            return compiled_for_version(version)
    raise ReviewError("no_original_labels",
                      f"{label_set} needs the original labels of its example set, and "
                      f"{label_set.benchmark.slug} has no `original` label set on it")


def label_set_version_upgrade(*, label_set: LabelSet, author: User | None = None
                              ) -> Upgrade | None:
    """A new version of the label set adding the arrays its current version lacks (re-scored
    after commit, as every new version); None when the current version lacks nothing."""
    current = label_set_version_latest(label_set=label_set)
    missing = [] if current is None else missing_arrays(compiled_for_version(current))
    if not missing:
        return None
    upgrade = family_named(label_set.family).upgrade
    if upgrade is None:
        raise ReviewError("no_upgrade", f"{label_set} lacks {missing}: no upgrade adds them")
    original = _original_labels(label_set).arrays["labels"]

    def revise(parent: CompiledLabelSet) -> tuple[CompiledLabelSet, list[dict[str, Any]]]:
        assert upgrade is not None
        try:
            return upgrade(parent, original), []
        except ValueError as exc:  # labels that do not fit it
            raise ReviewError("no_upgrade", str(exc)) from None

    version = label_set_revision_publish(label_set=label_set, author=author, revise=revise,
                                         note=UPGRADE_NOTE.format(arrays=", ".join(missing)))
    return Upgrade(version, missing)


def version_rescore_now(*, version_id: int, task_id: str,
                        progress: Progress | None = None) -> str:
    """Re-score every scored submission on the version in this process, as its re-scoring
    job (`version_rescore_run`, what a worker runs): asked for and claimed under
    `task_id` in one transaction, so a worker that receives the job's message finds it held
    and leaves it. "done", or "skipped" when the job could not be claimed (out of attempts)
    or was asked for again meanwhile. Stopped half-way (an error, Ctrl-C), the job stays
    running under a task no broker knows, and the sweep hands it to a worker."""
    with transaction.atomic():
        version_rescore_request(version_id=version_id)
        # the attempts of the worker's re-scoring task (leaderboard/tasks/registry.py), the same job
        if not job_claim(VersionRescore, job_id=version_id, task_id=task_id,
                         max_attempts=settings.EVALSERVER_RESCORE_MAX_ATTEMPTS):
            return "skipped"
    done = version_rescore_run(version_id=version_id, task_id=task_id, progress=progress)
    return "done" if done else "skipped"
