"""The notifications section of the user's page: add a webhook (its secret shown once), send
a test event, see the delivery log with each try's HTTP status."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.notifications.models import DeliveryAttempt, WebhookEndpoint
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
    assert name == "workers.tasks.deliver_webhook"
    DeliveryAttempt.objects.create(delivery_id=delivery_id, status_code=502)
    page = client.get("/profile/").content.decode()
    assert "<td>test</td>" in page and "<td>502</td>" in page


def test_it_says_why_a_webhook_url_is_refused(settings: Settings) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    client = Client()
    client.force_login(factories.user_create("refused-page"))
    page = client.post("/profile/webhooks/add/", {"url": "http://169.254.169.254/"},
                       follow=True).content.decode()
    assert "resolves to a loopback, private, link-local or reserved address" in page
    assert not WebhookEndpoint.objects.exists()
