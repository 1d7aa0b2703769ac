"""Reads. Views, the API and services read the database through these functions."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from django.db.models import Prefetch, QuerySet

from leaderboard.catalog.models import (
    Benchmark,
    ExampleSet,
    ExampleSetNames,
    LabelSet,
    LabelSetVersion,
)
from leaderboard.catalog.teams.permissions import (
    REVIEWING_ROLES,
    AnyUser,
    is_superuser,
    user_team_roles,
)
from workers.scoring.families.base import CLOPPER_PEARSON
from workers.scoring.families.registry import (
    correctable_family,
    family_named,
    reference_family,
)


def benchmark_list() -> QuerySet[Benchmark]:
    """Every benchmark not hidden, with its example sets and label sets prefetched; each label
    set has `version_list`, its published versions in order (the last is the current one)."""
    return benchmark_visible_list().prefetch_related(
        Prefetch("example_sets", queryset=ExampleSet.objects.order_by("slug")),
        Prefetch(
            "label_sets",
            queryset=LabelSet.objects.select_related("example_set")
            .prefetch_related(
                Prefetch(
                    "versions",
                    queryset=LabelSetVersion.objects.filter(published__isnull=False)
                    .order_by("number"),
                    to_attr="version_list",
                )
            )
            .order_by("slug"),
        ),
    ).order_by("slug")


def benchmark_visible_list() -> QuerySet[Benchmark]:
    """The benchmarks not hidden (a hidden one is out of every public list, board, form and
    page: leaderboard/catalog/hosting/services.py), by slug."""
    return Benchmark.objects.filter(hidden=False).order_by("slug")


def example_set_visible_list() -> QuerySet[ExampleSet]:
    """The example sets of the benchmarks not hidden, each with its benchmark, by benchmark
    and slug."""
    return (ExampleSet.objects.filter(benchmark__hidden=False).select_related("benchmark")
            .order_by("benchmark__slug", "slug"))


def benchmark_get(*, slug: str, include_hidden: bool = False) -> Benchmark:
    """The benchmark with this slug; raises Benchmark.DoesNotExist, also for a hidden one
    unless `include_hidden` (staff operations)."""
    benchmarks = Benchmark.objects.all() if include_hidden else benchmark_visible_list()
    return benchmarks.get(slug=slug)


def label_set_version_list(*, label_set: LabelSet) -> QuerySet[LabelSetVersion]:
    return LabelSetVersion.objects.filter(label_set=label_set).order_by("number")


def label_set_version_first(*, label_set: LabelSet) -> LabelSetVersion | None:
    return label_set_version_list(label_set=label_set).first()


def label_set_version_latest(*, label_set: LabelSet) -> LabelSetVersion | None:
    """The newest version of a label set, published or not: the one a revision builds on and
    the one after which the next is numbered. What boards show is `label_set_version_current`."""
    return label_set_version_list(label_set=label_set).last()


def label_set_version_current(*, label_set: LabelSet) -> LabelSetVersion | None:
    """The current version of a label set: the newest published one, which the boards, the
    API's default, the about pages and the plots show. A newer version is published only once
    every scored submission has its score on it (docs/metrics.md §14), so the current version
    never lacks a score."""
    return label_set_version_list(label_set=label_set).filter(published__isnull=False).last()


def _newest_first(benchmark: Benchmark) -> QuerySet[LabelSetVersion]:
    return (LabelSetVersion.objects.filter(label_set__benchmark=benchmark)
            .select_related("label_set__benchmark").order_by("label_set_id", "-number"))


def label_set_versions_current(*, benchmark: Benchmark) -> list[LabelSetVersion]:
    """`label_set_version_current` of every label set of the benchmark, in one query."""
    current: dict[int, LabelSetVersion] = {}
    for version in _newest_first(benchmark).filter(published__isnull=False):
        current.setdefault(version.label_set_id, version)
    return list(current.values())


def label_set_versions_to_score(*, benchmark: Benchmark) -> list[LabelSetVersion]:
    """The versions a newly scored submission is scored on: each label set's current version
    and every newer one still being re-scored, so that its score is already there when such
    a version is published (one query)."""
    versions: list[LabelSetVersion] = []
    done: set[int] = set()  # label sets whose current version has been reached
    for version in _newest_first(benchmark):
        if version.label_set_id in done:
            continue
        versions.append(version)
        if version.published is not None:
            done.add(version.label_set_id)
    return versions


def catalog_counts() -> dict[str, int]:
    """Row counts of the catalog tables, for reports and tests."""
    return {
        "benchmarks": Benchmark.objects.count(),
        "example_sets": ExampleSet.objects.count(),
        "label_sets": LabelSet.objects.count(),
        "label_set_versions": LabelSetVersion.objects.count(),
    }


def benchmark_class_names(*, benchmark: Benchmark) -> tuple[str, ...]:
    """The class names of the benchmark in id order, as its bundle declared them."""
    return tuple(benchmark.class_names)


@lru_cache(maxsize=16)
def _example_names(example_set_id: int, slug: str, size: int) -> tuple[str, ...]:
    # An example set's names never change once loaded (its examples are what every label
    # set and score index), so one read per process; IMDB's list has 25,000 names. The slug
    # and size are in the key too: a database rebuilt in place (tests) may reuse an id.
    names = ExampleSetNames.objects.filter(example_set_id=example_set_id).values_list("names",
                                                                                flat=True)
    return tuple(names.first() or ())


def example_namer(*, example_set: ExampleSet) -> Callable[[int], str]:
    """example index -> the example's name, by the naming its bundle declared
    (docs/bundles.md §4): a file-number pattern (ImageNet: ILSVRC2012_val_00000001.JPEG),
    an index-to-name list (Caltech-256, IMDB) or `<slug>[i]`."""
    slug = example_set.slug
    if example_set.naming == ExampleSet.Naming.PATTERN and example_set.name_pattern:
        pattern, first = example_set.name_pattern, example_set.first_number
        return lambda index: pattern.format(number=index + first)
    if example_set.naming == ExampleSet.Naming.FILE:
        names = _example_names(example_set.pk, example_set.slug, example_set.size)
        if len(names) == example_set.size:
            return lambda index: names[index]
    return lambda index: f"{slug}[{index}]"


def label_set_hidden_count(*, benchmark: Benchmark) -> int:
    """How many of the benchmark's label sets have hidden labels (docs/metrics.md §17)."""
    return LabelSet.objects.filter(benchmark=benchmark, labels_hidden=True).count()


