"""Reads behind the plots pages (docs/metrics.md §8 and §9): the data of each chart as plain
JSON-able dicts.

- `new_test_set_plot`: original accuracy (x) against a new test set's (y), one point per public
  scored submission with both Clopper-Pearson intervals, and the linear fit t(new) = a *
  t(original) + b on a linear, probit or logit scale t, with its bootstrap 95% band and each
  point's residual ("effective robustness").
- `label_set_plot`: original accuracy against another label set of the same example set
  (corrected, ReaL, multi-label, CIFAR-10H), with each point's rank on both and the rank
  inversions.
- `noise_prevalence_plot`: original and corrected accuracy of chosen submissions as functions
  of noise prevalence, and where two submissions' curves cross.

Everything is computed with the scoring core (`workers.scoring.ranking`) from the stored
scores of the newest label-set versions (the leaderboard's columns), and cached per
`Benchmark.leaderboard_generation` like `leaderboard_get` (leaderboard/presentation/caching.py
says why that stays fresh across processes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, cast

import numpy as np
from django.core.cache import cache

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.presentation.boards.hidden import revealed_private_columns
from leaderboard.presentation.boards.selectors import (
    Leaderboard,
    LeaderboardColumn,
    leaderboard_get,
)
from leaderboard.presentation.caching import source_format
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.selectors import submission_scores
from workers.scoring import ranking
from workers.scoring.families.corrected import NOISE_CURVES
from workers.scoring.families.registry import FAMILIES, correctable_family, family_named
from workers.scoring.stats import FIT_SCALES, noise_prevalence_curve, scale_forward, scale_inverse

# The x of the new-test-set and label-set charts is the benchmark's reference label set (the
# board's `reference`), the noise-prevalence curves' label set its corrected one (the first
# of the correctable family): asked of the rows, whatever a bundle called them
# (docs/families.md).
DEFAULT_CURVES = 5  # the top submissions on the corrected label set when no ids are given
MAX_CURVES = 8
CURVE_POINTS = 101  # samples of each noise-prevalence curve, evenly spaced in prevalence
FIT_BOOTSTRAP = 1000
FIT_SEED = 0
CACHE_TIMEOUT = 3600  # seconds; the generation in the key, not the timeout, keeps it fresh
# What the cached plot data are built from (the format in their cache key, see caching.py).
PLOT_DATA_MODULES = (__name__, "leaderboard.presentation.boards.selectors",
                     "leaderboard.presentation.boards.hidden",
                     "leaderboard.presentation.boards.rank_ub", "workers.scoring.stats")


class PlotQueryError(ValueError):
    """A request the data cannot answer: an unknown label set, bad submission ids."""

    def __init__(self, code: str, message: str, field: str) -> None:
        super().__init__(message)
        self.code, self.message, self.field = code, message, field


@dataclass(frozen=True)
class PlotChoices:
    """What each chart of a benchmark can show (`plot_choices`): a page that draws several
    charts reads them once and hands them to each selector as `choices`."""

    new_test_sets: list[tuple[str, str]]  # (slug, name), the default first
    label_sets: list[tuple[str, str]]
    corrected: str | None  # the slug of the benchmark's corrected label set, if any

    @property
    def noise(self) -> bool:
        """Whether the noise-prevalence chart has a label set to draw."""
        return self.corrected is not None


def plot_choices(*, benchmark: Benchmark) -> PlotChoices:
    """The label sets each chart can show on this benchmark."""
    # Not a hidden label set: its plots come with its reveal (docs/metrics.md §17).
    rows = list(LabelSet.objects.filter(benchmark=benchmark, labels_hidden=False)
                .order_by("pk").values_list("slug", "name", "family"))
    new = sorted(((s, n) for s, n, f in rows if family_named(f).gap_to_reference), reverse=True)
    # The label-set scatter's y: the families drawn against the original labels, in their
    # order, a label set named as its family first.
    order = {name: f.plot_order for name, f in FAMILIES.items() if f.plot_order is not None}
    labels = sorted(((s, n, f) for s, n, f in rows if f in order),
                    key=lambda r: (order[r[2]], r[0] != r[2], r[0]))
    # A hidden label set's private part once revealed: drawn against its public part, the
    # shake-up (docs/metrics.md §17.4).
    private = [(slug, f"{name} (private part)") for slug, name in revealed_private_columns(
        benchmark=benchmark)]
    correctable = correctable_family().name
    return PlotChoices(new, [(s, n) for s, n, _ in labels] + private,
                       next((s for s, _, f in rows if f == correctable), None))


def _cached(benchmark: Benchmark, parts: Sequence[object],
            build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`parts` must be validated values (slugs of existing label sets, integer ids)."""
    key = ":".join(["plots", source_format(modules=PLOT_DATA_MODULES), str(benchmark.pk),
                    str(benchmark.leaderboard_generation), *map(str, parts)])
    data = cache.get(key)
    if data is None:
        data = build()
        cache.set(key, data, timeout=CACHE_TIMEOUT)
    return cast(dict[str, Any], data)


