"""Reads for a benchmark's about page: what the benchmark is and whom to cite (its row: the
description and references of its bundle), each label set with what it is, how it was built
(the family texts of `leaderboard.presentation.about.texts`, filled in from its latest
version's summary), its size, its current version and how many versions it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, OuterRef, Subquery

from leaderboard.catalog.bundle_definition import label_set_row
from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.presentation.about import texts as benchmark_docs
from leaderboard.presentation.about.texts import Citation, Fact
from workers.scoring.bundles import (
    MULTILABEL_SOURCE,
    Bundle,
    LabelSetDef,
    builtin_bundle,
    builtin_slugs,
    label_set_files,
)
from workers.scoring.bundles.builders import optional_source


@dataclass(frozen=True)
class LabelSetAbout:
    slug: str
    name: str
    kind: str
    family: str
    example_set: str
    example_set_name: str
    example_set_size: int
    available: bool  # False: in the catalog, but not loaded on this server
    what: str
    how: list[str]
    facts: list[Fact]
    evaluated: int | None  # examples the label set scores (its latest version)
    version: int | None
    version_hash: str | None  # None for a hidden label set (docs/metrics.md §17)
    version_count: int
    citations: list[Citation]
    needs: str = ""  # why an unavailable label set is missing
    hidden: bool = False  # its labels are hidden: no hash, no history (docs/metrics.md §17)


@dataclass(frozen=True)
class BenchmarkAbout:
    benchmark: Benchmark
    summary: str
    citations: list[Citation]
    label_sets: list[LabelSetAbout]  # loaded here, in the order they were loaded
    unavailable: list[LabelSetAbout]  # in a built-in bundle but not loaded here

    @property
    def all_label_sets(self) -> list[LabelSetAbout]:
        return [*self.label_sets, *self.unavailable]


def _loaded(label_set: LabelSet, latest: LabelSetVersion | None, count: int,
            own: list[Citation]) -> LabelSetAbout:
    summary: dict[str, Any] = latest.summary if latest and isinstance(latest.summary, dict) else {}
    params = label_set.params if isinstance(label_set.params, dict) else {}
    evaluated = summary.get("evaluated")
    citations = benchmark_docs.label_set_citations(label_set.family, own)
    return LabelSetAbout(
        slug=label_set.slug, name=label_set.name, kind=label_set.kind, family=label_set.family,
        example_set=label_set.example_set.slug, example_set_name=label_set.example_set.name,
        example_set_size=int(label_set.example_set.size), available=latest is not None,
        what=benchmark_docs.label_set_what(label_set.family, label_set.description),
        how=benchmark_docs.label_set_how(label_set.family, label_set.slug, summary, params),
        facts=benchmark_docs.label_set_facts(label_set.family, summary),
        evaluated=int(evaluated) if isinstance(evaluated, int) else (
            int(label_set.example_set.size) if latest is not None else None),
        version=int(latest.number) if latest else None,
        # not a hidden label set's: its labels' hash would let anyone check a guess of them
        version_hash=str(latest.content_hash) if latest and not label_set.labels_hidden
        else None,
        version_count=count, citations=citations, hidden=label_set.labels_hidden)


def _unloaded(bundle: Bundle, ls: LabelSetDef, own: list[Citation]) -> LabelSetAbout:
    """A built-in label set not loaded here, as its row would hold it once loaded."""
    row = label_set_row(bundle, ls)
    example_set = bundle.example_set(row["example_set"])
    needs = ("the ImageNet multi-label file (EVALSERVER_MULTILABEL_FILE)"
             if optional_source(bundle, ls) == MULTILABEL_SOURCE
             else "its data files: " + ", ".join(label_set_files(bundle, ls)))
    return LabelSetAbout(
        slug=ls.slug, name=row["name"], kind=row["kind"], family=row["family"],
        example_set=row["example_set"], example_set_name=example_set.name,
        example_set_size=example_set.size, available=False,
        what=benchmark_docs.label_set_what(row["family"], row["description"]),
        how=benchmark_docs.label_set_how(row["family"], ls.slug, {}, row["params"]),
        facts=[], evaluated=None, version=None, version_hash=None, version_count=0,
        citations=benchmark_docs.label_set_citations(row["family"], own),
        needs=needs)


def benchmark_about(*, slug: str) -> BenchmarkAbout:
    """Raises Benchmark.DoesNotExist. Three queries whatever the number of versions."""
    benchmark = benchmark_get(slug=slug)
    # catalog.selectors.label_set_version_current, as a subquery: one query for every label set
    latest_id = (LabelSetVersion.objects.filter(label_set=OuterRef("pk"), published__isnull=False)
                 .order_by("-number").values("id")[:1])
    rows = list(LabelSet.objects.filter(benchmark=benchmark)
                .select_related("benchmark", "example_set")
                .annotate(latest_id=Subquery(latest_id), version_count=Count("versions")))
    versions = LabelSetVersion.objects.in_bulk(
        [r.latest_id for r in rows if r.latest_id is not None])
    # A built-in benchmark's label sets that are not loaded here (an unset source, missing
    # files) are listed from its bundle, with what they need.
    bundle = builtin_bundle(slug) if slug in builtin_slugs() else None
    rows.sort(key=lambda r: r.pk)  # the bundle's order: loaded in it
    own = benchmark_docs.citations_from_texts([str(c) for c in benchmark.citations or []])
    loaded = [_loaded(r, versions.get(r.latest_id), int(r.version_count), own) for r in rows]
    present = {r.slug for r in rows}
    return BenchmarkAbout(
        benchmark=benchmark, summary=benchmark.description, citations=own, label_sets=loaded,
        unavailable=([_unloaded(bundle, ls, own) for ls in bundle.label_sets
                      if ls.slug not in present] if bundle is not None else []))
