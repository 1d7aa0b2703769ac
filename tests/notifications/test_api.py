"""The notifications API: preferences, webhook endpoints (the secret shown once, private
addresses refused in the error shape), the test event and the delivery log."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark
from leaderboard.notifications.models import DeliveryAttempt, NotificationDelivery, WebhookEndpoint
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def client() -> APIClient:
    api = APIClient()
    api.force_authenticate(factories.user_create("api-user"))
    return api


def test_it_opts_into_an_event_on_a_channel(client: APIClient) -> None:
    before = client.get("/api/notifications/preferences/").json()["events"]
    assert before["submission.scored"] == {"email": False, "webhook": False}
    answer = client.put("/api/notifications/preferences/", {
        "event": "submission.scored", "email": True, "webhook": False}, format="json")
    assert answer.status_code == 200
    assert answer.json()["events"]["submission.scored"] == {"email": True, "webhook": False}
    bad = client.put("/api/notifications/preferences/", {
        "event": "nope", "email": True, "webhook": False}, format="json")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "event")


def test_it_shows_a_webhook_secret_once_and_logs_its_test_event(
    client: APIClient, settings: Settings, sent: list[tuple[str, int]]
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    made = client.post("/api/notifications/webhooks/", {"url": "http://127.0.0.1:9/h"},
                       format="json")
    assert made.status_code == 201 and made.json()["secret"].startswith("whsec_")
    listed = client.get("/api/notifications/webhooks/").json()
    assert listed == [{"id": made.json()["id"], "url": "http://127.0.0.1:9/h",
                       "benchmark": None, "created": made.json()["created"]}]
    test = client.post("/api/notifications/webhooks/test/")
    assert test.status_code == 202
    [delivery_id] = test.json()["deliveries"]
    DeliveryAttempt.objects.create(delivery_id=delivery_id, status_code=503)
    [logged] = client.get("/api/notifications/deliveries/").json()
    assert (logged["id"], logged["event"], logged["status"]) == (delivery_id, "test", "queued")
    assert [(t["status_code"], t["ok"]) for t in logged["tries"]] == [(503, False)]
    gone = client.delete(f"/api/notifications/webhooks/{made.json()['id']}/")
    assert gone.status_code == 204
    assert not NotificationDelivery.objects.exists()  # its deliveries go with it
    again = client.delete(f"/api/notifications/webhooks/{made.json()['id']}/")
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


def test_it_refuses_a_webhook_to_a_private_address_in_the_error_shape(
    client: APIClient, settings: Settings
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    answer = client.post("/api/notifications/webhooks/", {"url": "http://10.0.0.7/h"},
                         format="json")
    assert answer.status_code == 400
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == (
        "webhook_url_refused", "url")
    none = client.post("/api/notifications/webhooks/test/")
    assert none.json()["error"]["code"] == "no_webhook_endpoint"


def test_it_refuses_a_webhook_for_a_hidden_or_unknown_benchmark(
    client: APIClient, settings: Settings
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    Benchmark.objects.create(slug="secret", name="Secret", main_example_set="s-test", num_classes=2,
                             hidden=True)
    for slug in ("secret", "nowhere"):
        answer = client.post("/api/notifications/webhooks/",
                             {"url": "http://127.0.0.1:9/h", "benchmark": slug}, format="json")
        assert answer.status_code == 400
        assert answer.json()["error"] == {"code": "unknown_benchmark",
                                          "message": f"no benchmark {slug!r}",
                                          "field": "benchmark"}
    assert not WebhookEndpoint.objects.exists()
