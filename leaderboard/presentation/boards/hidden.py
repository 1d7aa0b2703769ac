"""A board's hidden label sets (docs/metrics.md §17): their cells are released figures
(never their scores), and once staff reveal a phase, a column of the private part's figures
whose rank shift is from the public part (the shake-up), with its paired tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.catalog.models import Benchmark, HiddenPhase, LabelSet, LabelSetVersion
from leaderboard.catalog.phases.selectors import hidden_phase_current, hidden_phases_current
from leaderboard.submissions.releases.selectors import (
    release_board_cells,
    release_private_cells,
)
from workers.scoring.significance import board_significance

PRIVATE_SUFFIX = "-private"


@dataclass(frozen=True)
class PrivateColumn:
    slug: str
    public_slug: str
    name: str
    version: LabelSetVersion
    phase: int


@dataclass
class HiddenCells:
    hidden: set[str] = field(default_factory=set)  # every column shown as released figures
    private: list[PrivateColumn] = field(default_factory=list)
    packed: dict[str, dict[int, bytes]] = field(default_factory=dict)  # private hits


Columns = list[tuple[LabelSet, LabelSetVersion, Any]]


def hidden_phases(*, columns: Columns) -> dict[int, HiddenPhase | None]:
    """Each hidden column's label set id -> its current phase (read once per board build)."""
    return {label_set.pk: hidden_phase_current(label_set_id=label_set.pk)
            for label_set, _, _ in columns if label_set.labels_hidden}


def hidden_cells_add(*, columns: Columns, phases: dict[int, HiddenPhase | None],
                     scores: dict[int, dict[str, dict[str, Any]]]) -> HiddenCells:
    """Fill `scores` (submission id -> column slug -> cell) with the hidden columns' cells;
    `phases` as `hidden_phases` gives them."""
    out = HiddenCells()
    for label_set, version, _ in columns:
        if label_set.pk not in phases:
            continue
        out.hidden.add(label_set.slug)
        phase = phases[label_set.pk]
        cells = release_board_cells(version_id=version.pk,
                                    phase_id=None if phase is None else phase.pk,
                                    submission_ids=scores)
        for submission_id, cell in cells.items():
            scores[submission_id][label_set.slug] = cell
        if phase is None or phase.revealed is None:
            continue
        slug = label_set.slug + PRIVATE_SUFFIX
        out.hidden.add(slug)
        out.private.append(PrivateColumn(slug, label_set.slug,
                                         f"{label_set.name} (private part, revealed)",
                                         version, phase.number))
        out.packed[slug] = {}
        for submission_id, (cell, packed) in release_private_cells(
                version=version, phase=phase, submission_ids=cells).items():
            scores[submission_id][slug] = cell
            out.packed[slug][submission_id] = packed
    return out


def revealed_private_slugs(*, columns: Columns, phases: dict[int, HiddenPhase | None]
                           ) -> list[str]:
    """The private columns a board has: one per hidden label set whose phase is revealed."""
    return [label_set.slug + PRIVATE_SUFFIX for label_set, _, _ in columns
            if (phase := phases.get(label_set.pk)) is not None and phase.revealed is not None]


def revealed_private_columns(*, benchmark: Benchmark) -> list[tuple[str, str]]:
    """(column slug, label set name) of each hidden label set of the benchmark whose current
    phase is revealed: the board's private columns (the plots draw them too)."""
    return [(label_set.slug + PRIVATE_SUFFIX, label_set.name)
            for label_set, phase in hidden_phases_current(benchmark=benchmark)
            if phase.revealed is not None]


def private_significance_add(*, rows: list[dict[str, Any]], sort: str,
                             packed: dict[int, bytes]) -> None:
    """rank_ub and the McNemar p against the row above on a revealed private part, computed
    here (boards are cached per generation; a revealed board changes only with a version)."""
    result = board_significance([packed.get(row["submission_id"]) for row in rows],
                                [row["scores"][sort]["accuracy"] for row in rows])
    for row, rank_ub, p_above in zip(rows, result.rank_ub, result.p_above, strict=True):
        row["rank_ub"], row["mcnemar_p"] = rank_ub, p_above
