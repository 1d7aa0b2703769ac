"""What the submissions domain tells the domains above it, which it does not import (no import
cycle between domains: the contracts in pyproject.toml, [tool.importlinter])."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that stores a submission's scores, so whatever a receiver writes
# commits or rolls back with them. Keyword arguments: `submission`; `novel`, per LabelSet the
# top-1 pairs it did not judge (workers.scoring.hits.NovelPairs: they go to review,
# docs/metrics.md §11); `missed_versions`, the ids of versions made while it was scoring, which
# were re-scored without it. The review queue receives it (leaderboard/review/receivers.py).
submission_scored = Signal()