def _board(benchmark: Benchmark) -> Leaderboard:
    return leaderboard_get(benchmark=benchmark)


def _column(board: Leaderboard, slug: str) -> LeaderboardColumn | None:
    return next((c for c in board.columns if c.slug == slug), None)


def _axes(board: Leaderboard, x_slug: str, y_slug: str) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": board.benchmark}
    for axis, slug in (("x", x_slug), ("y", y_slug)):
        column = _column(board, slug)
        out[axis] = {"label_set": slug, "name": column.name if column else slug,
                     "version": column.version_number if column else None,
                     "version_hash": column.version_hash if column else None,
                     # how its intervals are computed (the board column's, from the family)
                     "ci_method": column.ci_method if column else "clopper_pearson"}
    return out


def _pairs(board: Leaderboard, x_slug: str, y_slug: str) -> list[dict[str, Any]]:
    """Leaderboard rows with an accuracy on both label sets, in submission id order."""
    rows = sorted(board.rows, key=lambda r: r["submission_id"])
    return [r for r in rows
            if (r["scores"].get(x_slug) or {}).get("accuracy") is not None
            and (r["scores"].get(y_slug) or {}).get("accuracy") is not None]


def _point(row: dict[str, Any], x_slug: str, y_slug: str) -> dict[str, Any]:
    x, y = row["scores"][x_slug], row["scores"][y_slug]
    return {"submission_id": row["submission_id"], "model_name": row["model_name"],
            "x": x["accuracy"], "x_low": x["ci_low"], "x_high": x["ci_high"],
            "y": y["accuracy"], "y_low": y["ci_low"], "y_high": y["ci_high"]}


def _check(choices: Sequence[tuple[str, str]], slug: str, what: str) -> None:
    if slug not in {s for s, _ in choices}:
        raise PlotQueryError("unknown_label_set",
                             f"no {what} {slug!r} here; choose one of "
                             + (", ".join(s for s, _ in choices) or "none"), "label_set")


# ------------------------------------------------ new test sets (docs/metrics.md §8)


def fit_scale_check(scale: str) -> None:
    if scale not in FIT_SCALES:
        raise PlotQueryError("unknown_scale", f"no fit scale {scale!r}; choose one of "
                             + ", ".join(FIT_SCALES), "scale")


