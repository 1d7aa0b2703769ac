"""Template helpers of the plots pages, and the effective-robustness section of a submission's
page (`{% effective_robustness submission %}`)."""

from __future__ import annotations

from typing import Any

from django import template

from leaderboard.presentation.charts import selectors as selectors_plots
from leaderboard.presentation.charts.scatter import equation
from leaderboard.submissions.models import Submission

register = template.Library()


@register.filter
def signed_points(value: object) -> str:
    """A difference of accuracies in percentage points: 0.0052 -> "+0.52"; None -> "—", and
    so is a missing one (the template's "": a point has no residual when there is no fit,
    under 3 points; that answered 500)."""
    return f"{value * 100:+.2f}" if isinstance(value, int | float) else "—"


@register.simple_tag
def fit_equation(fit: dict[str, Any] | None, new: str, reference: str) -> str:
    """The fit of `new` against the reference label set (the plot's x, `original` on the
    built-in benchmarks): "cifar10.1-v6 = 1.234 × original − 29.85" (in percent), or
    "probit(cifar10.1-v6) = 1.102 × probit(original) − 0.338"."""
    return equation(fit, new, reference) if fit else ""


@register.inclusion_tag("leaderboard/_effective_robustness.html")
def effective_robustness(submission: Submission) -> dict[str, Any]:
    return {"submission": submission,
            "rows": selectors_plots.submission_effective_robustness(submission=submission)}
