"""The two roles a user can hold, in one place: `staff` (Django's `User.is_staff`: the admin
site, every maintainer's right) and `reviewer` (membership of the `reviewers` group: the review
queues, audits and withdrawing anyone's submission with a reason). Staff act as reviewers too
(docs/api.md §1, "Maintainers").

Here in `common`, the lowest layer, so that every domain that asks "may this user review?"
(submissions' withdraw, review's panels, audits, notifications, the templates) asks the same
question of the same group name; `manage.py role` (leaderboard/accounts) grants and revokes them.
"""

from __future__ import annotations

from django.contrib.auth.models import User

REVIEWERS_GROUP = "reviewers"

STAFF = "staff"
REVIEWER = "reviewer"
ROLES = (REVIEWER, STAFF)


def user_is_reviewer(user: User) -> bool:
    """Maintainers: active staff, or active members of the `reviewers` group."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.groups.filter(name=REVIEWERS_GROUP).exists()
