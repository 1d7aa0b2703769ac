"""What the database says became of a bench's CIFAR-10 submissions in the topology of
tests/deploy/topology.py: scored exactly once, lost, scored twice, failed, started again
(shared by bench/faults.py and bench/chaos.py, so that both count the same way).

Counted from what the claims, attempts and Score rows record, never from log lines:
- scored exactly once: status scored, its claim held by a task (the one that wrote its result:
  results are only written by the claim holder, leaderboard/jobs/), one Score row on
  each of the five CIFAR-10 label sets, and none of them written again after the submission
  was scored;
- twice: a submission with a Score row written after it was scored (a scoring that ran to
  completion a second time); a model name stored twice is counted apart (`stored_twice`);
- lost: neither scored nor failed (when the caller stopped waiting);
- restarted: submissions whose attempts say they were started more than once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tests.deploy.topology import Cluster

LABEL_SETS = {"original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"}


@dataclass
class Counts:
    ids: set[int]
    made: dict[int, float]  # id -> created (epoch seconds, as the web host recorded it)
    done: dict[int, float]  # id -> scored, for the scored ones (as the worker recorded it)
    failed: dict[int, tuple[str, str]]  # id -> (failure_code, failure_reason)
    once: set[int]
    twice: set[int]  # a Score row written after the submission was scored
    stored_twice: dict[str, int]  # model names stored more than once -> rows
    restarted: int

    @property
    def lost(self) -> set[int]:
        return self.ids - self.done.keys() - self.failed.keys()


def wait_scored(cluster: Cluster, ids: set[int], deadline: float) -> None:
    """Until every id is scored or failed, or the deadline (monotonic)."""
    while time.monotonic() < deadline:
        try:
            [(pending,)] = cluster.sql(
                "SELECT count(*) FROM leaderboard_submission WHERE id = ANY(%s)"
                " AND status NOT IN ('scored', 'failed')", (sorted(ids),))
        except Exception:  # the database is coming back: the next query connects again
            pending = -1
        if pending == 0:
            return
        time.sleep(0.5)


def submission_counts(cluster: Cluster, ids: set[int], names_like: str) -> Counts:
    """The counts for these submissions; model names matching the SQL pattern `names_like`
    are checked for being stored more than once."""
    rows = cluster.sql("SELECT id, model_name, status, attempts, claimed_by, created, finished_at,"
                       " failure_code, failure_reason"
                       " FROM leaderboard_submission WHERE id = ANY(%s)", (sorted(ids),))
    names = cluster.sql("SELECT model_name, count(*) FROM leaderboard_submission"
                        " WHERE model_name LIKE %s GROUP BY 1", (names_like,))
    # Per submission and label set: its Score rows, and how many were written after the
    # submission was scored. The one scoring that finishes writes its rows and then, in the
    # same transaction, the submission's `finished_at` time; a row updated later was written by a
    # second scoring.
    scores: dict[int, dict[str, int]] = {}
    written_again: set[int] = set()
    for submission_id, slug, n, late in cluster.sql(
            "SELECT s.submission_id, l.slug, count(*),"
            " count(*) FILTER (WHERE s.updated > b.finished_at)"
            " FROM leaderboard_score s JOIN leaderboard_labelset l ON l.id = s.label_set_id"
            " JOIN leaderboard_submission b ON b.id = s.submission_id"
            " WHERE s.submission_id = ANY(%s) GROUP BY 1, 2", (sorted(ids),)):
        scores.setdefault(submission_id, {})[slug] = n
        if late:
            written_again.add(submission_id)
    return Counts(
        ids=set(ids),
        made={row[0]: row[5].timestamp() for row in rows},
        done={row[0]: row[6].timestamp() for row in rows if row[2] == "scored"},
        failed={row[0]: (row[7], row[8]) for row in rows if row[2] == "failed"},
        once={row[0] for row in rows
              if row[2] == "scored" and row[4] and row[0] not in written_again
              and scores.get(row[0]) == dict.fromkeys(LABEL_SETS, 1)},
        twice=written_again,
        stored_twice={name: n for name, n in names if n > 1},
        restarted=sum(row[3] > 1 for row in rows),
    )
