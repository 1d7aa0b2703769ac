"""HTML views, thin: forms validate, `leaderboard.services` writes, `leaderboard.selectors`
reads."""

from leaderboard.views.accounts import profile, signup, token_create, token_revoke
from leaderboard.views.home import home
from leaderboard.views.leaderboards import leaderboard
from leaderboard.views.submissions import (
    submission_detail,
    submission_list,
    submission_status,
    submission_visibility,
    submit,
)

__all__ = [
    "home",
    "leaderboard",
    "profile",
    "signup",
    "submission_detail",
    "submission_list",
    "submission_status",
    "submission_visibility",
    "submit",
    "token_create",
    "token_revoke",
]
