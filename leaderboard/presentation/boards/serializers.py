"""Input and output shapes of the benchmark and leaderboard operations."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone
from rest_framework import serializers

from leaderboard.catalog.models import LabelSet
from leaderboard.common.api import QueryIntegerField
from leaderboard.presentation.boards.selectors import (
    Leaderboard,
    LeaderboardColumn,
    leaderboard_sort_slugs,
)

# Rows per page of the JSON board (docs/api.md §5.2): a page of 100 rows is about 100 KB.
PAGE_SIZE_DEFAULT = 100
PAGE_SIZE_MAX = 1000


class LeaderboardQueryInput(serializers.Serializer):
    # the default, the benchmark's reference label set, is the board's to resolve
    # (leaderboard_get): a bundle may call it anything
    sort = serializers.CharField(
        required=False, default=None,
        help_text="the label set to rank by (default: the benchmark's reference label set, "
                  "`original` on the built-in benchmarks)")
    version = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="content hash (at least 6 leading characters) of one label-set version "
                  "to show instead of that label set's current one")
    page = QueryIntegerField(
        min_value=1, default=1,
        help_text="1-based page of rows; ranks are over the whole board (a page past the "
                  "last answers 404)")
    page_size = QueryIntegerField(
        min_value=1, max_value=PAGE_SIZE_MAX, default=PAGE_SIZE_DEFAULT,
        help_text=f"rows per page, {PAGE_SIZE_DEFAULT} by default, at most {PAGE_SIZE_MAX}")


class LeaderboardQuerySchema(LeaderboardQueryInput):
    """The query as the schema documents it: `sort` as the label sets the boards have, read
    when the schema is generated (like the submission form's file fields), so that a value
    no board can be ranked by is schema-invalid. The view validates with LeaderboardQueryInput,
    whose error names the label sets of the benchmark asked for: one schema serves every
    benchmark's board, so a label set of another benchmark is schema-valid and refused."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # none before the catalog tables exist (`manage.py check --deploy` generates the
        # schema on a server that has not migrated yet), or before a benchmark is loaded
        slugs = (leaderboard_sort_slugs()
                 if LabelSet._meta.db_table in connection.introspection.table_names() else [])
        if slugs:
            fields["sort"] = serializers.ChoiceField(
                choices=slugs, required=False,
                help_text="the label set to rank by (default: the benchmark's reference label "
                          "set, `original` on the built-in benchmarks): one of the "
                          "benchmark's label sets (GET /api/benchmarks/{slug}/ lists them)")
        return fields


class LeaderboardColumnOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    version = serializers.IntegerField(source="version_number",
                                       help_text="the version whose scores the column shows")
    version_hash = serializers.CharField(
        allow_null=True, help_text="the version's content hash; null for a hidden label set, "
        "whose labels it would let anyone check (docs/metrics.md §17)")
    ci_method = serializers.ChoiceField(
        choices=["clopper_pearson", "normal"],
        help_text="how the column's 95% intervals are computed: `clopper_pearson` (exact "
                  "binomial), or `normal` where the accuracy is a mean over classes (multilabel: "
                  "the normal approximation with per-class binomial variances, "
                  "docs/metrics.md §1.7)")
    rescoring = serializers.BooleanField(
        help_text="a newer version of the label set is being re-scored; the column keeps "
                  "this version's (still valid) figures until every score exists on it")
    pending_version = serializers.IntegerField(
        allow_null=True, help_text="the number of that newer version, or null")
    shift_from = serializers.CharField(
        help_text="the column each row's rank shift in this column is from: the benchmark's "
                  "reference label set (`original` on the built-in benchmarks), or "
                  "for a hidden label set's revealed private part (slug `<label set>-private`) "
                  "the public part, i.e. the shake-up (docs/metrics.md §17.4)")


class LeaderboardCellOutput(serializers.Serializer):
    accuracy = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(
        allow_null=True, help_text="95% interval, computed as the column's `ci_method` says")
    ci_high = serializers.FloatField(allow_null=True)
    correct = serializers.IntegerField(
        allow_null=True, help_text="evaluated examples counted correct; null in a hidden label "
        "set's column, whose cells are released figures (docs/metrics.md §17)")
    total = serializers.IntegerField(help_text="examples evaluated")


class LeaderboardRowOutput(serializers.Serializer):
    submission_id = serializers.IntegerField()
    model_name = serializers.CharField()
    owner = serializers.CharField(help_text="username of the submitter")
    created = serializers.DateTimeField()
    scores = serializers.DictField(child=LeaderboardCellOutput(),
                                   help_text="by label set slug")
    ranks = serializers.DictField(child=serializers.IntegerField(),
                                  help_text="rank under each label set (1 = best; ties share)")
    rank_shift = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="rank under the reference label set (the columns' `shift_from`) minus rank "
                  "under the label set (positive = moved up)")
    rank_ub = serializers.IntegerField(
        allow_null=True,
        help_text="1 + the number of rows significantly better on the sort label set: ranked "
                  "higher with p < 0.05 in a two-sided exact McNemar test on the paired "
                  "per-example results, pairwise, not corrected for multiple comparisons "
                  "(docs/metrics.md §10.3); null without a score or stored per-example results "
                  "on the sort label set, or while the worker has not computed it yet")
    mcnemar_p = serializers.FloatField(
        allow_null=True,
        help_text="exact two-sided McNemar p-value between this row and the row above on the "
                  "sort label set; null for the first row, where a row has no per-example "
                  "results stored, and while the worker has not computed it yet")


