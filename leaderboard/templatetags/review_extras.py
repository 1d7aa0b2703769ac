"""The expert panel's section of a submission's page (`{% panel_major_mistakes submission %}`):
its top-1 predictions that repeat a mistake the panel judged major (docs/metrics.md §11.1)."""

from __future__ import annotations

from typing import Any

from django import template

from leaderboard.review.mistakes.selectors import submission_panel_major_hits
from leaderboard.submissions.models import Submission

register = template.Library()


@register.inclusion_tag("leaderboard/_panel_major_mistakes.html")
def panel_major_mistakes(submission: Submission) -> dict[str, Any]:
    return {"submission": submission,
            "panel": submission_panel_major_hits(submission=submission)}