def label_set_class_mean_slugs(*, benchmark: Benchmark) -> list[str]:
    """The benchmark's public label sets whose figure is a mean over classes, with a normal
    interval rather than Clopper-Pearson's (docs/metrics.md: the multi-label families), by
    slug: the pages name that interval only where there is one."""
    return [ls.slug for ls in LabelSet.objects.filter(benchmark=benchmark, labels_hidden=False)
            .order_by("slug") if family_named(ls.family).interval != CLOPPER_PEARSON]


def label_set_reference_slug(*, benchmark_id: int) -> str | None:
    """The slug of the benchmark's reference label set: its label set of the reference family
    (the labels rank shifts are from: docs/families.md), whatever a bundle called it; None
    for a benchmark without one."""
    return (LabelSet.objects.filter(benchmark_id=benchmark_id, family=reference_family().name)
            .order_by("pk").values_list("slug", flat=True).first())


def label_set_correctable_slug(*, benchmark_id: int) -> str | None:
    """The slug of the benchmark's corrected label set: its first of the correctable family
    (a bundle's first threshold, the one that keeps the table's slug: docs/bundles.md §5.2);
    None for a benchmark without one."""
    return (LabelSet.objects.filter(benchmark_id=benchmark_id, family=correctable_family().name)
            .order_by("pk").values_list("slug", flat=True).first())


def benchmark_list_with_role(*, user: AnyUser, roles: tuple[str, ...] = REVIEWING_ROLES
                             ) -> QuerySet[Benchmark]:
    """The benchmarks on which the user holds one of `roles` in their team (every one for a
    superuser; docs/hosts/teams.md): for lists such as review queues, audits and a host's
    submissions."""
    if is_superuser(user):
        return Benchmark.objects.all()
    teams = [team for team, role in user_team_roles(user).items() if role in roles]
    return Benchmark.objects.filter(team_id__in=teams)