def new_test_set_plot(*, benchmark: Benchmark, label_set: str, scale: str = "linear",
                      choices: PlotChoices | None = None) -> dict[str, Any]:
    """Original (x) against new-test-set (y) accuracy with the fit on `scale` (None under 3
    points or one distinct x); each point's `predicted` and `residual` = y - predicted. Off
    `linear`, a point at an accuracy of 0 or 1 stays on the chart but out of the fit."""
    _check((choices or plot_choices(benchmark=benchmark)).new_test_sets, label_set, "new test set")
    fit_scale_check(scale)

    def build() -> dict[str, Any]:
        board = _board(benchmark)
        rows = _pairs(board, board.reference, label_set)
        points = [_point(r, board.reference, label_set) for r in rows]
        result = ranking.new_test_set_fit([r["scores"] for r in rows], label_set,
                                          original=board.reference,
                                          n_boot=FIT_BOOTSTRAP, seed=FIT_SEED, scale=scale)
        fit = None
        if result is not None:
            line, used = result
            for i, residual in zip(used.tolist(), line.residuals, strict=True):
                points[i]["predicted"] = float(line.predict(points[i]["x"]))
                points[i]["residual"] = float(residual)
            fit = {"scale": scale, "slope": line.slope, "intercept": line.intercept,
                   "n": int(used.size), "bootstrap": FIT_BOOTSTRAP, "seed": FIT_SEED,
                   "grid": line.grid.tolist(), "line": line.predict(line.grid).tolist(),
                   "band_low": line.band_low.tolist(), "band_high": line.band_high.tolist()}
        return {**_axes(board, board.reference, label_set), "kind": "new_test_set",
                "points": points, "fit": fit}

    return _cached(benchmark, ("new", label_set, scale), build)


def fit_predict(fit: dict[str, Any], original: float) -> float:
    """The new-test-set accuracy a fit expects at this original accuracy, on its scale."""
    z = fit["slope"] * scale_forward(np.array([original]), fit["scale"]) + fit["intercept"]
    return float(scale_inverse(z, fit["scale"])[0])


def submission_effective_robustness(*, submission: Submission,
                                    scale: str = "linear") -> list[dict[str, Any]]:
    """Per new test set of the benchmark: the submission's original and new accuracy, the fit
    over the public leaderboard (on `scale`) and the residual new - predicted. A submission
    that is not on the public leaderboard (private) is measured against the same fit,
    `in_fit` False."""
    if submission.status != Submission.Status.SCORED:
        return []
    benchmark = submission.benchmark
    own = submission_scores(submission=submission)
    out = []
    choices = plot_choices(benchmark=benchmark)
    for slug, name in choices.new_test_sets:
        plot = new_test_set_plot(benchmark=benchmark, label_set=slug, scale=scale, choices=choices)
        fit, reference = plot["fit"], plot["x"]["label_set"]  # x: the reference label set
        mine = next((p for p in plot["points"] if p["submission_id"] == submission.pk), None)
        if mine is None and reference in own and slug in own:
            mine = {"x": own[reference].accuracy, "y": own[slug].accuracy}
            if fit is not None and None not in (mine["x"], mine["y"]):
                mine["predicted"] = fit_predict(fit, mine["x"])
                mine["residual"] = mine["y"] - mine["predicted"]
        if fit is None or mine is None or mine.get("residual") is None:
            continue
        out.append({"label_set": slug, "name": name, "reference_slug": reference,
                    "reference": mine["x"], "new": mine["y"],
                    "predicted": mine["predicted"], "residual": mine["residual"],
                    "slope": fit["slope"], "intercept": fit["intercept"], "n": fit["n"],
                    "scale": fit["scale"],
                    "in_fit": "submission_id" in mine})
    return out


# ---------------------------------------------------------------- other label sets, ranks


def label_set_plot(*, benchmark: Benchmark, label_set: str,
                   choices: PlotChoices | None = None) -> dict[str, Any]:
    """Original (x) against another label set (y) of the same images: accuracies with their
    intervals, and ranks among the plotted submissions (1 = best, ties share the better rank).
    `shift` = original rank - this rank (positive: moved up); `swapped_pairs` counts the pairs
    of submissions whose order the two label sets reverse."""
    _check((choices or plot_choices(benchmark=benchmark)).label_sets, label_set, "label set")

    def build() -> dict[str, Any]:
        board = _board(benchmark)
        # x is the column the board's rank shifts are from: the reference label set, or a
        # revealed private part's public part
        column = _column(board, label_set)
        x_slug = column.shift_from if column is not None else board.reference
        rows = _pairs(board, x_slug, label_set)
        records = [r["scores"] for r in rows]
        rank_x = ranking.ranks(records, x_slug)
        rank_y = ranking.ranks(records, label_set)
        points = []
        for i, row in enumerate(rows):
            shift = int(rank_x[i] - rank_y[i])
            points.append({**_point(row, x_slug, label_set), "rank_x": int(rank_x[i]),
                           "rank_y": int(rank_y[i]), "shift": shift,
                           "direction": "up" if shift > 0 else "down" if shift < 0 else "same"})
        swapped = ranking.swapped_pairs(rank_x.tolist(), rank_y.tolist())
        summary = {name: sum(p["direction"] == name for p in points)
                   for name in ("up", "down", "same")}
        return {**_axes(board, x_slug, label_set), "kind": "label_set", "points": points,
                "inversions": {**summary, "swapped_pairs": swapped, "n": len(points)}}

    return _cached(benchmark, ("labels", label_set), build)


