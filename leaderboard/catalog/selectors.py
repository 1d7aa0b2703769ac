"""Reads. Views, the API and services read the database through these functions."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from leaderboard.catalog.models import Benchmark, ImageSet, LabelSet, LabelSetVersion


def benchmark_list() -> QuerySet[Benchmark]:
    """Every benchmark with its image sets and label sets prefetched; each label set has
    `version_list`, its versions in order."""
    return Benchmark.objects.prefetch_related(
        Prefetch("image_sets", queryset=ImageSet.objects.order_by("slug")),
        Prefetch(
            "label_sets",
            queryset=LabelSet.objects.select_related("image_set")
            .prefetch_related(
                Prefetch(
                    "versions",
                    queryset=LabelSetVersion.objects.order_by("number"),
                    to_attr="version_list",
                )
            )
            .order_by("slug"),
        ),
    ).order_by("slug")


def benchmark_get(*, slug: str) -> Benchmark:
    """The benchmark with this slug; raises Benchmark.DoesNotExist."""
    return Benchmark.objects.get(slug=slug)


def label_set_version_list(*, label_set: LabelSet) -> QuerySet[LabelSetVersion]:
    return LabelSetVersion.objects.filter(label_set=label_set).order_by("number")


def label_set_version_first(*, label_set: LabelSet) -> LabelSetVersion | None:
    return label_set_version_list(label_set=label_set).first()


def label_set_version_latest(*, label_set: LabelSet) -> LabelSetVersion | None:
    """The current version of a label set: the one submissions are scored on and the board
    shows (the newest)."""
    return label_set_version_list(label_set=label_set).last()


def label_set_versions_current(*, benchmark: Benchmark) -> list[LabelSetVersion]:
    """`label_set_version_latest` of every label set of the benchmark, in one query."""
    versions = (LabelSetVersion.objects.filter(label_set__benchmark=benchmark)
                .select_related("label_set__benchmark").order_by("label_set_id", "-number"))
    current: dict[int, LabelSetVersion] = {}
    for version in versions:
        current.setdefault(version.label_set_id, version)
    return list(current.values())


def catalog_counts() -> dict[str, int]:
    """Row counts of the catalog tables, for reports and tests."""
    return {
        "benchmarks": Benchmark.objects.count(),
        "image_sets": ImageSet.objects.count(),
        "label_sets": LabelSet.objects.count(),
        "label_set_versions": LabelSetVersion.objects.count(),
    }
