"""The review queue's bulk write, in SQL: the novel pairs of one scored submission become
review items and their links to it (leaderboard/review/services.py, `review_items_record`).

The pairs travel as ONE parameter (PostgreSQL: three arrays through `unnest`; SQLite: a JSON
array through `json_each`), so that 50,000 pairs are three statements, not 50,000 model
objects and a batch of queries per thousand. Each statement is idempotent: an item or a link
that exists is left as it is (ON CONFLICT DO NOTHING on the unique constraints of
leaderboard/review/models.py), and the counts are recomputed from the links.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from leaderboard.review.models import ReviewItem, ReviewItemSubmission

_ITEMS = ReviewItem._meta.db_table
_LINKS = ReviewItemSubmission._meta.db_table


def _pairs(examples: list[int], classes: list[int],
           scores: list[float | None]) -> tuple[str, list[Any]]:
    """A `WITH pairs(e, c, s) AS (...), pair_items(id, s) AS (...)` clause and its
    parameters up to the label set's id, which comes next. `pair_items` is each pair's
    item (once it exists) with the pair's score: PostgreSQL joins (a lookup per pair would be
    a scan per pair while the new rows have no statistics); SQLite looks each pair up in the
    unique index (a join lets its planner loop over the items for each pair)."""
    if connection.vendor == "postgresql":
        return ("WITH pairs AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[], "
                "%s::float8[]) AS t(e, c, s)), "
                f"pair_items AS (SELECT item.id AS id, pairs.s AS s FROM pairs JOIN {_ITEMS} "
                "item ON item.label_set_id = %s AND item.example_index = pairs.e "
                "AND item.class_id = pairs.c)", [examples, classes, scores])
    if connection.vendor == "sqlite":
        return ("WITH pairs AS (SELECT json_extract(value, '$[0]') AS e, "
                "json_extract(value, '$[1]') AS c, json_extract(value, '$[2]') AS s "
                "FROM json_each(%s)), "
                f"pair_items AS (SELECT (SELECT item.id FROM {_ITEMS} item WHERE "
                "item.label_set_id = %s AND item.example_index = pairs.e "
                "AND item.class_id = pairs.c) AS id, pairs.s AS s FROM pairs)",
                [json.dumps([list(t) for t in zip(examples, classes, scores, strict=True)])])
    raise NotImplementedError(f"no bulk review-item write for {connection.vendor}")


def items_record(*, label_set_id: int, submission_id: int, now: datetime,
                 examples: list[int], classes: list[int], scores: list[float | None]) -> int:
    """Items for the (example, class) pairs, linked to the submission with its score for
    each; returns how many items the pairs are."""
    pairs, params = _pairs(examples, classes, scores)
    # `WHERE true`: SQLite's parser needs it between an INSERT's SELECT and ON CONFLICT
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"{pairs} INSERT INTO {_ITEMS} (label_set_id, example_index, class_id, first_seen, "
            "submission_count, status, verdict, problematic) "
            f"SELECT %s, e, c, %s, 0, %s, '', false FROM pairs WHERE true "
            "ON CONFLICT (label_set_id, example_index, class_id) DO NOTHING",
            [*params, label_set_id, label_set_id,
             connection.ops.adapt_datetimefield_value(now), ReviewItem.Status.OPEN.value])
        cursor.execute(
            f"{pairs} INSERT INTO {_LINKS} (item_id, submission_id, score) "
            "SELECT id, %s, s FROM pair_items WHERE true "
            "ON CONFLICT (item_id, submission_id) DO NOTHING",
            [*params, label_set_id, submission_id])
        # every item of the pairs has at least this submission's link now; its counts in one
        # grouped pass over the links (a subquery per item may be planned as a scan each)
        cursor.execute(
            f"{pairs}, counts AS (SELECT link.item_id AS id, COUNT(*) AS n, "
            f"MAX(link.score) AS m FROM {_LINKS} link "
            "WHERE link.item_id IN (SELECT id FROM pair_items) GROUP BY link.item_id) "
            f"UPDATE {_ITEMS} SET submission_count = counts.n, max_score = counts.m "
            f"FROM counts WHERE {_ITEMS}.id = counts.id",
            [*params, label_set_id])
    # each pair has its item now (SQLite gives no row count for a statement that opens
    # with WITH)
    return len(set(zip(examples, classes, strict=True)))