# --------------------------------------------- noise prevalence (docs/metrics.md §9)


def parse_ids(raw: str | None) -> list[int] | None:
    """`?ids=1,2,3` -> [1, 2, 3] (order kept, duplicates dropped); None when empty."""
    if not raw or not raw.strip():
        return None
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit():
            raise PlotQueryError("invalid_ids", "ids is a comma-separated list of submission "
                                 f"numbers, e.g. ids=12,15 (not {part!r})", "ids")
        if int(part) not in ids:
            ids.append(int(part))
    if len(ids) > MAX_CURVES:
        raise PlotQueryError("too_many_ids",
                             f"at most {MAX_CURVES} submissions on one chart", "ids")
    return ids


def _noise_inputs(benchmark: Benchmark, corrected: str,
                  ids: Sequence[int]) -> dict[int, tuple[str, Any]]:
    """submission id -> (model name, the noise_prevalence inputs of its score on the corrected
    label set `corrected`, on the leaderboard's version), for public scored submissions that
    have usable inputs."""
    board = _board(benchmark)
    column = _column(board, corrected)
    if column is None:
        return {}
    rows = Score.objects.filter(
        label_set_version__content_hash=column.version_hash,
        label_set_version__label_set__benchmark=benchmark, submission_id__in=list(ids),
        submission__public=True, submission__status=Submission.Status.SCORED,
    ).values_list("submission_id", "submission__model_name", "record")
    out = {}
    for sub_id, model_name, record in rows:
        inputs = (record or {}).get("noise_prevalence") or {}
        if inputs.get("acc_c_original") is not None and inputs.get("acc_b") is not None:
            out[sub_id] = (model_name, inputs)
    return out


def noise_prevalence_plot(*, benchmark: Benchmark, ids: Sequence[int] | None = None,
                          choices: PlotChoices | None = None) -> dict[str, Any]:
    """Each chosen submission's accuracy on original and on corrected labels as |B| shrinks,
    against the noise prevalence N = |C| / (|C| + kept |B|), sampled at CURVE_POINTS values of
    N evenly spaced from |C| / |P| to 1; and every crossing of two submissions' curves (same
    labels) with its removal fraction x, prevalence and accuracy: a crossing strictly inside
    0 < x < 1, where the two swap rank (curves that only meet at an end tie there and are not
    listed). Default submissions: the top DEFAULT_CURVES on the corrected label set."""
    corrected = (choices or plot_choices(benchmark=benchmark)).corrected
    if corrected is None:
        raise PlotQueryError("no_corrected_labels",
                             f"{benchmark.slug} has no corrected label set", "benchmark")

    def build() -> dict[str, Any]:
        board = _board(benchmark)
        chosen = list(ids or [])
        if ids is None:
            ranked = sorted((r for r in board.rows if corrected in r["ranks"]),
                            key=lambda r: (r["ranks"][corrected], r["submission_id"]))
            found = _noise_inputs(benchmark, corrected,
                                  [r["submission_id"] for r in ranked[:MAX_CURVES]])
            chosen = [r["submission_id"] for r in ranked if r["submission_id"] in found]
            chosen = chosen[:DEFAULT_CURVES]
        else:
            found = _noise_inputs(benchmark, corrected, chosen)
            missing = [i for i in chosen if i not in found]
            if missing:
                raise PlotQueryError(
                    "unknown_submission", "not a public scored submission of "
                    f"{benchmark.slug} with a corrected score: "
                    + ", ".join(f"#{i}" for i in missing), "ids")
        return _curves(board, corrected, [(i, *found[i]) for i in chosen], default=ids is None)

    return _cached(benchmark, ("noise", ",".join(map(str, ids)) if ids is not None else ""),
                   build)