class LeaderboardOutput(serializers.Serializer):
    benchmark = serializers.CharField()
    sort = serializers.CharField()
    count = serializers.IntegerField(help_text="rows on the whole board")
    page = serializers.IntegerField(source="number")
    page_size = serializers.IntegerField(source="size")
    next = serializers.URLField(allow_null=True, help_text="the next page; null on the last")
    previous = serializers.URLField(allow_null=True,
                                    help_text="the previous page; null on the first")
    columns = LeaderboardColumnOutput(many=True)
    rows = LeaderboardRowOutput(many=True, help_text="this page's rows")


def _datetime(value: datetime.datetime | None) -> str | None:
    """As serializers.DateTimeField writes it: ISO 8601 in the current time zone, UTC as Z."""
    if not value:
        return None
    if timezone.is_naive(value):
        value = timezone.make_aware(value)
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _cell(score: dict[str, Any] | None) -> dict[str, Any] | None:
    if score is None:
        return None
    return {"accuracy": _float(score["accuracy"]), "ci_low": _float(score["ci_low"]),
            "ci_high": _float(score["ci_high"]),
            "correct": None if score["correct"] is None else int(score["correct"]),
            "total": int(score["total"])}


@dataclass(frozen=True)
class LeaderboardPage:
    """One page of a board, as LeaderboardOutput shows it."""
    board: Leaderboard
    number: int
    size: int
    next: str | None
    previous: str | None

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.board.rows[(self.number - 1) * self.size:self.number * self.size]

    # what LeaderboardOutput reads besides the rows
    @property
    def benchmark(self) -> str:
        return self.board.benchmark

    @property
    def sort(self) -> str:
        return self.board.sort

    @property
    def columns(self) -> list[LeaderboardColumn]:
        return self.board.columns

    @property
    def count(self) -> int:
        return len(self.board.rows)


def leaderboard_data(page: LeaderboardPage) -> dict[str, Any]:
    """The content of LeaderboardOutput(page).data, as plain dicts and lists."""
    board = page.board
    return {
        "benchmark": str(board.benchmark),
        "sort": str(board.sort),
        "count": len(board.rows),
        "page": page.number,
        "page_size": page.size,
        "next": page.next,
        "previous": page.previous,
        "columns": [{"slug": c.slug, "name": c.name, "version": int(c.version_number),
                     "version_hash": c.version_hash, "ci_method": c.ci_method,
                     "rescoring": c.rescoring, "pending_version": c.pending_version,
                     "shift_from": c.shift_from} for c in board.columns],
        "rows": [{
            "submission_id": int(row["submission_id"]),
            "model_name": str(row["model_name"]),
            "owner": str(row["owner"]),
            "created": _datetime(row["created"]),
            "scores": {str(slug): _cell(score) for slug, score in row["scores"].items()},
            "ranks": {str(slug): int(rank) for slug, rank in row["ranks"].items()},
            "rank_shift": {str(slug): int(n) for slug, n in row["rank_shift"].items()},
            "rank_ub": None if row["rank_ub"] is None else int(row["rank_ub"]),
            "mcnemar_p": _float(row["mcnemar_p"]),
        } for row in page.rows],
    }


def leaderboard_json(page: LeaderboardPage) -> bytes:
    """leaderboard_data as DRF's JSONRenderer would write it (compact, UTF-8, no NaN)."""
    text = json.dumps(leaderboard_data(page), ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))
    # as JSONRenderer does: keep the body a strict JavaScript subset
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()
