"""Release mechanisms of hidden label sets: the one number a submission gets (docs/metrics.md §17).

A hidden label set never leaves the server. Releasing every submission's exact score would let a
participant fit the labels through the scores (the boosting attack of Blum and Hardt 2015, §5);
the Ladder releases a new number only for a clear improvement, and rounds it. Three mechanisms,
applied per participant in the order the server receives that participant's submissions:

- "exact": every accuracy as is;
- "ladder": Algorithm 1 of the paper, with a fixed step eta, its rungs counted from the
  participant's first release (docs/metrics.md §17.1 says why);
- "parameter_free": the paper's parameter-free Ladder (a paired one-sided test against the
  participant's leader, as in the reference implementation github.com/mrtzh/Ladder.jl).

Losses are L = 1 - accuracy on 0/1 per-example losses, so L is a multiple of 1/n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .binomial_interval import clopper_pearson
from .stats import ALPHA

MECHANISMS = ("exact", "ladder", "parameter_free")

# Float noise of the few operations on a loss (k / n, k * eta, R - eta) is about 1e-16; any
# real gap between a loss (a multiple of 1/n) and a multiple of 1/n is at least 1/n, far above
# this. Treating a gap below 1e-9 as none errs towards releasing less, never more.
_TOL = 1e-9


@dataclass(frozen=True, eq=False)  # eq=False: an array field has no single truth value
class LadderState:
    """One participant's state on one hidden label set, between two submissions."""

    best_loss: float | None
    """R_{t-1}, the participant's released loss (None: +inf, nothing released yet)."""
    leader_hits: np.ndarray | None
    """The leader's hits, read-only; kept by "parameter_free" only (the others need none)."""
    anchor_loss: float | None = None
    """"ladder": R_1, the participant's first released loss, where its rungs start."""


@dataclass(frozen=True)
class Release:
    """What one submission releases."""

    improved: bool
    """This submission moved the participant's released best."""
    released: float | None
    """Its own released accuracy: None when not improved, except "exact" (always its accuracy)."""
    best: float
    """The participant's released best accuracy after it."""


def default_step(total: int) -> float:
    """The ladder's step eta when a bundle gives none: 3 / sqrt(n) (docs/metrics.md §17.3).

    The standard error of an accuracy on n examples is at most 0.5 / sqrt(n), so this is six
    standard errors: a submission of pure noise beats a participant's first release by it with
    probability about 1e-9. For n <= 9 the step is 1 or more: nothing after the first
    submission can move the released best.
    """
    if total < 1:
        raise ValueError(f"default_step needs at least one example, got total={total}")
    return 3.0 / math.sqrt(total)


def release_next(
    *, mechanism: str, step: float | None, state: LadderState | None, hits: np.ndarray
) -> tuple[LadderState, Release]:
    """Release one submission's number, given the participant's state before it.

    `hits` is a bool vector over the scored examples (True = correct). `step` is the ladder's
    eta (None: `default_step(len(hits))`) and must be None for the other mechanisms. `state` is
    None for the participant's first submission. Returns the state after it and its release.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown release mechanism {mechanism!r}: expected one of {MECHANISMS}")
    hits = _checked_hits(hits)
    if state is None:
        state = LadderState(best_loss=None, leader_hits=None)
    if mechanism == "ladder":
        eta = default_step(hits.size) if step is None else _checked_step(step)
        return _ladder(eta, state, hits)
    if step is not None:
        raise ValueError(f"mechanism {mechanism!r} takes no step (got step={step})")
    if mechanism == "exact":
        return _exact(state, hits)
    return _parameter_free(state, hits)


def released_interval(*, accuracy: float, total: int) -> tuple[float, float]:
    """The 95% Clopper-Pearson interval (docs/metrics.md §1.3) of a released accuracy, read as
    round(accuracy * total) hits of `total`. It shows the sampling error of the number on the
    hidden set, not the ladder's rounding."""
    if total < 1:
        raise ValueError(f"released_interval needs at least one example, got total={total}")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must lie in [0, 1], got {accuracy}")
    # Half up, not Python's round-half-even: the same count whatever the parity.
    correct = min(math.floor(accuracy * total + 0.5), total)
    return clopper_pearson(correct, total, ALPHA)


def _checked_hits(hits: np.ndarray) -> np.ndarray:
    hits = np.asarray(hits)
    if hits.dtype != np.bool_:
        raise ValueError(f"hits must be a bool array (True = correct), got dtype {hits.dtype}")
    if hits.ndim != 1:
        raise ValueError(f"hits must be one-dimensional, got shape {hits.shape}")
    if hits.size == 0:
        raise ValueError("hits is empty: a release needs at least one scored example")
    return hits


def _checked_step(step: float) -> float:
    step = float(step)
    if not 0.0 < step < 1.0:  # also refuses NaN
        raise ValueError(f"the ladder's step must lie strictly between 0 and 1, got {step}")
    return step


def _accuracy(loss: float) -> float:
    # A rung can pass 0 (R_1 = 0.5, eta = 0.3: two rungs are -0.1): no accuracy above 1.
    return min(max(1.0 - loss, 0.0), 1.0)


