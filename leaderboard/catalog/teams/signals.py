"""What the host teams tell the domains above them, which they do not import (the contracts in
pyproject.toml, [tool.importlinter]). Both are sent once the transaction that wrote the request
has committed (never inside it: a receiver's failure cannot undo the write). Notifications
receive them (leaderboard/notifications/receivers.py; docs/api.md §10)."""

from __future__ import annotations

from django.dispatch import Signal

# A lab asked to host (`host_request.created`, to the site admins). Keyword: `request_id`.
host_request_created = Signal()
# A request was approved or refused (`host_request.decided`, to its requester). Keyword:
# `request_id`.
host_request_decided = Signal()
