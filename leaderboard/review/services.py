"""The review queue: novel predictions become items, reviewers vote, the majority decides, and
each decision makes a new label-set version that every submission is re-scored on.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Max, OuterRef, Subquery
from django.utils import timezone

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import benchmark_class_names, image_set_example_namer
from leaderboard.catalog.services import benchmark_leaderboard_touch, label_set_version_publish
from leaderboard.common.storage import stored_npz
from leaderboard.jobs.lifecycle import job_finish
from leaderboard.review.models import (
    MistakeCategory,
    ReviewItem,
    ReviewItemSubmission,
    ReviewVote,
    Severity,
    Verdict,
    VersionRescore,
)
from leaderboard.review.panel import (
    Panel,
    ReviewError,
    label_set_revision_publish,
    panel_vote_cast,
)
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from leaderboard.submissions.services import scores_copy, scores_upsert
from leaderboard.submissions.significance import board_significance_schedule
from workers.scoring import label_set_builders, revisions
from workers.scoring.compact import npz_member_rows
from workers.scoring.metrics import NovelPairs, headline_hits, score_label_set
from workers.scoring.predictions import Predictions

# Submissions whose new scores are written in one statement while re-scoring.
RESCORE_CHUNK = 200
# Told (submissions done, submissions in all) as re-scoring goes (manage.py scores_recompute).
Progress = Callable[[int, int], None]


def review_items_record(*, submission: Submission, label_set: LabelSet, novel: NovelPairs) -> int:
    """Make (or find) one item per novel pair and link the submission to it; idempotent.

    Returns how many items the submission predicts on this label set."""
    if len(novel) == 0:
        return 0
    examples = novel.examples.tolist()
    classes = novel.classes.tolist()
    ReviewItem.objects.bulk_create(
        [ReviewItem(label_set=label_set, example_index=e, class_id=c)
         for e, c in zip(examples, classes, strict=True)],
        ignore_conflicts=True, batch_size=1000,
    )
    wanted = dict(zip(zip(examples, classes, strict=True),
                      (novel.scores.tolist() if novel.scores is not None
                       else [None] * len(examples)), strict=True))
    ids = {}
    for chunk in range(0, len(examples), 900):  # stay under SQLite's parameter limit
        for item_id, e, c in ReviewItem.objects.filter(
                label_set=label_set, example_index__in=examples[chunk:chunk + 900]
        ).values_list("id", "example_index", "class_id"):
            if (e, c) in wanted:
                ids[(e, c)] = item_id
    ReviewItemSubmission.objects.bulk_create(
        [ReviewItemSubmission(item_id=ids[pair], submission=submission, score=score)
         for pair, score in wanted.items()],
        ignore_conflicts=True, batch_size=1000,
    )
    sources = ReviewItemSubmission.objects.filter(item=OuterRef("pk")).values("item")
    ReviewItem.objects.filter(id__in=list(ids.values())).update(
        submission_count=Subquery(sources.annotate(n=Count("id")).values("n")),
        max_score=Subquery(sources.annotate(m=Max("score")).values("m")),
    )
    return len(ids)


def majority(verdicts: Sequence[str]) -> revisions.VerdictKind:
    """The verdict with the most votes; a tie for the most is `unclear`."""
    counts = Counter(verdicts).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "unclear"
    return cast(revisions.VerdictKind, counts[0][0])


def review_vote_cast(*, item_id: int, reviewer: User, verdict: str, problematic: bool = False,
                     severity: str = "", category: str = "", note: str = "") -> ReviewItem:
    """Record one reviewer's vote on a novel prediction; when the panel is full the majority
    decides the item (the panel pipeline: leaderboard/review/panel.py)."""
    if verdict not in Verdict.values:
        raise ReviewError("invalid_verdict", f"verdict must be one of {', '.join(Verdict.values)}",
                          field="verdict")
    if verdict != Verdict.WRONG and (severity or category):
        raise ReviewError("invalid_input", "severity and category describe a wrong prediction",
                          field="severity" if severity else "category")
    for name, value, choices in (("severity", severity, Severity),
                                 ("category", category, MistakeCategory)):
        if value and value not in choices.values:
            raise ReviewError("invalid_input", f"{name} must be one of "
                              f"{', '.join(choices.values)}", field=name)
    item: ReviewItem = panel_vote_cast(
        REVIEW_PANEL, item_id=item_id, reviewer=reviewer,
        vote={"verdict": verdict, "problematic": problematic, "severity": severity,
              "category": category, "note": note})
    return item


def _decide(item: ReviewItem, author: User) -> None:
    votes = list(item.votes.values_list("verdict", "problematic"))
    decided = majority([v for v, _ in votes])
    flagged = sum(p for _, p in votes) * 2 > len(votes)  # a majority flags the ground truth
    version = label_set_version_revise(
        label_set=item.label_set, items=[item],
        verdicts=[revisions.Verdict(item.example_index, item.class_id, decided, flagged)],
        author=author)
    ReviewItem.objects.filter(id=item.pk, status=ReviewItem.Status.OPEN).update(
        status=ReviewItem.Status.DECIDED, verdict=decided, problematic=flagged,
        decided_at=timezone.now(), version=version)
    item.refresh_from_db()


REVIEW_PANEL = Panel(item_model=ReviewItem, vote_model=ReviewVote, item_field="item",
                     name="review item", short="item",
                     panel_size=lambda benchmark: benchmark.review_panel_size,
                     decide=_decide)


def label_set_version_revise(*, label_set: LabelSet, verdicts: Sequence[revisions.Verdict],
                             items: Sequence[ReviewItem], author: User | None,
                             note: str = "") -> LabelSetVersion:
    """A new version = the current one with these verdicts applied; re-scored after commit."""

    def revise(current: label_set_builders.CompiledLabelSet
               ) -> tuple[label_set_builders.CompiledLabelSet, list[dict[str, Any]]]:
        settled = [{"item": i.pk, "example": i.example_index, "class": i.class_id,
                    "verdict": v.verdict, "problematic": v.problematic}
                   for i, v in zip(items, verdicts, strict=True)]
        return revisions.apply_verdicts(current, verdicts), settled

    return label_set_revision_publish(label_set=label_set, author=author, revise=revise,
                                      note=note or f"{len(verdicts)} review decision(s)")


def version_rescore_run(*, version_id: int, task_id: str,
                        progress: Progress | None = None) -> bool:
    """The re-scoring task's work on a claimed job (the worker's runner, or manage.py
    scores_recompute, holds its claim under `task_id`): re-score, finish. True once done;
    False when the claim was lost meanwhile, or the job asked for again while this ran (the
    task that request sent finishes it). `progress` is told how far the re-scoring is."""
    done = label_set_version_rescore(version_id=version_id, progress=progress)
    return job_finish(VersionRescore, job_id=version_id, task_id=task_id,
                      status=VersionRescore.Status.DONE, submissions=done)


def _compact_predictions(row: SubmissionFile) -> Predictions:
    with stored_npz(row.compact) as arrays:
        topk = arrays["topk"].astype(np.int32)
        scores = arrays["topk_scores"] if "topk_scores" in arrays.files else None
    return Predictions(topk=topk, topk_scores=scores, scores=None, scores_kind=None)


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
        "label_set__benchmark", "label_set__image_set", "parent").get(id=version_id)
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
        scored_on = Score.objects.filter(label_set_version=version).values("submission_id")
        if _scored_files(version.label_set).exclude(submission_id__in=scored_on).exists():
            return False
        return label_set_version_publish(version_id=version.pk)


def _scored_files(label_set: LabelSet) -> Any:
    return (SubmissionFile.objects.filter(
        submission__benchmark=label_set.benchmark, submission__status=Submission.Status.SCORED,
        image_set=label_set.image_set).exclude(compact="").select_related("submission"))


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
            changed.append(np.setxor1d(array, old.arrays[name]))
        elif not np.array_equal(array, old.arrays[name]):
            return None
    return np.unique(np.concatenate(changed)) if changed else None


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
    rows = list(files.values_list("submission_id", "compact"))
    parent_ids = set(Score.objects.filter(label_set_version=parent)
                     .values_list("submission_id", flat=True))
    if any(submission_id not in parent_ids for submission_id, _ in rows):
        return None  # a submission was not scored on the parent
    storage = SubmissionFile._meta.get_field("compact").storage
    stored = []
    for _, name in rows:  # a local file reads only those rows; a remote one is fetched
        with storage.open(str(name), "rb") as handle:
            stored.append(npz_member_rows(handle, "topk", examples))
    width = max((top.shape[1] for top in stored), default=1)
    tops = np.full((len(stored), examples.size, width), -1, dtype=np.int64)  # -1: no guess
    for i, top in enumerate(stored):
        tops[i, :, :top.shape[1]] = top
    # [submission, example, k]; a missing guess (-1) is a key no pair has
    keys = np.where(tops >= 0, examples[None, :, None] * new.num_classes + tops, -1)
    hit = cast(list[bool], np.isin(keys, changed).reshape(len(stored), -1).any(axis=1).tolist())
    moved = [submission_id for (submission_id, _), h in zip(rows, hit, strict=True) if h]
    affected = list(files.filter(submission_id__in=moved))
    _rescore_rows(version, new, affected)
    scores_copy(parent=parent, version=version, exclude=moved)
    return len(rows)


def _rescore_rows(version: LabelSetVersion, compiled: label_set_builders.CompiledLabelSet,
                  rows: Any, progress: Callable[[int], None] | None = None) -> int:
    """Score each stored file on the version from its compact predictions, in chunked upserts."""
    label_set = version.label_set
    names = benchmark_class_names(benchmark=label_set.benchmark)
    example_name = image_set_example_namer(image_set=label_set.image_set)
    # A version made by review decisions only ever judges more pairs, so it has no novel pair
    # that is not already an item; a version from elsewhere (an import) may have new ones.
    record_items = label_set.reviewable and "settled" not in version.summary
    done = 0
    chunk: dict[int, dict[str, Any]] = {}
    hits: dict[int, np.ndarray] = {}
    for row in rows:
        preds = _compact_predictions(row)
        record, novel = score_label_set(compiled, preds, class_names=names,
                                        example_name=example_name)
        chunk[row.submission_id] = record
        hits[row.submission_id] = headline_hits(compiled, preds)
        if novel is not None and record_items:
            with transaction.atomic():
                review_items_record(submission=row.submission, label_set=label_set, novel=novel)
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
