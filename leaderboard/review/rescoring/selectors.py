"""Reads for re-computing stored scores (manage.py scores_recompute)."""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard.catalog.models import Benchmark, LabelSet


class UnknownSlugError(LookupError):
    """A benchmark or label-set slug that names nothing in the catalog."""


def label_sets_select(*, benchmarks: Sequence[str] = (),
                      label_sets: Sequence[str] = ()) -> list[LabelSet]:
    """The label sets of these benchmarks (all when none is given) with these slugs (all when
    none is given), by benchmark then slug; an UnknownSlugError names a slug that matches
    nothing."""
    known = set(Benchmark.objects.values_list("slug", flat=True))
    unknown = sorted(set(benchmarks) - known)
    if unknown:
        raise UnknownSlugError(f"no benchmark {', '.join(map(repr, unknown))}; the catalog has "
                               + (", ".join(sorted(known)) or "none (run load_benchmarks)"))
    rows = LabelSet.objects.select_related("benchmark", "example_set").order_by(
        "benchmark__slug", "slug")
    if benchmarks:
        rows = rows.filter(benchmark__slug__in=benchmarks)
    chosen = list(rows)
    if label_sets:
        present = {ls.slug for ls in chosen}
        missing = sorted(set(label_sets) - present)
        if missing:
            raise UnknownSlugError(
                f"no label set {', '.join(map(repr, missing))} in "
                f"{', '.join(benchmarks) if benchmarks else 'any benchmark'}; there are "
                + ", ".join(sorted(present)))
        chosen = [ls for ls in chosen if ls.slug in label_sets]
    return chosen
