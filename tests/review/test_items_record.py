"""review_items_record: the novel pairs of a scored submission become review items linked to
it, in four statements whatever their number (leaderboard/review/item_sql.py)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.db.models import Count

from leaderboard.catalog.models import LabelSet
from leaderboard.review.models import ReviewItem, ReviewItemSubmission
from leaderboard.review.services import review_items_record
from leaderboard.submissions.models import Submission
from tests import factories
from workers.scoring.hits import NovelPairs

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def _submission(label_set: LabelSet, name: str) -> Submission:
    return Submission.objects.create(owner=factories.user_create(name),
                                     benchmark=label_set.benchmark, model_name=name)


def _pairs(pairs: list[tuple[int, int]], scores: list[float] | None = None) -> NovelPairs:
    return NovelPairs(examples=np.array([e for e, _ in pairs], dtype=np.int64),
                      classes=np.array([c for _, c in pairs], dtype=np.int64),
                      scores=None if scores is None else np.array(scores, dtype=np.float32))


def _items(label_set: LabelSet) -> dict[tuple[int, int], tuple[int, float | None]]:
    return {(e, c): (n, m) for e, c, n, m in ReviewItem.objects.filter(
        label_set=label_set).values_list("example_index", "class_id", "submission_count",
                                          "max_score")}


def test_it_makes_one_item_per_pair_counts_its_submissions_and_keeps_the_highest_score(
    bare_label_set: LabelSet,
) -> None:
    first, second, third = (_submission(bare_label_set, n) for n in ("a", "b", "c"))
    assert review_items_record(submission=first, label_set=bare_label_set,
                               novel=_pairs([(1, 2), (3, 4)], [0.5, 0.25])) == 2
    assert review_items_record(submission=second, label_set=bare_label_set,
                               novel=_pairs([(3, 4), (5, 6), (7, 8)], [0.75, 0.125, 1.0])) == 3
    # no scores given: the links carry none, the items keep the highest of the others
    assert review_items_record(submission=third, label_set=bare_label_set,
                               novel=_pairs([(3, 4), (9, 0)])) == 2
    assert _items(bare_label_set) == {(1, 2): (1, 0.5), (3, 4): (3, 0.75), (5, 6): (1, 0.125),
                                      (7, 8): (1, 1.0), (9, 0): (1, None)}
    assert sorted(ReviewItemSubmission.objects.filter(item__example_index=3).values_list(
        "submission__model_name", "score")) == [("a", 0.25), ("b", 0.75), ("c", None)]
    assert set(ReviewItem.objects.values_list("status", "verdict", "problematic")) == {
        ("open", "", False)}


def test_it_records_the_same_submission_twice_as_once(bare_label_set: LabelSet) -> None:
    only = _submission(bare_label_set, "a")
    novel = _pairs([(1, 2), (3, 4)], [0.5, 0.25])
    assert review_items_record(submission=only, label_set=bare_label_set, novel=novel) == 2
    first_seen = dict(ReviewItem.objects.values_list("example_index", "first_seen"))
    assert review_items_record(submission=only, label_set=bare_label_set, novel=novel) == 2
    assert _items(bare_label_set) == {(1, 2): (1, 0.5), (3, 4): (1, 0.25)}
    assert ReviewItemSubmission.objects.count() == 2
    assert dict(ReviewItem.objects.values_list("example_index", "first_seen")) == first_seen


def test_it_counts_a_pair_given_twice_once_with_its_first_score(bare_label_set: LabelSet) -> None:
    only = _submission(bare_label_set, "a")
    assert review_items_record(submission=only, label_set=bare_label_set,
                               novel=_pairs([(1, 2), (3, 4), (1, 2)], [0.5, 0.25, 0.75])) == 2
    assert _items(bare_label_set) == {(1, 2): (1, 0.5), (3, 4): (1, 0.25)}
    assert ReviewItemSubmission.objects.count() == 2


def test_it_leaves_a_decided_item_decided_and_links_the_new_submission(
    bare_label_set: LabelSet,
) -> None:
    decided = ReviewItem.objects.create(label_set=bare_label_set, example_index=1, class_id=2,
                                        status=ReviewItem.Status.DECIDED, verdict="wrong")
    assert review_items_record(submission=_submission(bare_label_set, "a"),
                               label_set=bare_label_set, novel=_pairs([(1, 2)], [0.5])) == 1
    decided.refresh_from_db()
    assert (decided.status, decided.verdict, decided.submission_count, decided.max_score) == (
        "decided", "wrong", 1, 0.5)


@pytest.mark.django_db(transaction=True)
def test_it_records_twenty_thousand_pairs_while_the_tables_read_as_empty_to_the_planner(
) -> None:
    """The statistics of a freshly vacuumed table say it is empty while a scoring's rows are
    in it: no statement may rest on a plan drawn from them (item_sql.py: a join ran for more
    than ten minutes on 20,000 pairs in CI; this test ran into pytest's timeout with it)."""
    label_set = factories.toy_label_set()
    review_items_record(submission=_submission(label_set, "gone"), label_set=label_set,
                        novel=_pairs([(e, 0) for e in range(30_000)]))
    ReviewItemSubmission.objects.all().delete()
    ReviewItem.objects.all().delete()
    # PostgreSQL: the rows gone, their pages kept (as when autovacuum cannot truncate), the
    # statistics say 0 rows in them; SQLite: analysed empty
    with connection.cursor() as cursor:
        for table in (ReviewItem._meta.db_table, ReviewItemSubmission._meta.db_table):
            cursor.execute(f"VACUUM (TRUNCATE false, ANALYZE) {table}"
                           if connection.vendor == "postgresql" else f"ANALYZE {table}")
    first, second = (_submission(label_set, name) for name in ("a", "b"))
    pairs = [(e, e % 7) for e in range(20_000)]
    assert review_items_record(submission=first, label_set=label_set,
                               novel=_pairs(pairs, [0.5] * len(pairs))) == 20_000
    shifted = [(e, e % 7) for e in range(10_000, 30_000)]
    assert review_items_record(submission=second, label_set=label_set,
                               novel=_pairs(shifted, [0.25] * len(shifted))) == 20_000
    # by (submission count, highest score): 0-9,999 the first's only, 10,000-19,999 both,
    # 20,000-29,999 the second's only; each item on its own pair
    kinds = ReviewItem.objects.filter(label_set=label_set).values_list(
        "submission_count", "max_score").annotate(n=Count("id"))
    assert {(count, score): n for count, score, n in kinds} == {
        (1, 0.5): 10_000, (2, 0.5): 10_000, (1, 0.25): 10_000}
    assert set(ReviewItem.objects.values_list("example_index", "class_id")) == {
        (e, e % 7) for e in range(30_000)}
    assert ReviewItemSubmission.objects.count() == 40_000
