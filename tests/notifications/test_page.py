"""The notifications section of the user's page: add a webhook (its secret shown once), send
a test event, see the delivery log with each try's HTTP status."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import host_team_member_set
from leaderboard.notifications.models import DeliveryAttempt, WebhookEndpoint
from leaderboard.notifications.selectors import EVENTS, notification_preferences_get
from tests import factories

pytestmark = pytest.mark.django_db


def test_it_adds_a_webhook_sends_a_test_event_and_shows_the_log(
    settings: Settings, sent: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    client = Client()
    client.force_login(factories.user_create("paged"))
    added = client.post("/profile/webhooks/add/", {"url": "http://127.0.0.1:9/h"}, follow=True)
    endpoint = WebhookEndpoint.objects.get()
    assert f"shown this once: {endpoint.secret}" in added.content.decode()
    again = client.get("/profile/").content.decode()
    assert endpoint.secret not in again and "http://127.0.0.1:9/h" in again
    with django_capture_on_commit_callbacks(execute=True):
        tested = client.post("/profile/webhooks/test/", follow=True).content.decode()
    assert "Test event queued to 1 endpoint(s)" in tested
    [(name, delivery_id)] = sent
    assert name == "leaderboard.tasks.cpu.deliver_webhook"
    DeliveryAttempt.objects.create(delivery_id=delivery_id, status_code=502)
    page = client.get("/profile/").content.decode()
    assert "<td>test</td>" in page and "<td>502</td>" in page


def test_it_says_why_a_webhook_url_is_refused(settings: Settings) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    client = Client()
    client.force_login(factories.user_create("refused-page"))
    page = client.post("/profile/webhooks/add/", {"url": "http://169.254.169.254/"},
                       follow=True).content.decode()
    assert ("resolves to an address that is not public (loopback, private, shared, "
            "link-local or special-purpose: 169.254.169.254)") in page
    assert not WebhookEndpoint.objects.exists()


def test_it_saves_the_opt_ins_ticked_on_the_page() -> None:
    user = factories.user_create("ticking")
    client = Client()
    client.force_login(user)
    page = client.get("/profile/").content.decode()
    # every event but the maintainers' review.queue_grew and the site admins'
    # host_request.created, on two channels
    assert re.findall(r'type="checkbox" name="([^"]+):email"', page) == [
        "submission.scored", "submission.failed", "scores.changed", "review.decided",
        "host_request.decided", "participation.requested", "participation.decided"]
    assert page.count('type="checkbox" name="') == 2 * (len(EVENTS) - 2)
    assert " checked" not in page

    saved = client.post("/profile/notifications/", {"submission.scored:email": "on",
                                                    "scores.changed:webhook": "on"},
                        follow=True).content.decode()

    assert "Notification choices saved." in saved
    chosen = notification_preferences_get(user=user)
    assert {event: channels for event, channels in chosen.items() if any(channels.values())
            } == {"submission.scored": {"email": True, "webhook": False},
                  "scores.changed": {"email": False, "webhook": True}}
    assert saved.count(" checked>") == 2
    # unticking opts out
    client.post("/profile/notifications/", {})
    assert not any(any(c.values()) for c in notification_preferences_get(user=user).values())


def test_it_refuses_the_opt_in_form_to_a_visitor() -> None:
    answer = Client().post("/profile/notifications/", {"submission.scored:email": "on"})
    assert answer.status_code == 302 and "/login" in answer["Location"]


def test_it_adds_a_webhook_for_one_benchmark_and_removes_it(settings: Settings) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    Benchmark.objects.create(slug="shown", name="Shown benchmark", main_example_set="shown-test",
                             num_classes=2)
    Benchmark.objects.create(slug="secret", name="Secret benchmark", main_example_set="s-test",
                             num_classes=2, hidden=True)
    client = Client()
    client.force_login(factories.user_create("one-benchmark"))
    form = client.get("/profile/").content.decode()
    assert '<option value="shown">Shown benchmark only</option>' in form
    assert "Secret benchmark" not in form  # a hidden benchmark is not offered

    hidden = client.post("/profile/webhooks/add/",
                         {"url": "http://127.0.0.1:9/s", "benchmark": "secret"}, follow=True)
    assert "no benchmark &#x27;secret&#x27;" in hidden.content.decode()
    assert not WebhookEndpoint.objects.exists()
    client.post("/profile/webhooks/add/", {"url": "http://127.0.0.1:9/one", "benchmark": "shown"})
    client.post("/profile/webhooks/add/", {"url": "http://127.0.0.1:9/all", "benchmark": ""})
    one, every = WebhookEndpoint.objects.order_by("pk")
    assert (one.url, one.benchmark.slug if one.benchmark else None) == (
        "http://127.0.0.1:9/one", "shown")
    assert (every.url, every.benchmark) == ("http://127.0.0.1:9/all", None)
    listed = client.get("/profile/").content.decode()
    assert "(shown only)" in listed and "(every benchmark)" in listed

    removed = client.post(f"/profile/webhooks/{one.pk}/remove/", follow=True).content.decode()
    assert "Webhook removed" in removed
    assert list(WebhookEndpoint.objects.values_list("url", flat=True)) == [
        "http://127.0.0.1:9/all"]
    # someone else's endpoint, or one already removed: nothing happens, the page says so
    other = Client()
    other.force_login(factories.user_create("someone-else"))
    refused = other.post(f"/profile/webhooks/{every.pk}/remove/", follow=True)
    assert "no such webhook endpoint" in refused.content.decode()
    assert WebhookEndpoint.objects.count() == 1
    assert client.get(f"/profile/webhooks/{every.pk}/remove/").status_code == 405


def test_it_offers_the_review_queue_event_to_maintainers_only() -> None:
    reviewer = factories.reviewer_create("queue-watcher")
    participant = factories.user_create("participant")
    offered = {}
    for user in (reviewer, participant):
        client = Client()
        client.force_login(user)
        page = client.get("/profile/").content.decode()
        offered[user.username] = re.findall(r'type="checkbox" name="([^"]+):email"', page)
        # a participant's form cannot opt into it either: the save reads the offered events
        client.post("/profile/notifications/", {"review.queue_grew:email": "on"})
    assert offered == {
        "queue-watcher": ["submission.scored", "submission.failed", "scores.changed",
                          "review.decided", "review.queue_grew", "host_request.decided",
                          "participation.requested", "participation.decided"],
        "participant": ["submission.scored", "submission.failed", "scores.changed",
                        "review.decided", "host_request.decided", "participation.requested",
                        "participation.decided"]}
    assert notification_preferences_get(user=reviewer)["review.queue_grew"]["email"] is True
    assert notification_preferences_get(user=participant)["review.queue_grew"]["email"] is False


def test_it_offers_the_host_request_event_to_site_admins_only() -> None:
    site_admin, participant = (factories.user_create("decider"),
                               factories.user_create("participant"))
    host_team_member_set(actor=None, team=host_team_site_get(), user=site_admin, role="admin")
    offered = {}
    for user in (site_admin, participant):
        client = Client()
        client.force_login(user)
        page = client.get("/profile/").content.decode()
        offered[user.username] = "host_request.created" in re.findall(
            r'type="checkbox" name="([^"]+):email"', page)
    assert offered == {"decider": True, "participant": False}