def _curves(board: Leaderboard, corrected: str, chosen: list[tuple[int, str, dict[str, Any]]],
            *, default: bool) -> dict[str, Any]:
    column = _column(board, corrected)
    out: dict[str, Any] = {
        "benchmark": board.benchmark, "kind": "noise_prevalence", "label_set": corrected,
        "version": column.version_number if column else None,
        "version_hash": column.version_hash if column else None, "default": default,
        "n_c": None, "n_b": None, "x": [], "prevalence": [], "submissions": [], "crossings": []}
    if not chosen:
        return out
    n_c, n_b = int(chosen[0][2]["n_c"]), int(chosen[0][2]["n_b"])
    # evenly spaced in prevalence; x = the removed fraction of B giving that prevalence
    prevalence = np.linspace(n_c / (n_c + n_b), 1.0, CURVE_POINTS)
    x = np.clip((n_c + n_b - n_c / prevalence) / n_b, 0.0, 1.0) if n_b else prevalence * 0
    x[0], x[-1] = 0.0, 1.0
    records = {sub_id: {corrected: {"noise_prevalence": inputs}} for sub_id, _, inputs in chosen}
    out.update(n_c=n_c, n_b=n_b, x=x.tolist())
    for sub_id, name, inputs in chosen:
        curves = ranking.noise_prevalence(records[sub_id], slug=corrected, x=x)
        assert curves is not None
        # both curves have the prevalence of x (it depends on |C| and |B| only)
        out["prevalence"] = curves[NOISE_CURVES[-1][0]]["prevalence"]
        # each curve's accuracies under its labeling's name, the original labels' first
        out["submissions"].append({
            "submission_id": sub_id, "model_name": name, "inputs": dict(inputs),
            **{labels: curves[labels]["accuracy"] for labels, _ in reversed(NOISE_CURVES)}})
    out["crossings"] = _crossings(chosen, records, corrected)
    return out


def _crossings(chosen: list[tuple[int, str, dict[str, Any]]],
               records: dict[int, Any], corrected: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for (a_id, a_name, a), (b_id, b_name, b) in combinations(chosen, 2):
        if (a["n_c"], a["n_b"]) != (b["n_c"], b["n_b"]):
            continue  # scored on different correctable sets: not one chart's curves
        found = ranking.noise_prevalence_crossings(records[a_id], records[b_id], slug=corrected)
        for labels, key in NOISE_CURVES:
            cross = found[labels]
            if cross is None or a[key] is None or b[key] is None or not 0 < cross["x"] < 1:
                continue  # curves meeting at an end (equal A_C, or equal at x = 0) tie there
            _, (accuracy,) = noise_prevalence_curve(acc_c=a[key], n_c=a["n_c"], acc_b=a["acc_b"],
                                                    n_b=a["n_b"], x=np.array([cross["x"]]))
            # ahead where all of B is kept (x = 0); the other one is ahead past the crossing
            a_first = a["acc_b"] * a["n_b"] + a[key] * a["n_c"] >= \
                b["acc_b"] * b["n_b"] + b[key] * b["n_c"]
            rows.append({"labels": labels, "first": a_id, "first_name": a_name,
                         "second": b_id, "second_name": b_name, "x": cross["x"],
                         "prevalence": cross["prevalence"], "accuracy": float(accuracy),
                         "ahead_before": a_id if a_first else b_id})
    # the corrected labels' crossings first (NOISE_CURVES' order), each by prevalence
    order = {labels: i for i, (labels, _) in enumerate(NOISE_CURVES)}
    rows.sort(key=lambda r: (order[r["labels"]], r["prevalence"]))
    return rows
