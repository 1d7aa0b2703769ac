"""Writes: the phases of a hidden label set (docs/metrics.md §17.4): the first from its
bundle, the reveal of a phase's private part (staff, recorded: who and when), and the next
phase with a fresh split."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from leaderboard.catalog.models import HiddenPhase, LabelSet
from leaderboard.catalog.phases.selectors import hidden_phase_current, hidden_phase_private_mask
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.common.errors import ServiceError
from workers.scoring.splits import pack_mask, private_mask_random


class PhaseError(ServiceError):
    """A reveal or a new phase refused (409: the label set is not in a state for it)."""


def hidden_phase_first_open(*, label_set: LabelSet, size: int,
                            private_mask: np.ndarray | None, fraction: float | None,
                            seed: int | None) -> HiddenPhase | None:
    """Phase 1 of a hidden label set, from its bundle, once: reloading the bundle never moves
    an example between the parts of a phase already open."""
    if not label_set.labels_hidden:
        return None
    phase, _ = HiddenPhase.objects.get_or_create(
        label_set=label_set, number=1, defaults={
            "size": size, "fraction": fraction, "seed": seed,
            "private_mask": None if private_mask is None else pack_mask(private_mask)})
    return phase


def hidden_phase_reveal(*, phase: HiddenPhase, by: Any) -> bool:
    """Show the phase's private part (a conditional update: once). Returns whether this call
    revealed it."""
    if phase.private_mask is None:
        raise PhaseError("no_private_part", f"{phase} has no private part to reveal: its "
                         "bundle declares no split", http_status=409)
    with transaction.atomic():
        revealed = HiddenPhase.objects.filter(pk=phase.pk, revealed__isnull=True).update(
            revealed=timezone.now(), revealed_by=by)
        if revealed:
            benchmark_leaderboard_touch(benchmark_id=phase.label_set.benchmark_id)
    phase.refresh_from_db()
    return bool(revealed)


def hidden_phase_open_next(*, label_set: LabelSet, seed: int) -> HiddenPhase:
    """After a reveal: the next phase, the same share of the examples private, drawn afresh
    from `seed`; every participant's release mechanism starts again."""
    with transaction.atomic():
        LabelSet.objects.select_for_update(of=("self",)).filter(pk=label_set.pk).first()
        current = hidden_phase_current(label_set_id=label_set.pk)
        if current is None or current.revealed is None:
            raise PhaseError("phase_open", f"{label_set} is in an open phase: reveal it first",
                             http_status=409)
        mask = hidden_phase_private_mask(phase=current)
        assert mask is not None  # a revealed phase has a private part
        fraction = float(mask.mean())
        phase = HiddenPhase.objects.create(
            label_set=label_set, number=current.number + 1, size=current.size,
            fraction=fraction, seed=seed,
            private_mask=pack_mask(private_mask_random(size=current.size, fraction=fraction,
                                                       seed=seed)))
        benchmark_leaderboard_touch(benchmark_id=label_set.benchmark_id)
    return phase
