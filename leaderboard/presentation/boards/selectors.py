"""Reads. Views, the API and services read the database through these functions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, cast

from django.core.cache import cache

from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.presentation.boards.hidden import (
    PRIVATE_SUFFIX,
    hidden_cells_add,
    hidden_phases,
    private_significance_add,
    revealed_private_slugs,
)
from leaderboard.presentation.boards.rank_ub import leaderboard_significance_add
from leaderboard.submissions.models import Score, Submission
from workers.scoring import ranking
from workers.scoring.families.base import CLOPPER_PEARSON
from workers.scoring.families.registry import family_named, reference_family

_CACHEABLE_QUERY = re.compile(r"[-\w.]{1,64}:[0-9a-fA-F]{0,64}|[-\w.]{1,64}:None", re.ASCII)


class LeaderboardQueryError(ValueError):
    def __init__(self, code: str, message: str, field: str) -> None:
        super().__init__(message)
        self.code, self.message, self.field = code, message, field


@dataclass(frozen=True)
class LeaderboardColumn:
    slug: str
    name: str
    version_number: int
    # None for a hidden label set: the hash of its labels would let anyone check a guess of
    # them (docs/metrics.md §17); its version is told by its number only.
    version_hash: str | None
    # The number of a newer version of the label set whose scores are being computed: the
    # column keeps showing this (still valid) version's figures until that one is published.
    pending_version: int | None = None
    # How its cells' intervals are computed (docs/metrics.md §1.3, §1.7): "clopper_pearson",
    # or "normal" for a mean over classes (the multi-label scores since the class mean).
    ci_method: str = "clopper_pearson"
    # The column its rank shifts are from: the benchmark's reference label set (of the
    # reference family: docs/families.md), or for a hidden label set's revealed private part,
    # its public part (the shake-up: docs/metrics.md §17.4).
    shift_from: str = field(kw_only=True)
    # A hidden label set's release mechanism ("exact", "ladder", "parameter_free"): its cells
    # are released figures, not scores (docs/metrics.md §17.1); "" for every other column.
    release: str = field(kw_only=True, default="")

    @property
    def rescoring(self) -> bool:
        return self.pending_version is not None


@dataclass(frozen=True)
class Leaderboard:
    benchmark: str
    sort: str
    # the slug of the column rank shifts are from (the reference label set: leaderboard_get)
    reference: str
    columns: list[LeaderboardColumn]
    rows: list[dict[str, Any]]
    # False while the worker has not computed rank_ub for these rows (docs/metrics.md §10.3)
    significance_ready: bool = True


def _columns(benchmark: Benchmark, version: str | None
             ) -> list[tuple[LabelSet, LabelSetVersion, LabelSetVersion | None]]:
    """(label set, version shown, newer version being re-scored) per label set: the current
    (newest published) version, or the one pinned by `version`."""
    versions = (LabelSetVersion.objects.filter(label_set__benchmark=benchmark)
                .select_related("label_set").order_by("label_set_id", "-number"))
    chosen: dict[int, tuple[LabelSet, LabelSetVersion, LabelSetVersion | None]] = {}
    unpublished: dict[int, LabelSetVersion] = {}  # the newest, per label set
    pinned = None
    if version:
        # Not a hidden label set's version: whether a guessed hash matches would tell whether
        # the guessed labels are its labels (docs/metrics.md §17).
        matches = [v for v in versions if not v.label_set.labels_hidden
                   and v.content_hash.startswith(version.lower())]
        if len(version) < 6 or len(matches) != 1:
            raise LeaderboardQueryError(
                "unknown_version",
                f"no single label-set version of {benchmark.slug} has hash {version!r} "
                "(give at least 6 leading characters)", "version")
        pinned = matches[0]
    for v in versions:  # newest first: a label set's unpublished versions precede its current
        if pinned is not None and v.label_set_id == pinned.label_set_id:
            # a pinned version still being re-scored is marked as such too
            chosen[v.label_set_id] = (v.label_set, pinned, None if pinned.published else pinned)
        elif v.label_set_id in chosen:
            continue
        elif v.published is None:
            unpublished.setdefault(v.label_set_id, v)
        else:
            chosen[v.label_set_id] = (v.label_set, v, unpublished.get(v.label_set_id))
    return [chosen[k] for k in sorted(chosen)]


def _ci_method(label_set: LabelSet, version: LabelSetVersion) -> str:
    """The interval of a column's scores, as their records name it: a family's that is a mean
    over classes names it in each record, and scores stored before the class mean do not
    (one row read)."""
    if family_named(label_set.family).interval == CLOPPER_PEARSON:
        return CLOPPER_PEARSON
    method = (Score.objects.filter(label_set_version=version)
              .values_list("record__ci_method", flat=True).first())
    return method if isinstance(method, str) else CLOPPER_PEARSON


def leaderboard_get(*, benchmark: Benchmark, sort: str | None = None,
                    version: str | None = None) -> Leaderboard:
    """Public scored submissions with scores, ranks and rank shifts (cached per generation),
    on each label set's current version (the newest published one: docs/metrics.md §14), or
    on the version `version` names; sorted by `sort`, by default the reference label set.

    The reference label set is the benchmark's of the reference family (docs/families.md;
    `original` on the built-in benchmarks), else its first column.
    rank_shift = rank under the reference minus rank under each label set (positive = moved
    up).
    Each row also has `rank_ub` (1 + the rows significantly better) and `mcnemar_p` (against
    the row above) on the sort label set, as the worker stored them
    (leaderboard/presentation/boards/rank_ub.py).
    """
    # t5: a Leaderboard has `reference` (a board cached before it would lack it)
    key = f"leaderboard:t5:{benchmark.pk}:{benchmark.leaderboard_generation}:{sort}:{version}"
    # Only well-formed query values reach the cache; anything else is refused below.
    cacheable = _CACHEABLE_QUERY.fullmatch(f"{sort}:{version}") is not None
    cached = cache.get(key) if cacheable else None
    if cached is not None:
        return cast(Leaderboard, cached)
    columns = _columns(benchmark, version)
    slugs = [ls.slug for ls, _, _ in columns]
    reference = next((ls.slug for ls, _, _ in columns
                      if ls.family == reference_family().name), slugs[0] if slugs else "")
    sort = sort or reference
    phases = hidden_phases(columns=columns)
    private = revealed_private_slugs(columns=columns, phases=phases)
    if sort not in slugs + private:
        raise LeaderboardQueryError(
            "unknown_label_set", f"cannot sort by {sort!r}; {benchmark.slug} has "
            + ", ".join(slugs), "sort")
    by_id = {ls.pk: ls.slug for ls, _, _ in columns}
    subs = list(Submission.objects.filter(
        benchmark=benchmark, public=True, status=Submission.Status.SCORED)
        .values_list("id", "model_name", "owner__username", "created").order_by("id"))
    scores: dict[int, dict[str, dict[str, Any]]] = {s[0]: {} for s in subs}
    sort_version = next(v for ls, v, _ in columns
                        if ls.slug == sort or ls.slug + PRIVATE_SUFFIX == sort)
    digests: dict[int, str | None] = {}  # each row's hits on the sort version
    for sub_id, ls_id, acc, low, high, correct, total, digest, version_id in Score.objects.filter(
            label_set_version__in=[v for _, v, _ in columns],
            submission__public=True, submission__status=Submission.Status.SCORED,
            submission__benchmark=benchmark).values_list(
            "submission_id", "label_set_id", "accuracy", "ci_low", "ci_high", "correct", "total",
            "hits_id", "label_set_version_id"):
        if version_id == sort_version.pk:
            digests[sub_id] = digest
        scores[sub_id][by_id[ls_id]] = {"accuracy": acc, "ci_low": low, "ci_high": high,
                                        "correct": correct, "total": total}
    # A hidden label set's cells are its released figures, never its scores (§17).
    hidden = hidden_cells_add(columns=columns, phases=phases, scores=scores)
    slugs += [column.slug for column in hidden.private]
    if sort in hidden.hidden:  # one row per released figure (under the Ladder: per participant)
        subs = [s for s in subs if sort in scores[s[0]]]
    # A revealed private part's rank shift is from the public part: the shake-up.
    shift_from = {c.slug: c.public_slug for c in hidden.private}
    records = [scores[s[0]] for s in subs]
    rank_arrays = {slug: ranking.ranks(records, slug) for slug in slugs}
    rows: list[dict[str, Any]] = []
    for i, (sub_id, model_name, owner, created) in enumerate(subs):
        ranks = {slug: int(rank_arrays[slug][i]) for slug in slugs
                 if scores[sub_id].get(slug, {}).get("accuracy") is not None}
        shift = {slug: ranks[shift_from.get(slug, reference)] - ranks[slug] for slug in ranks
                 if shift_from.get(slug, reference) in ranks}
        rows.append({"submission_id": sub_id, "model_name": model_name, "owner": owner,
                     "created": created, "scores": scores[sub_id], "ranks": ranks,
                     "rank_shift": shift})
    big = len(rows) + 1
    rows.sort(key=lambda r: (cast(dict[str, int], r["ranks"]).get(sort, big), r["submission_id"]))
    if sort in hidden.packed:
        private_significance_add(rows=rows, sort=sort, packed=hidden.packed[sort])
        ready = True
    elif sort in hidden.hidden:
        for row in rows:
            row["rank_ub"] = row["mcnemar_p"] = None
        ready = True
    else:
        ready = leaderboard_significance_add(
            benchmark=benchmark, version=sort_version, sort=sort, rows=rows, digests=digests,
            # a pinned version may be older: the worker computes current ones
            current=version is None)
    board = Leaderboard(benchmark.slug, sort, reference, [
        LeaderboardColumn(ls.slug, ls.name, v.number,
                          None if ls.labels_hidden else v.content_hash,
                          None if pending is None else pending.number,
                          ci_method=_ci_method(ls, v), shift_from=reference,
                          release=ls.release if ls.labels_hidden else "")
        for ls, v, pending in columns] + [
        LeaderboardColumn(c.slug, c.name, c.version.number, None,  # a hidden label set's
                          shift_from=c.public_slug) for c in hidden.private],
        rows, significance_ready=ready)
    if cacheable:
        cache.set(key, board, timeout=3600)
    return board


def leaderboard_sort_slugs() -> list[str]:
    """Every value `sort` can take on some board, by slug: the label sets with a published
    version (a board's columns) of the benchmarks not hidden."""
    return list(LabelSet.objects.filter(benchmark__hidden=False, versions__published__isnull=False)
                .values_list("slug", flat=True).distinct().order_by("slug"))
