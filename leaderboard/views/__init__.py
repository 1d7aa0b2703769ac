"""HTML views, thin: forms validate, `leaderboard.services` writes, `leaderboard.selectors`
reads."""

from leaderboard.views.accounts import profile, signup, token_create, token_revoke
from leaderboard.views.audits import (
    audit_detail,
    audit_histogram_csv,
    audit_histogram_svg,
    audit_list,
    audit_status,
)
from leaderboard.views.benchmarks import benchmark_about
from leaderboard.views.gallery import submission_mistakes
from leaderboard.views.ground_truth import ground_truth_next
from leaderboard.views.home import home
from leaderboard.views.leaderboards import leaderboard
from leaderboard.views.plots import noise_prevalence_download, plot_download, plots
from leaderboard.views.review import label_set_history, review_home, review_next
from leaderboard.views.submissions import (
    submission_detail,
    submission_list,
    submission_status,
    submission_visibility,
    submit,
)

__all__ = [
    "audit_detail",
    "audit_histogram_csv",
    "audit_histogram_svg",
    "audit_list",
    "audit_status",
    "benchmark_about",
    "ground_truth_next",
    "home",
    "label_set_history",
    "leaderboard",
    "noise_prevalence_download",
    "plot_download",
    "plots",
    "profile",
    "review_home",
    "review_next",
    "signup",
    "submission_detail",
    "submission_list",
    "submission_mistakes",
    "submission_status",
    "submission_visibility",
    "submit",
    "token_create",
    "token_revoke",
]