def _count_accuracy(hits: np.ndarray) -> float:
    """correct / n, the figure the server shows everywhere else (2/3, not the float 1 - 1/3)."""
    return int(np.count_nonzero(hits)) / hits.size


def _loss_accuracy(loss: float, n: int) -> float:
    """The accuracy of a loss that is a whole number of examples out of n, as a count."""
    return (n - round(loss * n)) / n


def _loss(hits: np.ndarray) -> float:
    return int(np.count_nonzero(~hits)) / hits.size


def _exact(state: LadderState, hits: np.ndarray) -> tuple[LadderState, Release]:
    loss = _loss(hits)
    # Losses k / n of one label set are exact and distinct floats: a plain comparison is exact.
    improved = state.best_loss is None or loss < state.best_loss
    best_loss = loss if state.best_loss is None else min(loss, state.best_loss)
    new_state = LadderState(best_loss=best_loss, leader_hits=None)
    return new_state, Release(improved=improved, released=_count_accuracy(hits),
                              best=_loss_accuracy(best_loss, hits.size))


def _ladder(eta: float, state: LadderState, hits: np.ndarray) -> tuple[LadderState, Release]:
    loss = _loss(hits)
    if state.best_loss is None:
        # R_0 = +inf: the first submission is released as scored, and its loss R_1 is where the
        # participant's rungs start. Algorithm 1 rounds it to a multiple of eta instead; that
        # puts the first rung up to eta / 2 from the truth wherever chance falls between two
        # multiples, and noise then climbs one rung (docs/metrics.md §17.3).
        accuracy = _count_accuracy(hits)
        return (LadderState(best_loss=loss, leader_hits=None, anchor_loss=loss),
                Release(improved=True, released=accuracy, best=accuracy))
    # Algorithm 1: improve only when L_t < R_{t-1} - eta. The tolerance keeps an improvement of
    # exactly eta from passing on float noise (3 * 0.1 - 0.1 = 0.20000000000000004 > 0.2).
    if not loss < state.best_loss - eta - _TOL:
        best = (_loss_accuracy(state.best_loss, hits.size)  # still the first release, as shown
                if state.best_loss == state.anchor_loss else _accuracy(state.best_loss))
        return state, Release(improved=False, released=None, best=best)
    anchor = state.best_loss if state.anchor_loss is None else state.anchor_loss
    # [L]_eta on the rungs R_1 - k eta: the nearest one. A tie (within float noise) goes to the
    # larger loss, so the released accuracy is the lower one: a tie never flatters. R_t <=
    # R_{t-1} - eta still holds: (R_1 - L) / eta > k' + 1 rounds to at least k' + 1 rungs.
    rungs = math.floor((anchor - loss) / eta + 0.5 - _TOL)
    rounded = anchor - rungs * eta
    accuracy = _accuracy(rounded)
    new_state = LadderState(best_loss=rounded, leader_hits=None, anchor_loss=anchor)
    return new_state, Release(improved=True, released=accuracy, best=accuracy)


def _parameter_free(state: LadderState, hits: np.ndarray) -> tuple[LadderState, Release]:
    leader = state.leader_hits
    if state.best_loss is not None:
        if leader is None:
            raise ValueError("a parameter_free state with a released loss needs leader_hits")
        if leader.shape != hits.shape:
            raise ValueError(f"hits cover {hits.size} examples but the leader's {leader.size}: "
                             "not the same hidden label set")
        # The paired test L_t < R_{t-1} - s / sqrt(n), where R_{t-1} is the leader's loss and s
        # the sample std (ddof=1) of d = (new loss vector) - (leader's loss vector). Done in
        # counts, exactly: with D = sum(d) (n L_t - n R_{t-1}) and Q = sum(d^2) (the examples
        # where exactly one of the two is right), s^2 = (Q - D^2 / n) / (n - 1), and for n >= 2
        # the test -D > s sqrt(n) is D < 0 and D^2 > Q: the paired z statistic exceeds 1.
        d = leader.astype(np.int64) - hits.astype(np.int64)  # loss_new - loss_leader, per example
        total, squares = int(d.sum()), int(np.count_nonzero(d))
        # n = 1: the sample std of one value is undefined (Ladder.jl's std gives NaN, which
        # would refuse every later submission); we take s = 0, as for constant vectors: then any
        # strictly lower loss improves. For n >= 2 a constant d has s = 0 and the counts agree.
        improved = total < 0 and (hits.size == 1 or total * total > squares)
        if not improved:
            return state, Release(improved=False, released=None,
                                  best=_loss_accuracy(state.best_loss, hits.size))
    # First submission: R_0 = +inf, so it improves whatever s is (s itself is never needed).
    # R_t = [L_t]_{1/n} = L_t: a 0/1 loss is already a multiple of 1/n.
    loss = _loss(hits)
    leader_hits = hits.copy()
    leader_hits.setflags(write=False)
    new_state = LadderState(best_loss=loss, leader_hits=leader_hits)
    accuracy = _count_accuracy(hits)
    return new_state, Release(improved=True, released=accuracy, best=accuracy)
