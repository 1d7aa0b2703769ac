"""Scoring stored submissions on one label-set version, in worker processes when there are
many (a full re-score of every submission, docs/metrics.md §14): scoring is NumPy work on
each stored file, one core per process, so EVALSERVER_RESCORE_PROCESSES processes score
that many submissions at once while the re-scoring job's own process writes the scores.

The processes are forked from the job's process and only read stored files and compute:
they never touch the database (what they compute is written by the parent, chunk by chunk,
in the order the rows came, so a job stopped half-way has written whole chunks only, and
its next attempt writes them again: the writes are upserts). A process that dies breaks the
pool: the parent raises, and the job is retried as after any other error.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, cast

import billiard
import billiard.exceptions
import numpy as np
from django.core.files import storage as storage_module
from django.db import connections
from django.utils.functional import empty

from leaderboard.submissions.stored_files import stored_compact
from workers.scoring.hits import NovelPairs
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import headline_hits, score_label_set

# Submissions one process scores per message: small enough that both processes get work
# when an incremental re-scoring has only a hundred affected submissions, large enough that
# the messages cost little beside the scoring (about 2 ms a submission on ImageNet).
POOL_CHUNK = 25
# Fewer rows than this are scored in the job's own process: forking costs more than it saves.
POOL_MIN_ROWS = 4 * POOL_CHUNK
# A chunk takes well under a second (25 ImageNet submissions at about 2 ms each): five minutes
# without its result is a child that will not answer.
CHUNK_RESULT_TIMEOUT_S = 300


@dataclass(frozen=True)
class ScoringInputs:
    """What every submission's scoring on the version shares (the children inherit it)."""

    compiled: CompiledLabelSet
    class_names: tuple[str, ...] | None
    example_name: Callable[[int], str]
    example_set: str  # its slug: it names the example set's arrays in a compact file


@dataclass(frozen=True)
class Scored:
    submission_id: int
    record: dict[str, Any]
    hits: np.ndarray
    novel: NovelPairs | None


def compact_predictions(name: str, example_set: str) -> Predictions:
    """A submission's stored compact top-k on the example set (workers/scoring/compact.py) as
    Predictions."""
    with stored_compact(name, example_set=example_set) as arrays:
        topk = arrays["topk"].astype(np.int32)
        scores = arrays["topk_scores"] if "topk_scores" in arrays else None
    return Predictions(topk=topk, topk_scores=scores, scores=None, scores_kind=None)


def score_stored(inputs: ScoringInputs, submission_id: int, name: str) -> Scored:
    preds = compact_predictions(name, inputs.example_set)
    record, novel = score_label_set(inputs.compiled, preds, class_names=inputs.class_names,
                                    example_name=inputs.example_name)
    return Scored(submission_id, record, headline_hits(inputs.compiled, preds), novel)


# Set in the parent just before its children are forked, so they inherit it unpickled (the
# example namer is a closure) along with the compiled arrays' lookup bitmaps.
_INPUTS: ScoringInputs | None = None


def _child_start() -> None:
    """In a forked child: forget the parent's database connections without closing them
    (closing would end the parent's session), and build its own storage clients (a remote
    store's connection pool is not to be shared across a fork)."""
    for connection in connections.all(initialized_only=True):
        connection.connection = None
    # Django keeps the built backends in these two places; both are rebuilt on first use.
    storage_module.storages._storages.clear()  # type: ignore[attr-defined]
    storage_module.default_storage._wrapped = empty  # type: ignore[attr-defined]


def _score_chunk(rows: Sequence[tuple[int, str]]) -> list[Scored]:
    assert _INPUTS is not None, "a rescoring pool child without its inputs"
    return [score_stored(_INPUTS, submission_id, name) for submission_id, name in rows]


def _chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


Row = Any  # anything with .submission_id and .compact (a SubmissionFile)


def scored_chunks(*, inputs: ScoringInputs, rows: Iterable[Row], processes: int
                  ) -> Iterator[tuple[list[Row], list[Scored]]]:
    """(rows, their Scored) for every row, chunk by chunk in the rows' order; scored in
    `processes` forked processes when there are at least POOL_MIN_ROWS rows, otherwise here."""
    iterator = iter(rows)
    head = list(islice(iterator, POOL_MIN_ROWS))
    if processes <= 1 or len(head) < POOL_MIN_ROWS or "fork" not in \
            billiard.get_all_start_methods():
        for chunk in _chunks(chain(head, iterator), POOL_CHUNK):
            yield chunk, [score_stored(inputs, row.submission_id, str(row.compact))
                          for row in chunk]
        return
    global _INPUTS
    _INPUTS = inputs
    try:
        with _process_pool(processes) as workers:
            pending: deque[tuple[list[Row], Any]] = deque()
            # Fed from this thread: the rows may come from a database cursor of this thread.
            for chunk in _chunks(chain(head, iterator), POOL_CHUNK):
                pending.append((chunk, workers.apply_async(
                    _score_chunk, ([(row.submission_id, str(row.compact)) for row in chunk],))))
                # a few chunks ahead per process: busy children, bounded memory
                while len(pending) > 3 * processes:
                    done, result = pending.popleft()
                    yield done, _chunk_result(result)
            while pending:
                done, result = pending.popleft()
                yield done, _chunk_result(result)
    finally:
        _INPUTS = None


def _chunk_result(result: Any) -> list[Scored]:
    """A chunk's Scored, once a child has them. A child that hangs (a lock it inherited held
    by a thread of the parent's at the fork, say) would leave the job waiting until its hard
    time limit: after CHUNK_RESULT_TIMEOUT_S the job fails its attempt with a TimeoutError,
    which the runner retries with a fresh pool (leaderboard/tasks/cpu.py, TRANSIENT)."""
    try:
        return cast(list[Scored], result.get(timeout=CHUNK_RESULT_TIMEOUT_S))
    except billiard.exceptions.TimeoutError:
        raise TimeoutError(f"a re-scoring process gave no result for a chunk of "
                           f"{POOL_CHUNK} submissions in {CHUNK_RESULT_TIMEOUT_S} s") from None


def _process_pool(processes: int) -> Any:
    """Billiard's pool (Celery's own fork of multiprocessing): a Celery pool process is
    daemonic, and the standard library refuses to start children there; billiard does not.
    A child that dies fails its chunk (WorkerLostError) instead of leaving it waiting."""
    return billiard.get_context("fork").Pool(processes, initializer=_child_start)
