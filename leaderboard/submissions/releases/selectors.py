"""Reads: the released numbers of hidden label sets (docs/metrics.md §17), the only figures
of a hidden label set that any page, export or API answer shows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from leaderboard.catalog.models import HiddenPhase, LabelSetVersion
from leaderboard.catalog.phases.selectors import hidden_phase_private_mask
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.releases.models import Release
from workers.scoring import release as core_release
from workers.scoring.significance import pack_hits, unpack_hits


@dataclass(frozen=True)
class ReleaseView:
    """One submission's release on one hidden label-set version, as shown to anyone."""

    label_set: str
    label_set_name: str
    version_number: int
    mechanism: str
    step: float | None
    improved: bool
    released: float | None
    best: float
    total: int

    @property
    def message(self) -> str:
        """What happened, in words (the submission's page and the API say it)."""
        if self.mechanism == "exact":
            return "Released as scored: this label set's mechanism releases every score."
        if self.improved:
            return ("A new best for you: this figure is now your row on the board "
                    f"({_rule(self)}).")
        return (f"Not released: it did not beat your released best, {self.best:.2%}, "
                f"{_rule(self)}; the board still shows {self.best:.2%}.")

    @property
    def interval(self) -> tuple[float, float]:
        shown = self.released if self.released is not None else self.best
        return core_release.released_interval(accuracy=shown, total=self.total)


def _rule(view: ReleaseView) -> str:
    if view.mechanism == "ladder":
        return f"by more than the step {view.step:.4g} the Ladder needs"
    return "by more than the paired standard error the parameter-free Ladder needs"


def release_views_for_submission(*, submission: Submission) -> list[ReleaseView]:
    """The submission's releases on each hidden label set's newest released version."""
    latest: dict[int, Release] = {}
    for release in (Release.objects.filter(submission=submission)
                    .select_related("label_set", "label_set_version")
                    .order_by("label_set_id", "label_set_version__number")):
        if release.label_set_version.published is not None:
            latest[release.label_set_id] = release
    return [_view(r) for r in sorted(latest.values(), key=lambda r: r.label_set.slug)]


def _view(release: Release) -> ReleaseView:
    return ReleaseView(
        label_set=release.label_set.slug, label_set_name=release.label_set.name,
        version_number=release.label_set_version.number, mechanism=release.mechanism,
        step=release.step, improved=release.improved, released=release.released,
        best=release.best, total=release.total)


def release_private_cells(*, version: LabelSetVersion, phase: HiddenPhase,
                          submission_ids: Iterable[int]) -> dict[int, tuple[dict[str, Any], bytes]]:
    """After a phase's reveal: each submission's figures on the phase's private part (a cell
    of the board) and its hits there, packed (for the paired tests of the revealed board)."""
    private = hidden_phase_private_mask(phase=phase)
    if private is None or phase.revealed is None:
        return {}
    out = {}
    for score in (Score.with_hidden.filter(label_set_version=version,
                                           submission_id__in=list(submission_ids))
                  .select_related("hits")):
        if score.hits is None or score.total != private.size:
            continue
        hits = unpack_hits(bytes(score.hits.bits), score.total)[private]
        correct, total = int(hits.sum()), int(hits.size)
        low, high = core_release.released_interval(accuracy=correct / total, total=total)
        out[score.submission_id] = ({"accuracy": correct / total, "ci_low": low,
                                     "ci_high": high, "correct": correct, "total": total},
                                    pack_hits(hits))
    return out


def release_board_cells(*, version_id: int, phase_id: int | None,
                        submission_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The hidden column's cells of a board: under "exact", every submission's released
    figure; under the Ladders, each participant's released best, on the row of the
    submission that set it (one row per participant), and no figure on their other rows."""
    wanted = set(submission_ids)
    releases = list(Release.objects.filter(label_set_version_id=version_id, phase_id=phase_id)
                    .order_by("id").values_list("submission_id", "owner_id", "mechanism",
                                                "improved", "released", "best", "total"))
    shown: dict[int, tuple[float, int]] = {}
    holder: dict[int, int] = {}  # participant -> the submission holding their best
    for submission_id, owner_id, mechanism, improved, released, best, total in releases:
        if mechanism == "exact" and released is not None:
            shown[submission_id] = (released, total)
        elif improved:
            previous = holder.get(owner_id)
            if previous is not None:
                shown.pop(previous, None)
            holder[owner_id] = submission_id
            shown[submission_id] = (best, total)
    cells = {}
    for submission_id, (accuracy, total) in shown.items():
        if submission_id in wanted:
            low, high = core_release.released_interval(accuracy=accuracy, total=total)
            cells[submission_id] = {"accuracy": accuracy, "ci_low": low, "ci_high": high,
                                    "correct": None, "total": total, "released": True}
    return cells
