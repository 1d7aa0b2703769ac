"""What participation tells the domains above it, which it does not import (the contracts in
pyproject.toml, [tool.importlinter]). Each is sent once the transaction that made the change
has committed; notifications receive them (leaderboard/notifications/receivers.py)."""

from __future__ import annotations

from django.dispatch import Signal

# A user asked to join a benchmark. Keyword argument: `request_id`.
participation_requested = Signal()
# The hosts approved or refused a request. Keyword argument: `request_id`.
participation_decided = Signal()
