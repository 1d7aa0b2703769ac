"""The queue: open items, most-predicted first, without the ones the caller voted on."""

from __future__ import annotations

import pytest

from leaderboard.catalog.models import LabelSet
from leaderboard.review import selectors as selectors_review
from leaderboard.review.models import ReviewItem, ReviewVote
from tests.api_support import api_client
from tests.review.conftest import reviewers

pytestmark = pytest.mark.django_db


def test_it_orders_the_queue_by_submission_count_and_hides_what_the_caller_voted_on(
    bare_label_set: LabelSet,
) -> None:
    make = ReviewItem.objects.create
    low = make(label_set=bare_label_set, example_index=1, class_id=1, submission_count=1)
    high = make(label_set=bare_label_set, example_index=2, class_id=2, submission_count=7)
    mid_old = make(label_set=bare_label_set, example_index=3, class_id=3, submission_count=4)
    mid_new = make(label_set=bare_label_set, example_index=4, class_id=4, submission_count=4)
    make(label_set=bare_label_set, example_index=5, class_id=5, submission_count=9,
         status=ReviewItem.Status.DECIDED, verdict="correct")
    me, other = reviewers(2)
    ReviewVote.objects.create(item=mid_old, reviewer=me, verdict="wrong")
    ReviewVote.objects.create(item=low, reviewer=other, verdict="correct")

    body = api_client(me).get("/api/review/toy/queue/").json()
    assert body["count"] == 3
    assert [(r["id"], r["submission_count"], r["votes"]) for r in body["results"]] == [
        (high.pk, 7, 0), (mid_new.pk, 4, 0), (low.pk, 1, 1)]
    assert body["results"][0]["url"] == f"http://testserver/api/review/items/{high.pk}/"
    # another reviewer still sees the item `me` voted on, in its place
    theirs = selectors_review.review_queue(benchmark=bare_label_set.benchmark, reviewer=other)
    assert [i.pk for i in theirs] == [high.pk, mid_old.pk, mid_new.pk]


def test_it_answers_404_for_an_unknown_benchmark_or_label_set(bare_label_set: LabelSet) -> None:
    client = api_client(reviewers(1)[0])
    assert client.get("/api/review/nope/queue/").json()["error"]["code"] == "not_found"
    response = client.get("/api/review/toy/queue/", {"label_set": "nope"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
