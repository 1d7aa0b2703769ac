"""Only the members of a host team review, and only their team's benchmarks
(docs/hosts/teams.md); the history is public."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSet
from leaderboard.review.models import ReviewItem
from tests import factories
from tests.api_support import api_client
from tests.review.conftest import reviewers

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(bare_label_set: LabelSet) -> ReviewItem:
    return ReviewItem.objects.create(label_set=bare_label_set, example_index=3, class_id=4,
                                     submission_count=1)


def _urls(item: ReviewItem) -> list[tuple[str, str]]:
    return [("get", "/api/review/toy/queue/"), ("get", f"/api/review/items/{item.pk}/"),
            ("post", f"/api/review/items/{item.pk}/votes/")]


def test_it_answers_401_with_the_error_shape_to_anonymous_api_callers(item: ReviewItem) -> None:
    for method, url in _urls(item):
        response = getattr(api_client(), method)(url, {"verdict": "correct"}, format="json")
        assert response.status_code == 401, url
        assert response.json()["error"]["code"] == "not_authenticated"


def test_it_answers_403_with_the_error_shape_to_a_normal_api_user(item: ReviewItem) -> None:
    client = api_client(factories.user_create("normal"))
    for method, url in _urls(item):
        response = getattr(client, method)(url, {"verdict": "correct"}, format="json")
        assert response.status_code == 403, url
        assert response.json() == {"error": {
            "code": "permission_denied",
            "message": "only the members of a host team may review (docs/hosts/teams.md)"}}
    assert item.votes.count() == 0


@pytest.mark.parametrize("who", ["staff", "group"])
def test_it_lets_staff_and_the_reviewers_group_use_the_api(item: ReviewItem, who: str) -> None:
    user = factories.host_create("boss") if who == "staff" else reviewers(1)[0]
    response = api_client(user).get("/api/review/toy/queue/")
    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [item.pk]


def test_it_redirects_anonymous_visitors_of_the_review_pages_to_the_login(
    item: ReviewItem,
) -> None:
    for url in ("/review/", "/review/toy/next/"):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"] == f"/login/?next={url}"


def test_it_shows_a_403_page_to_a_normal_user(item: ReviewItem) -> None:
    client = Client()
    client.force_login(factories.user_create("normal"))
    for url in ("/review/", "/review/toy/next/"):
        response = client.get(url)
        assert response.status_code == 403
        assert (b'<p>Only the members of a host team can work its review queues.</p>'
                in response.content)
    response = client.post("/review/toy/next/", {"item": item.pk, "verdict": "correct"})
    assert response.status_code == 403
    assert item.votes.count() == 0


@pytest.mark.parametrize("who", ["staff", "group"])
def test_it_lists_open_item_counts_to_maintainers(item: ReviewItem, who: str) -> None:
    client = Client()
    client.force_login(factories.host_create("boss") if who == "staff"
                       else reviewers(1)[0])
    response = client.get("/review/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<tr data-benchmark="toy">' in html
    assert '<td class="num open-count">1</td>' in html


@pytest.mark.django_db
def test_it_shows_the_review_link_only_to_maintainers(loaded: Settings, client: Client) -> None:
    reviewer = factories.reviewer_create("rita")
    for user, shown in ((None, False), (factories.user_create("nora"), False), (reviewer, True),
                        (factories.host_create("sam"), True)):
        client.logout()
        if user is not None:
            client.force_login(user)
        page = client.get("/").content.decode()
        assert ('href="/review/"' in page) is shown
