"""Reads of the home page: each benchmark not hidden with its test sets, and a summary of its
board (submissions, participants, the best model, the largest rank shift, the last
submission), which a visitor can search by name and filter by modality.

The summary is drawn from the board itself (`boards.selectors.leaderboard_get`, the default
board: ranked on the reference label set, docs/families.md), so the home page never says
other than the board, and is kept in the cache under the benchmark's leaderboard generation
like the board (leaderboard/presentation/caching.py): a warm home page is two queries (the
benchmarks and their example sets) whatever the number of benchmarks and submissions, and a
cold one adds the board's few queries per benchmark whose generation moved.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Prefetch

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import benchmark_visible_list
from leaderboard.presentation.boards.selectors import (
    Leaderboard,
    LeaderboardQueryError,
    leaderboard_get,
)
from leaderboard.presentation.caching import RENDER_TIMEOUT, source_format

# What a summary is computed from (its cache key holds their digest: a release that changes
# them never reads an older summary).
SUMMARY_MODULES = (__name__, "leaderboard.presentation.boards.selectors",
                   "leaderboard.presentation.boards.hidden")


@dataclass(frozen=True)
class ModelOnBoard:
    submission_id: int
    model_name: str
    owner: str


@dataclass(frozen=True)
class BestModel:
    model: ModelOnBoard
    accuracy: float | None
    tied: int  # the other rows ranked first with it


@dataclass(frozen=True)
class RankShift:
    """A model's move from its rank on the reference label set to its rank on another
    (docs/metrics.md §10: positive = moved up)."""

    model: ModelOnBoard
    label_set: str
    label_set_name: str
    rank_from: int
    rank_to: int

    @property
    def shift(self) -> int:
        return self.rank_from - self.rank_to


@dataclass(frozen=True)
class BoardSummary:
    submissions: int  # the board's rows: public scored submissions
    participants: int  # their distinct owners
    last_submission: datetime | None
    reference: str  # the label set the board ranks on by default
    reference_name: str
    best: BestModel | None
    largest_shift: RankShift | None


EMPTY_SUMMARY = BoardSummary(0, 0, None, "", "", None, None)


@dataclass(frozen=True)
class BenchmarkCard:
    benchmark: Benchmark
    test_sets: list[ExampleSet]
    summary: BoardSummary
    # what the search matches (name and slug in lower case); whether the current query does
    search_text: str
    shown: bool


@dataclass(frozen=True)
class HomeListing:
    cards: list[BenchmarkCard]
    # (value, label, count) of each modality among the benchmarks, in the model's order
    modalities: list[tuple[str, str, int]]
    query: str
    modality: str

    @property
    def shown_count(self) -> int:
        return sum(card.shown for card in self.cards)


def _model(row: dict[str, Any]) -> ModelOnBoard:
    return ModelOnBoard(row["submission_id"], row["model_name"], row["owner"])


def board_summary_from(board: Leaderboard) -> BoardSummary:
    """The summary of a default board (ranked on its reference label set)."""
    rows = board.rows
    if not rows:
        return EMPTY_SUMMARY
    names = {column.slug: column.name for column in board.columns}
    ref = board.reference
    first = [row for row in rows if row["ranks"].get(ref) == 1]
    best = (BestModel(_model(first[0]), first[0]["scores"][ref]["accuracy"], len(first) - 1)
            if first else None)
    # The label sets a public rank shift is shown for: not the reference, not a hidden label
    # set's released figures nor its revealed private part, whose shifts mean other things
    # (docs/metrics.md §17.4).
    public = [column.slug for column in board.columns if column.slug != ref
              and not column.release and column.version_hash is not None]
    order = {slug: i for i, slug in enumerate(public)}
    candidates = [(row, slug) for row in rows for slug in public
                  if slug in row["rank_shift"] and ref in row["ranks"]]
    largest = None
    if candidates:
        # the largest move either way; of equal ones, a move up (a model the other labels
        # favour), then the better rank it moves to, the better rank it moves from, the older
        # submission and the board's column order
        row, slug = min(candidates, key=lambda c: (
            -abs(c[0]["rank_shift"][c[1]]), c[0]["rank_shift"][c[1]] < 0,
            c[0]["ranks"][c[1]], c[0]["ranks"][ref], c[0]["submission_id"], order[c[1]]))
        if row["rank_shift"][slug]:
            largest = RankShift(_model(row), slug, names[slug], row["ranks"][ref],
                                row["ranks"][slug])
    return BoardSummary(
        submissions=len(rows),
        participants=len({row["owner"] for row in rows}),
        last_submission=max(row["created"] for row in rows),
        reference=ref, reference_name=names.get(ref, ref), best=best, largest_shift=largest)


def _summary_key(benchmark: Benchmark) -> str:
    summary_format = source_format(modules=SUMMARY_MODULES)
    return f"home-summary:{summary_format}:{benchmark.pk}:{benchmark.leaderboard_generation}"


def board_summaries_get(*, benchmarks: list[Benchmark]) -> dict[int, BoardSummary]:
    """benchmark id -> the summary of its default board, from the cache (one round trip) or
    computed from the board (and stored) for those whose generation has none yet."""
    keys = {benchmark.pk: _summary_key(benchmark) for benchmark in benchmarks}
    cached = cache.get_many(list(keys.values()))
    summaries: dict[int, BoardSummary] = {}
    missing: dict[str, BoardSummary] = {}
    for benchmark in benchmarks:
        summary = cached.get(keys[benchmark.pk])
        if summary is None:
            try:
                summary = board_summary_from(leaderboard_get(benchmark=benchmark))
            except LeaderboardQueryError:  # no label set with a published version: no board
                summary = EMPTY_SUMMARY
            missing[keys[benchmark.pk]] = summary
        summaries[benchmark.pk] = summary
    if missing:
        cache.set_many(missing, timeout=RENDER_TIMEOUT)
    return summaries


def search_text(benchmark: Benchmark) -> str:
    """What a search matches: the benchmark's name and slug in lower case (the page's script
    lower-cases the query as String.toLowerCase does, for the live filter)."""
    return f"{benchmark.name} {benchmark.slug}".lower()


def home_listing_get(*, query: str = "", modality: str = "") -> HomeListing:
    """Every benchmark not hidden, by name, each with its example sets (its test sets), its
    board's summary and whether it matches `query` (a part of its name or slug, any case)
    and `modality` (a Benchmark.Modality value; "" for any)."""
    benchmarks = list(benchmark_visible_list().prefetch_related(
        Prefetch("example_sets", queryset=ExampleSet.objects.order_by("slug"))))
    benchmarks.sort(key=lambda b: (b.name.casefold(), b.slug))
    summaries = board_summaries_get(benchmarks=benchmarks)
    needle = query.strip().lower()
    cards = []
    for benchmark in benchmarks:
        text = search_text(benchmark)
        shown = needle in text and modality in ("", benchmark.modality)
        cards.append(BenchmarkCard(benchmark, list(benchmark.example_sets.all()),
                                   summaries[benchmark.pk], text, shown))
    counts = Counter(benchmark.modality for benchmark in benchmarks)
    labels = {value: str(label) for value, label in Benchmark.Modality.choices}
    order = list(labels) + sorted(set(counts) - set(labels))
    modalities = [(value, labels.get(value, value.capitalize()), counts[value])
                  for value in order if counts[value]]
    return HomeListing(cards, modalities, query.strip(), modality)
