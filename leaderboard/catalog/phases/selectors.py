"""Reads: the phases of hidden label sets (docs/metrics.md §17.4)."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from leaderboard.catalog.models import Benchmark, HiddenPhase, LabelSet
from workers.scoring.splits import unpack_mask


def hidden_phase_current(*, label_set_id: int) -> HiddenPhase | None:
    """The newest phase of a hidden label set (None for a public one)."""
    return HiddenPhase.objects.filter(label_set_id=label_set_id).order_by("-number").first()


def hidden_phase_private_mask(*, phase: HiddenPhase) -> np.ndarray | None:
    """The phase's private examples (bool per example), or None without a split."""
    if phase.private_mask is None:
        return None
    return unpack_mask(bytes(phase.private_mask), phase.size)


def hidden_label_set_get(*, benchmark: Benchmark, slug: str) -> LabelSet:
    """A hidden label set of the benchmark; raises LabelSet.DoesNotExist."""
    return LabelSet.objects.get(benchmark=benchmark, slug=slug, labels_hidden=True)


def hidden_phases_current(*, benchmark: Benchmark) -> list[tuple[LabelSet, HiddenPhase]]:
    """Each hidden label set of the benchmark with its newest phase (the staff panel), in the
    label sets' order; one query (every board and plot page asks)."""
    newest: dict[int, HiddenPhase] = {}
    for phase in (HiddenPhase.objects.filter(label_set__benchmark=benchmark,
                                             label_set__labels_hidden=True)
                  .select_related("label_set").order_by("label_set__slug", "-number")):
        newest.setdefault(phase.label_set_id, phase)
    return [(phase.label_set, phase) for phase in newest.values()]


def benchmark_phase_opened(*, benchmark: Benchmark) -> datetime | None:
    """When the newest phase of the benchmark's hidden label sets opened (None: it has
    none): the daily quota counts from it, so each phase has its own (docs/metrics.md §17.4)."""
    return (HiddenPhase.objects.filter(label_set__benchmark=benchmark)
            .order_by("-opened").values_list("opened", flat=True).first())
