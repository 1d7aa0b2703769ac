"""The review queue's bulk write, in SQL: the novel pairs of one scored submission become
review items and their links to it (leaderboard/review/services.py, `review_items_record`).

Each list travels as ONE parameter (PostgreSQL: arrays through `unnest` and `= ANY`; SQLite: a
JSON array through `json_each`), so that 50,000 pairs are four statements, not 50,000 model
objects and a batch of queries per thousand:

1. the items that are new (ON CONFLICT DO NOTHING);
2. the ids of every pair's item, read from the label set's items on those examples;
3. the links from those ids (ON CONFLICT DO NOTHING: a link that exists is left as it is);
4. each of those items' counts recomputed from its links.

No statement joins two relations. A join's plan rests on the tables' statistics, and those are
wrong exactly here: a table that was last analysed empty (its rows since deleted, or not yet
committed: a test's, a scoring's own) is planned as holding one row whatever it holds, and a
nested loop over "one row" ran one UPDATE for more than ten minutes on 20,000 pairs in CI
(tests/review/test_items_record.py reproduces that state). An insert's conflict check, one
table filtered by a hashed list, and a lookup in the links' index on the item cost the same
whatever the planner believes. (An upsert that RETURNS every id would need DO UPDATE, which
locks and rewrites every existing item once more per scoring; reading the ids does not.)
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from leaderboard.review.models import ReviewItem, ReviewItemSubmission

_ITEMS = ReviewItem._meta.db_table
_LINKS = ReviewItemSubmission._meta.db_table


def _rows(columns: list[list[Any]], types: list[str]) -> tuple[str, list[Any]]:
    """A relation `t(c0, c1, ...)` over the lists, one row per position, and its parameters."""
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%s::{kind}[]" for kind in types)
        return f"unnest({arrays}) AS t({names})", list(columns)
    if connection.vendor == "sqlite":
        values = ", ".join(f"json_extract(value, '$[{i}]') AS c{i}" for i in range(len(columns)))
        return (f"(SELECT {values} FROM json_each(%s)) AS t",
                [json.dumps([list(row) for row in zip(*columns, strict=True)])])
    raise NotImplementedError(f"no bulk review-item write for {connection.vendor}")


def _in_list(values: list[int], kind: str) -> tuple[str, list[Any]]:
    """A condition `IN` the integers, and its parameter. PostgreSQL: `kind` is the column's
    own type, so that the list is matched through a hash (a cross-type comparison, integer
    against bigint, is a scan of the list for every row: 1.5 s for 20,000 against 6 ms)."""
    if connection.vendor == "postgresql":
        return f"= ANY(%s::{kind}[])", [values]
    return "IN (SELECT value FROM json_each(%s))", [json.dumps(values)]


def items_record(*, label_set_id: int, submission_id: int, now: datetime,
                 examples: list[int], classes: list[int], scores: list[float | None]) -> int:
    """Items for the (example, class) pairs, linked to the submission with its score for
    each; returns how many items the pairs are."""
    # one row per pair (a repeated pair's first score), in one order: two scorings that
    # write overlapping pairs at once lock the items in the same order
    first: dict[tuple[int, int], float | None] = {}
    for pair in zip(examples, classes, scores, strict=True):
        first.setdefault(pair[:2], pair[2])
    pairs = sorted(first)
    with transaction.atomic(), connection.cursor() as cursor:
        source, params = _rows([[e for e, _ in pairs], [c for _, c in pairs]],
                               ["bigint", "bigint"])
        # `WHERE true`: SQLite's parser needs it between an INSERT's SELECT and ON CONFLICT
        cursor.execute(
            f"INSERT INTO {_ITEMS} (label_set_id, example_index, class_id, first_seen, "
            "submission_count, status, verdict, problematic) "
            f"SELECT %s, c0, c1, %s, 0, %s, '', false FROM {source} WHERE true "
            "ON CONFLICT (label_set_id, example_index, class_id) DO NOTHING",
            [label_set_id, connection.ops.adapt_datetimefield_value(now),
             ReviewItem.Status.OPEN.value, *params])
        # one table, filtered by the examples: whatever the plan, one pass or one probe each
        condition, params = _in_list(sorted({e for e, _ in pairs}), "integer")
        cursor.execute(f"SELECT id, example_index, class_id FROM {_ITEMS} "
                       f"WHERE label_set_id = %s AND example_index {condition}",
                       [label_set_id, *params])
        item_of = {(e, c): item_id for item_id, e, c in cursor.fetchall() if (e, c) in first}
        ids = [item_of[pair] for pair in pairs]
        source, params = _rows([ids, [first[pair] for pair in pairs]], ["bigint", "float8"])
        cursor.execute(
            f"INSERT INTO {_LINKS} (item_id, submission_id, score) "
            f"SELECT c0, %s, c1 FROM {source} WHERE true "
            "ON CONFLICT (item_id, submission_id) DO NOTHING",
            [submission_id, *params])
        # every item of the pairs has at least this submission's link now; its counts by
        # lookups in the links' index on the item, one item at a time (a join of the items to
        # grouped links is planned from the same misleading statistics)
        condition, params = _in_list(ids, "bigint")
        cursor.execute(
            f"UPDATE {_ITEMS} SET submission_count = (SELECT COUNT(*) FROM {_LINKS} link "
            f"WHERE link.item_id = {_ITEMS}.id), max_score = (SELECT MAX(link.score) "
            f"FROM {_LINKS} link WHERE link.item_id = {_ITEMS}.id) WHERE id {condition}",
            params)
    return len(pairs)
