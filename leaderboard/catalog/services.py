"""Writes. Every change to the leaderboard's tables goes through a function here.

Names are `<entity>_<action>`; arguments are keyword-only.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.catalog.bundle_definition import (
    BenchmarkRow,
    BundleDefinition,
    ExampleSetRow,
    LabelSetRow,
)
from leaderboard.catalog.models import (
    Benchmark,
    ExampleSet,
    ExampleSetNames,
    LabelSet,
    LabelSetVersion,
)
from leaderboard.catalog.selectors import label_set_version_latest
from leaderboard.catalog.teams.models import HostTeam

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_CONTENT_HASH = re.compile(r"^[0-9a-f]{64}\Z")

class CatalogError(Exception):
    """The catalog cannot be loaded (no data directory, bad configuration), or a benchmark's
    definition conflicts with what is loaded (leaderboard/catalog/bundle_loading.py)."""


class Change(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _sync_row(
    model: type[models.Model], *, lookup: dict[str, Any], values: dict[str, Any]
) -> tuple[Any, Change]:
    """Get the row matching `lookup`, creating it with `values` or updating fields that differ."""
    row = model._default_manager.filter(**lookup).first()
    if row is None:
        row = model(**lookup, **values)
        row.full_clean()
        row.save()
        return row, Change.CREATED
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    if not changed:
        return row, Change.UNCHANGED
    for name in changed:
        setattr(row, name, values[name])
    row.full_clean()
    row.save(update_fields=changed)
    return row, Change.UPDATED


def benchmark_sync(*, slug: str, values: BenchmarkRow,
                   team_id: int | None = None) -> tuple[Benchmark, Change]:
    """Make the Benchmark row match its bundle's definition (leaderboard/catalog/
    bundle_definition.py), rewritten on every load. A benchmark created here belongs to
    `team_id` (default: the site team); an existing one keeps its team (docs/hosts/teams.md)."""
    if team_id is not None and not Benchmark.objects.filter(slug=slug).exists():
        return _sync_row(Benchmark, lookup={"slug": slug, "team_id": team_id},
                         values=dict(values))
    return _sync_row(Benchmark, lookup={"slug": slug}, values=dict(values))


def example_set_sync(
    *, benchmark: Benchmark, slug: str, values: ExampleSetRow
) -> tuple[ExampleSet, Change]:
    """Make the ExampleSet row match its bundle's definition (`example_names`, the list of a
    set named by file, is kept in its ExampleSetNames row)."""
    existing = ExampleSet.objects.filter(slug=slug).exclude(benchmark=benchmark).first()
    if existing is not None:
        raise CatalogError(f"example set {slug!r} already exists in benchmark "
                           f"{existing.benchmark.slug!r}")
    row: dict[str, Any] = dict(values)
    names = row.pop("example_names")
    example_set, change = _sync_row(ExampleSet, lookup={"slug": slug, "benchmark": benchmark},
                                  values=row)
    if names is None:
        names_changed = ExampleSetNames.objects.filter(example_set=example_set).delete()[0] > 0
    else:
        _, names_change = _sync_row(ExampleSetNames, lookup={"example_set": example_set},
                                    values={"names": list(names)})
        names_changed = names_change is not Change.UNCHANGED
    if names_changed and change is Change.UNCHANGED:
        change = Change.UPDATED
    return example_set, change


def label_set_sync(
    *, benchmark: Benchmark, example_set: ExampleSet, slug: str, values: LabelSetRow
) -> tuple[LabelSet, Change]:
    """Make the LabelSet row (not its versions) match its bundle's definition; `example_set`
    is the row of the slug `values` names."""
    if values["example_set"] != example_set.slug:
        raise CatalogError(f"label set {benchmark.slug}/{slug} is over "
                           f"{values['example_set']!r}, not {example_set.slug!r}")
    if example_set.benchmark_id != benchmark.pk:
        raise CatalogError(
            f"example set {example_set.slug!r} is not in benchmark {benchmark.slug!r}")
    return _sync_row(LabelSet, lookup={"benchmark": benchmark, "slug": slug},
                     values={**values, "example_set": example_set})


@dataclass(frozen=True)
class BundleRows:
    """The rows `bundle_rows_sync` wrote, by slug, each with what changed."""
    benchmark: tuple[Benchmark, Change]
    example_sets: dict[str, tuple[ExampleSet, Change]]
    label_sets: dict[str, tuple[LabelSet, Change]]


def bundle_rows_sync(*, definition: BundleDefinition, label_sets: Sequence[str],
                     team_id: int | None = None) -> BundleRows:
    """Make the rows of a bundle's benchmark, its main example set, and `label_sets` with their
    example sets match the bundle's definition; each row written once (loading a bundle, the
    multi-label import, a test's built-in label set)."""
    benchmark, change = benchmark_sync(slug=definition.slug, values=definition.benchmark,
                                       team_id=team_id)
    rows = {slug: definition.label_sets[slug] for slug in label_sets}
    example_sets = {
        slug: example_set_sync(benchmark=benchmark, slug=slug, values=definition.example_sets[slug])
        for slug in dict.fromkeys([definition.benchmark["main_example_set"],
                                   *(row["example_set"] for row in rows.values())])}
    return BundleRows(
        benchmark=(benchmark, change), example_sets=example_sets,
        label_sets={slug: label_set_sync(benchmark=benchmark, slug=slug, values=row,
                                         example_set=example_sets[row["example_set"]][0])
                    for slug, row in rows.items()})


