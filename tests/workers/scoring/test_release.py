"""Tests for workers.scoring.release: the numbers a hidden label set releases (docs/metrics.md §17).

Every expected value is worked out by hand in the test from small hit vectors with known losses
(the loss L = wrong / n, the rung [L]_eta, the paired standard deviation term by term), never
with the module's own formulas. The interval is checked against SciPy's beta quantiles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from workers.scoring.release import (
    MECHANISMS,
    LadderState,
    Release,
    default_step,
    release_next,
    released_interval,
)


def hits(correct: int, n: int) -> np.ndarray:
    """The first `correct` examples right, the others wrong: loss (n - correct) / n."""
    return np.arange(n) < correct


def pattern(text: str) -> np.ndarray:
    """'1' = right, '0' = wrong, one character per example."""
    return np.array([c == "1" for c in text])


def fields(release: Release) -> tuple[bool, float | None, float]:
    return release.improved, release.released, release.best


def columns(releases: list[Release]) -> tuple[list[bool], list[float | None], list[float]]:
    return ([r.improved for r in releases], [r.released for r in releases],
            [r.best for r in releases])


def release_replay(*, mechanism: str, step: float | None,
                   hits_in_order: list[np.ndarray] | tuple[np.ndarray, ...]) -> list[Release]:
    """The releases of one participant's submissions in order, as the server makes them (one
    `release_next` each, its state carried)."""
    state: LadderState | None = None
    releases = []
    for vector in hits_in_order:
        state, release = release_next(mechanism=mechanism, step=step, state=state, hits=vector)
        releases.append(release)
    return releases


def replay(mechanism: str, step: float | None, *vectors: np.ndarray) -> tuple[list, list, list]:
    return columns(release_replay(mechanism=mechanism, step=step, hits_in_order=vectors))


# exact


def test_it_releases_every_accuracy_as_is_under_exact() -> None:
    improved, released, best = replay("exact", None, *(hits(c, 10) for c in (6, 8, 7, 8, 9)))
    assert improved == [True, True, False, False, True]  # 8 after 8 is no improvement
    assert released == pytest.approx([0.6, 0.8, 0.7, 0.8, 0.9])
    assert best == pytest.approx([0.6, 0.8, 0.8, 0.8, 0.9])


# ladder, eta = 0.1 unless said


def test_it_releases_the_first_ladder_submission_as_scored() -> None:
    # L = 4/10 = 0.4 < +inf: released as scored; the participant's rungs start at 0.4
    state, release = release_next(mechanism="ladder", step=0.1, state=None, hits=hits(6, 10))
    assert fields(release) == (True, 0.6, 0.6)
    assert (state.best_loss, state.anchor_loss) == (pytest.approx(0.4), pytest.approx(0.4))
    assert state.leader_hits is None


def test_it_climbs_the_ladder_on_an_improvement_by_more_than_the_step() -> None:
    # L: 0.4, then 0.2 < 0.4 - 0.1: (0.4 - 0.2) / 0.1 = 2 rungs, R = 0.2
    improved, released, best = replay("ladder", 0.1, hits(6, 10), hits(8, 10))
    assert improved == [True, True]
    assert released == pytest.approx([0.6, 0.8])
    assert best == pytest.approx([0.6, 0.8])


def test_it_keeps_the_ladder_on_an_improvement_by_less_than_the_step() -> None:
    # n = 20: L 0.4, then 0.35, not below 0.4 - 0.1 = 0.3: nothing of its own, best stays
    improved, released, best = replay("ladder", 0.1, hits(12, 20), hits(13, 20))
    assert improved == [True, False]
    assert released == pytest.approx([0.6, None])
    assert best == pytest.approx([0.6, 0.6])


def test_it_keeps_the_ladder_on_an_improvement_of_exactly_the_step() -> None:
    # L 0.3, then 0.2: the gap is eta, not more. In floats a plain comparison would let it
    # through:
    assert 0.2 < 3 * 0.1 - 0.1
    improved, released, best = replay("ladder", 0.1, hits(7, 10), hits(8, 10))
    assert improved == [True, False]
    assert released == pytest.approx([0.7, None])
    assert best == pytest.approx([0.7, 0.7])


def test_it_keeps_the_ladder_on_equal_and_worse_losses() -> None:
    improved, released, best = replay("ladder", 0.1, hits(7, 10), pattern("0001111111"),
                                      hits(5, 10))
    assert improved == [True, False, False]  # 0.3, 0.3 (other examples), 0.5
    assert released == pytest.approx([0.7, None, None])
    assert best == pytest.approx([0.7, 0.7, 0.7])


def test_it_rounds_ladder_losses_to_the_nearest_rung_from_the_first_release() -> None:
    # n = 20, eta = 0.12; rungs 0.45 - k 0.12:
    #   11 right: L 0.45, released as scored, 0.55; the rungs start at 0.45
    #   14 right: L 0.30 < 0.45 - 0.12 = 0.33; (0.45 - 0.30) / 0.12 = 1.25 -> 1, R = 0.33
    #   16 right: L 0.20 < 0.33 - 0.12 = 0.21; 2.08 -> 2, R = 0.21, released 0.79 (below 0.8)
    #   19 right: L 0.05 < 0.21 - 0.12 = 0.09; 3.33 -> 3, R = 0.09, released 0.91 (below 0.95)
    #   20 right: L 0 is not below 0.09 - 0.12
    improved, released, best = replay("ladder", 0.12, *(hits(c, 20) for c in (11, 14, 16, 19, 20)))
    assert improved == [True, True, True, True, False]
    assert released == pytest.approx([0.55, 0.67, 0.79, 0.91, None])
    assert best == pytest.approx([0.55, 0.67, 0.79, 0.91, 0.91])


def test_it_rounds_a_tie_between_two_rungs_to_the_larger_loss() -> None:
    # n = 100, eta = 0.12: L 0.45, then 0.27 < 0.33: (0.45 - 0.27) / 0.12 = 1.5 rungs, a tie:
    # 1 rung (R = 0.33, released 0.67), not 2 (0.79, above its own 0.73)
    assert replay("ladder", 0.12, hits(55, 100), hits(73, 100)) == (
        [True, True], pytest.approx([0.55, 0.67]), pytest.approx([0.55, 0.67]))


def test_it_clips_a_rung_below_zero_to_accuracy_one() -> None:
    # eta 0.3: L 0.5, then 0 < 0.2: (0.5 - 0) / 0.3 = 1.67 -> 2 rungs, R = -0.1, accuracy 1.1
    assert replay("ladder", 0.3, hits(5, 10), hits(10, 10)) == (
        [True, True], [0.5, 1.0], [0.5, 1.0])


def test_it_uses_three_over_root_n_as_the_default_step() -> None:
    assert default_step(400) == pytest.approx(0.15)
    assert default_step(10_000) == pytest.approx(0.03)
    assert default_step(4_000) == pytest.approx(0.0474341649)
    assert default_step(1) == 3.0
    # n = 400, eta = 0.15: L 0.225 (released 0.775); L 0.175 is not below 0.075; L 0.025 <
    # 0.075: (0.225 - 0.025) / 0.15 = 1.33 -> 1 rung, R = 0.075
    improved, released, best = replay("ladder", None, *(hits(c, 400) for c in (310, 330, 390)))
    assert improved == [True, False, True]
    assert released == pytest.approx([0.775, None, 0.925])
    assert best == pytest.approx([0.775, 0.775, 0.925])


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 40),
    eta=st.floats(0.005, 0.995),
    data=st.data(),
)
def test_it_never_lowers_the_ladders_best_and_keeps_it_on_the_rungs(
    n: int, eta: float, data: st.DataObject
) -> None:
    vectors = data.draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1,
                                 max_size=25))
    state = None
    previous = -1.0
    for i, vector in enumerate(vectors):
        state, release = release_next(mechanism="ladder", step=eta, state=state,
                                      hits=np.array(vector, dtype=bool))
        assert release.best >= previous
        previous = release.best
        assert state.best_loss is not None and state.anchor_loss is not None
        if i == 0:  # the first release is the submission's own accuracy
            assert release.best == sum(vector) / n
            assert state.anchor_loss == pytest.approx(1 - sum(vector) / n, abs=1e-12)
        # the released loss R is a whole number of steps below the first; the accuracy is
        # 1 - R, or 1 when R < 0
        rungs = (state.anchor_loss - state.best_loss) / eta
        assert abs(rungs - round(rungs)) < 1e-9
        expected = 1.0 if state.best_loss < 0 else 1 - state.best_loss
        assert release.best == pytest.approx(expected, abs=1e-12)
        # a new rung is the nearest one: at most half a step above its own accuracy
        if release.improved:
            assert release.best <= sum(vector) / n + eta / 2 + 1e-9


# parameter_free


def test_it_releases_the_first_parameter_free_submission_as_is() -> None:
    state, release = release_next(mechanism="parameter_free", step=None, state=None,
                                  hits=hits(6, 10))
    assert fields(release) == (True, pytest.approx(0.6), pytest.approx(0.6))
    assert state.best_loss == pytest.approx(0.4)
    assert state.leader_hits is not None
    assert state.leader_hits.tolist() == hits(6, 10).tolist()
    assert not state.leader_hits.flags.writeable


def test_it_needs_the_paired_margin_on_the_parameter_free_ladder() -> None:
    # leader: 6 of 10 right, L = 0.4.
    # 7 right: d = loss - leader's loss is -1 once, 0 nine times; mean -0.1;
    #   squared deviations 0.81 + 9 * 0.01 = 0.9, s^2 = 0.9 / 9 = 0.1, s / sqrt(10) = 0.1:
    #   0.3 is not below 0.4 - 0.1: exactly on the margin, not improved.
    # 8 right: d = -1 twice; mean -0.2; 2 * 0.64 + 8 * 0.04 = 1.6, s^2 = 1.6 / 9,
    #   s / sqrt(10) = 0.1333: 0.2 < 0.2667, improved.
    assert math.sqrt(0.9 / 9) / math.sqrt(10) == pytest.approx(0.1)
    assert 0.2 < 0.4 - math.sqrt(1.6 / 9) / math.sqrt(10)
    improved, released, best = replay("parameter_free", None, hits(6, 10), hits(7, 10),
                                      hits(8, 10))
    assert improved == [True, False, True]
    assert released == pytest.approx([0.6, None, 0.8])
    assert best == pytest.approx([0.6, 0.6, 0.8])


def test_it_takes_the_std_of_the_difference_with_the_leader() -> None:
    # n = 20, leader wrong on examples 0..7 (L = 0.4). Two candidates with the same L = 0.25:
    # A: wrong on 0..4 only: d = -1 three times (5, 6, 7), 0 seventeen times; mean -0.15;
    #    3 * 0.85^2 + 17 * 0.15^2 = 2.1675 + 0.3825 = 2.55, s^2 = 2.55 / 19, s / sqrt(20) = 0.0819
    # B: right on 0..7, wrong on 8..12: d = -1 eight times, +1 five times, 0 seven times;
    #    mean -0.15; 8 * 0.85^2 + 5 * 1.15^2 + 7 * 0.15^2 = 5.78 + 6.6125 + 0.1575 = 12.55,
    #    s^2 = 12.55 / 19, s / sqrt(20) = 0.1817
    s_a, s_b = math.sqrt(2.55 / 19), math.sqrt(12.55 / 19)
    assert 0.25 < 0.4 - s_a / math.sqrt(20)  # 0.318
    assert not 0.25 < 0.4 - s_b / math.sqrt(20)  # 0.218
    leader = pattern("0" * 8 + "1" * 12)
    a = pattern("0" * 5 + "1" * 15)
    b = pattern("1" * 8 + "0" * 5 + "1" * 7)
    state, _ = release_next(mechanism="parameter_free", step=None, state=None, hits=leader)
    _, release_a = release_next(mechanism="parameter_free", step=None, state=state, hits=a)
    after_b, release_b = release_next(mechanism="parameter_free", step=None, state=state, hits=b)
    assert fields(release_a) == (True, pytest.approx(0.75), pytest.approx(0.75))
    assert fields(release_b) == (False, None, pytest.approx(0.6))
    assert after_b is state  # nothing moved: the leader is still the first


def test_it_gives_the_reference_implementations_example() -> None:
    # Ladder.jl's README: labels 1 0 1 1 1 0; submissions 000000, 100000, 101000 score losses
    # 0.667, 0.667 (no significant improvement) and 0.333 on its parameter-free ladder.
    labels = pattern("101110")
    submissions = [pattern("000000"), pattern("100000"), pattern("101000")]
    releases = release_replay(mechanism="parameter_free", step=None,
                              hits_in_order=[s == labels for s in submissions])
    assert [1 - r.best for r in releases] == pytest.approx([4 / 6, 4 / 6, 2 / 6])
    assert [r.improved for r in releases] == [True, False, True]


def test_it_keeps_the_parameter_free_ladder_on_equal_losses() -> None:
    # the same hits (d = 0), then the same loss on other examples (d sums to 0)
    improved, released, best = replay("parameter_free", None, hits(7, 10), hits(7, 10),
                                      pattern("0001111111"))
    assert improved == [True, False, False]
    assert released == pytest.approx([0.7, None, None])
    assert best == pytest.approx([0.7, 0.7, 0.7])


def test_it_takes_a_zero_std_on_one_example_and_on_constant_vectors() -> None:
    # n = 1: s = 0, so any strictly lower loss improves; an equal one does not
    improved, released, best = replay("parameter_free", None, pattern("0"), pattern("1"),
                                      pattern("1"))
    assert improved == [True, True, False]
    assert released == [0.0, 1.0, None]
    assert best == [0.0, 1.0, 1.0]
    # n = 5, leader all wrong, then all right: d = -1 everywhere, s = 0, 0 < 1 - 0
    improved, released, best = replay("parameter_free", None, hits(0, 5), hits(5, 5))
    assert improved == [True, True]
    assert released == [0.0, 1.0]


# every mechanism


def test_it_gives_the_clopper_pearson_interval_of_the_released_count() -> None:
    def beta_interval(k: int, n: int) -> tuple[float, float]:
        low = 0.0 if k == 0 else scipy_stats.beta.ppf(0.025, k, n - k + 1)
        high = 1.0 if k == n else scipy_stats.beta.ppf(0.975, k + 1, n - k)
        return low, high

    assert released_interval(accuracy=0.7, total=10) == pytest.approx(beta_interval(7, 10))
    assert released_interval(accuracy=0.52, total=20) == pytest.approx(beta_interval(10, 20))
    # 0.25 * 2 = 0.5 counts as 1 hit (half up; Python's round would give 0)
    assert released_interval(accuracy=0.25, total=2) == pytest.approx(beta_interval(1, 2))
    low, high = released_interval(accuracy=1.0, total=20)
    assert (low, high) == (pytest.approx(0.025 ** (1 / 20)), 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mechanism": "kaggle"}, "unknown release mechanism 'kaggle'"),
        ({"hits": np.array([], dtype=bool)}, "hits is empty"),
        ({"hits": np.array([1, 0, 1])}, "must be a bool array"),
        ({"hits": np.ones((2, 2), dtype=bool)}, "one-dimensional"),
        ({"step": 0.0}, "strictly between 0 and 1"),
        ({"step": 1.0}, "strictly between 0 and 1"),
        ({"step": -0.1}, "strictly between 0 and 1"),
        ({"step": float("nan")}, "strictly between 0 and 1"),
        ({"mechanism": "exact", "step": 0.1}, "'exact' takes no step"),
        ({"mechanism": "parameter_free", "step": 0.1}, "'parameter_free' takes no step"),
    ],
)
def test_it_refuses_bad_arguments(kwargs: dict, message: str) -> None:
    arguments = {"mechanism": "ladder", "step": 0.1, "state": None, "hits": hits(3, 5), **kwargs}
    with pytest.raises(ValueError, match=message):
        release_next(**arguments)


def test_it_refuses_a_leader_of_another_size_and_bad_interval_inputs() -> None:
    state, _ = release_next(mechanism="parameter_free", step=None, state=None, hits=hits(3, 5))
    with pytest.raises(ValueError, match="hits cover 6 examples but the leader's 5"):
        release_next(mechanism="parameter_free", step=None, state=state, hits=hits(3, 6))
    with pytest.raises(ValueError, match="needs leader_hits"):
        release_next(mechanism="parameter_free", step=None,
                     state=LadderState(best_loss=0.4, leader_hits=None), hits=hits(3, 5))
    with pytest.raises(ValueError, match="at least one example"):
        default_step(0)
    with pytest.raises(ValueError, match="at least one example"):
        released_interval(accuracy=0.5, total=0)
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        released_interval(accuracy=1.5, total=10)


def test_it_names_the_three_mechanisms() -> None:
    assert MECHANISMS == ("exact", "ladder", "parameter_free")
