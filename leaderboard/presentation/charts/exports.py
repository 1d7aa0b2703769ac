"""The data behind each chart of the plots pages as CSV (the JSON downloads are the
`leaderboard.presentation.charts.selectors` dicts themselves). Accuracies are fractions, as
in the API; floats are written with `repr`, so they read back exactly."""

from __future__ import annotations

from typing import Any

from leaderboard.common.csv_export import csv_text

POINT_COLUMNS = ("submission_id", "model_name", "x", "x_low", "x_high", "y", "y_low", "y_high")


def points_csv(data: dict[str, Any]) -> str:
    """One row per submission. A new test set adds `predicted` (a * x + b) and `residual`
    and the fit's `slope` and `intercept` on every row; another label set adds both ranks,
    the rank shift and its direction. x is the original accuracy, y the other label set's."""
    x_slug, y_slug = data["x"]["label_set"], data["y"]["label_set"]
    names = {"x": f"{x_slug}_accuracy", "x_low": f"{x_slug}_ci_low",
             "x_high": f"{x_slug}_ci_high", "y": f"{y_slug}_accuracy",
             "y_low": f"{y_slug}_ci_low", "y_high": f"{y_slug}_ci_high",
             "rank_x": f"{x_slug}_rank", "rank_y": f"{y_slug}_rank"}
    if data["kind"] != "label_set":  # a new test set's, fitted or not (fit None)
        extra: tuple[str, ...] = ("predicted", "residual", "slope", "intercept")
    else:
        extra = ("rank_x", "rank_y", "shift", "direction")
    fit = data.get("fit") or {}
    rows = [[p.get(c) if c not in ("slope", "intercept") else fit.get(c)
             for c in (*POINT_COLUMNS, *extra)] for p in data["points"]]
    return csv_text([names.get(c, c) for c in (*POINT_COLUMNS, *extra)], rows)


def band_csv(data: dict[str, Any]) -> str:
    """The fit line and its bootstrap 95% band at each grid x (no rows without a fit)."""
    fit = data.get("fit")
    rows = [] if not fit else [
        [x, line, low, high] for x, line, low, high
        in zip(fit["grid"], fit["line"], fit["band_low"], fit["band_high"], strict=True)]
    return csv_text(["x", "fit", "band_low", "band_high"], rows)


def curves_csv(data: dict[str, Any]) -> str:
    """Long format: one row per submission, labels (original/corrected) and sample."""
    rows = [[s["submission_id"], s["model_name"], labels, x, n, acc]
            for s in data["submissions"] for labels in ("original", "corrected")
            for x, n, acc in zip(data["x"], data["prevalence"], s[labels], strict=True)]
    return csv_text(["submission_id", "model_name", "labels", "removed_fraction",
                 "noise_prevalence", "accuracy"], rows)


def crossings_csv(data: dict[str, Any]) -> str:
    names = {s["submission_id"]: s["model_name"] for s in data["submissions"]}
    rows = [[i, c["labels"], c["first"], names[c["first"]], c["second"], names[c["second"]],
             c["x"], c["prevalence"], c["accuracy"], c["ahead_before"]]
            for i, c in enumerate(data["crossings"], start=1)]
    return csv_text(["number", "labels", "first_id", "first_model", "second_id", "second_model",
                 "removed_fraction", "noise_prevalence", "accuracy", "ahead_before_id"], rows)
