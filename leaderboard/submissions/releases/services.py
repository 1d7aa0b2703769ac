"""Writes: what the release mechanism of each hidden label set gives a submission
(docs/metrics.md §17), in the scoring transaction, and again for a new version of a hidden
label set before it is published (re-scoring). Released numbers change only through here."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from leaderboard.catalog.models import HiddenPhase, LabelSetVersion
from leaderboard.catalog.phases.selectors import hidden_phase_current, hidden_phase_private_mask
from leaderboard.catalog.phases.services import hidden_phase_first_open
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.releases.models import Release
from workers.scoring import release as core_release
from workers.scoring.significance import unpack_hits


def releases_record(*, submission: Submission) -> list[Release]:
    """Release this submission's figure on every hidden label-set version it has a score on
    and no release yet (idempotent: a re-run of a scoring job releases nothing twice). Call it
    inside the transaction that stores the scores."""
    scores = (Score.with_hidden.filter(submission=submission, label_set__labels_hidden=True)
              .exclude(label_set_version__in=Release.objects.filter(submission=submission)
                       .values("label_set_version"))
              .select_related("label_set", "hits").order_by("label_set_version_id"))
    return [_release(score, owner_id=submission.owner_id) for score in scores]


def releases_replay(*, version: LabelSetVersion) -> int:
    """A new version of a hidden label set: run each participant's mechanism on it over their
    submissions in the order the version before received them (then any it did not), so the
    released numbers on the new version are what the mechanism gives on the new labels.
    Idempotent; returns how many releases it made. Call it before the version is published."""
    label_set = version.label_set
    if not label_set.labels_hidden:
        return 0
    order: list[int] = []
    if version.parent_id is not None:
        order = list(Release.objects.filter(label_set_version_id=version.parent_id)
                     .order_by("id").values_list("submission_id", flat=True))
    scores = {s.submission_id: s for s in Score.with_hidden.filter(label_set_version=version)
              .exclude(submission__in=Release.objects.filter(label_set_version=version)
                       .values("submission"))
              .select_related("label_set", "hits", "submission")}
    phase_ids = dict(Release.objects.filter(label_set_version_id=version.parent_id)
                     .values_list("submission_id", "phase_id")) if order else {}
    phases = HiddenPhase.objects.in_bulk(set(phase_ids.values()))
    rest = sorted(set(scores) - set(order))
    made = 0
    for submission_id in [*order, *rest]:
        score = scores.get(submission_id)
        if score is not None:
            phase = phases[phase_ids[submission_id]] if submission_id in phase_ids else None
            _release(score, owner_id=score.submission.owner_id, phase=phase)
            made += 1
    return made


def _hits(score: Score) -> np.ndarray:
    if score.hits is not None:
        return unpack_hits(bytes(score.hits.bits), score.total)
    # A family without per-example hits: the count alone fixes the loss, which is all that
    # "exact" and the Ladder read (the parameter-free Ladder's paired deviation is then
    # computed as if the hits were the first `correct` examples).
    return np.arange(score.total) < score.correct


def _public_hits(score: Score, private: np.ndarray | None) -> np.ndarray:
    """The hits on the phase's public part: what the mechanism scores (§17.4)."""
    hits = _hits(score)
    return hits if private is None or private.size != hits.size else hits[~private]


def _state(last: Release | None, private: np.ndarray | None) -> core_release.LadderState | None:
    if last is None:
        return None
    leader = (Release.objects.filter(label_set_version_id=last.label_set_version_id,
                                     owner_id=last.owner_id, phase_id=last.phase_id,
                                     improved=True).order_by("-id").first())
    leader_hits = None
    if leader is not None and last.mechanism == "parameter_free":
        score = Score.with_hidden.select_related("hits").get(
            submission_id=leader.submission_id, label_set_version_id=last.label_set_version_id)
        leader_hits = _public_hits(score, private)
    # The Ladder's rungs start at the participant's first release in this phase (§17.1).
    first = (Release.objects.filter(label_set_version_id=last.label_set_version_id,
                                    owner_id=last.owner_id, phase_id=last.phase_id)
             .order_by("id").values_list("state_loss", flat=True).first())
    return core_release.LadderState(best_loss=last.state_loss, leader_hits=leader_hits,
                                    anchor_loss=first)


def _release(score: Score, *, owner_id: int, phase: HiddenPhase | None = None) -> Release:
    label_set = score.label_set
    if phase is None:
        phase = hidden_phase_current(label_set_id=label_set.pk) or hidden_phase_first_open(
            label_set=label_set, size=score.total, private_mask=None, fraction=None, seed=None)
        assert phase is not None  # the label set is hidden
    private = hidden_phase_private_mask(phase=phase)
    with transaction.atomic():
        # One participant's releases are made in turn: each reads the state the one before
        # left (two workers scoring two of their submissions at once).
        get_user_model().objects.select_for_update().filter(pk=owner_id).first()
        existing = Release.objects.filter(submission_id=score.submission_id,
                                          label_set_version_id=score.label_set_version_id).first()
        if existing is not None:
            return existing
        last = (Release.objects.filter(label_set_version_id=score.label_set_version_id,
                                       owner_id=owner_id, phase=phase).order_by("-id").first())
        hits = _public_hits(score, private)
        state, out = core_release.release_next(
            mechanism=label_set.release, step=label_set.release_step,
            state=_state(last, private), hits=hits)
        return Release.objects.create(
            submission_id=score.submission_id, label_set_version_id=score.label_set_version_id,
            label_set_id=label_set.pk, owner_id=owner_id, phase=phase, improved=out.improved,
            released=out.released, best=out.best,
            state_loss=state.best_loss if state.best_loss is not None else 1.0,
            total=int(hits.size), mechanism=label_set.release,
            step=_step(label_set.release, label_set.release_step, int(hits.size)))


def _step(mechanism: str, step: float | None, total: int) -> float | None:
    """The Ladder's step as used (its default for this size when the bundle gives none)."""
    if mechanism != "ladder":
        return None
    return step if step is not None else core_release.default_step(total)