def benchmark_leaderboard_touch(*, benchmark_id: int) -> None:
    """Invalidate every cached leaderboard of the benchmark, in all processes (its generation
    is part of their cache keys: leaderboard/presentation/caching.py)."""
    Benchmark.objects.filter(pk=benchmark_id).update(
        leaderboard_generation=F("leaderboard_generation") + 1)


def label_set_row_lock(*, label_set_id: int) -> None:
    """Inside a transaction: hold the label set's row until it commits, so that concurrent
    new versions of it are made in turn (each numbered after the last). FOR NO KEY UPDATE of
    that row alone: not the benchmark row that LabelSet's ordering joins (a scoring updates
    it), and no wait for the Score and version inserts that refer to the label set."""
    LabelSet.objects.select_for_update(no_key=True, of=("self",)).filter(
        pk=label_set_id).order_by("pk").first()


def benchmark_panel_sizes_set(*, benchmark: Benchmark, review_panel_size: int,
                              ground_truth_panel_size: int) -> None:
    """The votes that decide a review item and the answers that decide a ground-truth
    candidate (set by maintainers in the admin; the catalog does not carry them)."""
    if min(review_panel_size, ground_truth_panel_size) < 1:
        raise ValueError("a panel needs at least one member")
    Benchmark.objects.filter(pk=benchmark.pk).update(
        review_panel_size=review_panel_size, ground_truth_panel_size=ground_truth_panel_size)


def benchmark_team_set(*, benchmark: Benchmark, team: HostTeam) -> bool:
    """Give the benchmark to another host team (docs/hosts/teams.md): its hosts and reviewers
    then run it. For the operator's tools (the demo's lab benchmark), which decide who may;
    False when it was the team's already."""
    if benchmark.team_id == team.pk:
        return False
    Benchmark.objects.filter(pk=benchmark.pk).update(team=team)
    benchmark.team = team
    return True


def label_set_version_create(
    *,
    label_set: LabelSet,
    content_hash: str,
    summary: dict[str, Any],
    parent: LabelSetVersion | None = None,
    author: User | None = None,
    note: str = "",
    published: bool = True,
) -> LabelSetVersion:
    """Add the next version (number = last + 1) of a label set; `published=False` for one
    that scored submissions must be re-scored on before it is current (docs/metrics.md §14)."""
    if not _CONTENT_HASH.match(content_hash):
        raise ValueError(f"content_hash must be 64 lower-case hex characters, got {content_hash!r}")
    if parent is not None and parent.label_set_id != label_set.pk:
        raise ValueError(f"parent {parent} is a version of another label set than {label_set}")
    with transaction.atomic():
        # Lock the label set so that two concurrent creations cannot take the same number.
        label_set_row_lock(label_set_id=label_set.pk)
        latest = label_set_version_latest(label_set=label_set)
        version = LabelSetVersion(
            label_set=label_set,
            number=1 if latest is None else latest.number + 1,
            content_hash=content_hash,
            parent=parent,
            author=author,
            note=note,
            summary=summary,
            published=timezone.now() if published else None,
        )
        version.full_clean()
        version.save()
        # A new leaderboard column, or one being re-scored: drop every cached leaderboard.
        benchmark_leaderboard_touch(benchmark_id=label_set.benchmark_id)
    return version


def label_set_version_publish(*, version_id: int) -> bool:
    """Make a version current, once, with the leaderboard generation bump that moves every
    cached board to it; the caller (the re-scoring job) has stored every score on it in the
    same transaction. Returns whether this call published it."""
    with transaction.atomic():
        version = LabelSetVersion.objects.select_related("label_set").get(id=version_id)
        if LabelSetVersion.objects.filter(id=version_id).publish(timezone.now()) != 1:
            return False
        benchmark_leaderboard_touch(benchmark_id=version.label_set.benchmark_id)
    return True
