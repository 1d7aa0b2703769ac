"""What one user may ask of the notification workers: at most EVALSERVER_WEBHOOK_MAX_ENDPOINTS
endpoints (each event is POSTed to all of them) and EVALSERVER_WEBHOOK_TESTS_PER_HOUR test
events (each fans out to every endpoint), refused in the API's error shape and on the page;
and the notifications' tasks go to a queue of their own, so no scoring waits behind them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from evalserver.celery import app
from leaderboard.notifications.models import NotificationDelivery, WebhookEndpoint
from tests import factories

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """Django's clock (timezone.now: the rows' `created` and the services' window), set by
    the test: clock[0] is now."""
    now = [T0]
    monkeypatch.setattr(timezone, "now", lambda: now[0])
    return now


@pytest.fixture
def api(settings: Settings) -> APIClient:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    client = APIClient()
    client.force_authenticate(factories.user_create("many-hooks"))
    return client


def _add(api: APIClient, number: int) -> tuple[int, dict[str, str]]:
    answer = api.post("/api/notifications/webhooks/",
                      {"url": f"http://127.0.0.1:9/hook-{number}"}, format="json")
    return answer.status_code, answer.json().get("error", {})


def test_it_refuses_a_webhook_endpoint_past_the_users_limit(
    api: APIClient, settings: Settings
) -> None:
    settings.EVALSERVER_WEBHOOK_MAX_ENDPOINTS = 3
    assert [_add(api, n)[0] for n in range(3)] == [201, 201, 201]
    assert _add(api, 3) == (409, {
        "code": "webhook_endpoint_limit", "field": "url",
        "message": "you have 3 webhook endpoints, the most one user may have "
                   "(EVALSERVER_WEBHOOK_MAX_ENDPOINTS): remove one first"})
    assert WebhookEndpoint.objects.count() == 3
    other = APIClient()
    other.force_authenticate(factories.user_create("other-hooks"))
    assert _add(other, 0)[0] == 201  # the limit is per user
    first = WebhookEndpoint.objects.filter(url__endswith="hook-0").order_by("id").first()
    assert first is not None
    assert api.delete(f"/api/notifications/webhooks/{first.pk}/").status_code == 204
    assert _add(api, 4)[0] == 201


def test_it_says_on_the_page_that_the_endpoint_limit_is_reached(settings: Settings) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    settings.EVALSERVER_WEBHOOK_MAX_ENDPOINTS = 1
    client = Client()
    client.force_login(factories.user_create("page-hooks"))
    client.post("/profile/webhooks/add/", {"url": "http://127.0.0.1:9/a"})
    page = client.post("/profile/webhooks/add/", {"url": "http://127.0.0.1:9/b"},
                       follow=True).content.decode()
    assert ("you have 1 webhook endpoints, the most one user may have "
            "(EVALSERVER_WEBHOOK_MAX_ENDPOINTS): remove one first") in page
    assert WebhookEndpoint.objects.count() == 1


def test_it_throttles_test_events_per_user_per_hour(
    api: APIClient, settings: Settings, clock: list[datetime], sent: list[tuple[str, int]]
) -> None:
    settings.EVALSERVER_WEBHOOK_TESTS_PER_HOUR = 2
    _add(api, 0)
    _add(api, 1)
    first = api.post("/api/notifications/webhooks/test/")
    clock[0] = T0 + timedelta(minutes=10)
    second = api.post("/api/notifications/webhooks/test/")
    assert (first.status_code, second.status_code) == (202, 202)
    assert NotificationDelivery.objects.count() == 4  # two endpoints each
    clock[0] = T0 + timedelta(minutes=20)
    third = api.post("/api/notifications/webhooks/test/")
    # the first test leaves the hour at 13:00, 40 minutes from now
    assert third.status_code == 429 and third["Retry-After"] == "2400"
    assert third.json() == {"error": {
        "code": "throttled", "retry_after": 2400,
        "message": "you sent 2 test events in the last hour, the most allowed "
                   "(EVALSERVER_WEBHOOK_TESTS_PER_HOUR); the next may be sent in 2400 s"}}
    assert NotificationDelivery.objects.count() == 4  # nothing made for the refused one
    clock[0] = T0 + timedelta(minutes=60, seconds=1)
    assert api.post("/api/notifications/webhooks/test/").status_code == 202
    clock[0] = T0 + timedelta(minutes=60, seconds=2)
    assert api.post("/api/notifications/webhooks/test/").status_code == 429


def test_it_routes_notifications_to_their_own_queue() -> None:
    router = app.amqp.router
    assert router.route({}, "leaderboard.tasks.cpu.deliver_webhook")["queue"].name == "notify"
    email = "leaderboard.tasks.cpu.send_notification_email"
    assert router.route({}, email)["queue"].name == "notify"
    assert router.route({}, "leaderboard.tasks.cpu.score_submission")["queue"].name == "cpu"
    assert router.route({}, "leaderboard.tasks.gpu.run_checkpoint")["queue"].name == "gpu"
