"""What the review domain tells the domains above it, which it does not import (the contracts
in pyproject.toml, [tool.importlinter])."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once the transaction that decided a review item has committed (never inside it: a
# receiver's failure cannot undo the decision). Keyword argument: `item_id`. Notifications
# receive it (leaderboard/notifications/receivers.py: `review.decided`).
review_item_decided = Signal()
