"""Webhooks delivered by a real Celery worker to a receiver on loopback (allowed by the
operator setting EVALSERVER_WEBHOOK_ALLOW_PRIVATE): signed, and tried again with growing
waits after 5xx answers; and URLs that reach private addresses refused without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from leaderboard.common.errors import ServiceError
from leaderboard.notifications.addresses import webhook_url_check
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.posting import webhook_post
from leaderboard.notifications.services import webhook_endpoint_create, webhook_test_event_send
from tests import factories
from tests.notifications.receiver import receiver_running, signature_valid
from tests.notifications.resolving import name_resolving


def _wait_finished(delivery_id: int, *, log: Path, timeout: float = 120) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = NotificationDelivery.objects.values_list("status", flat=True).get(
            id=delivery_id)
        if status in ("delivered", "failed"):
            return str(status)
        time.sleep(0.1)
    pytest.fail(f"delivery {delivery_id} still {status}\n{log.read_text()}")


@pytest.fixture
def private_allowed(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Loopback receivers allowed, in this process and the worker's; waits of 1.5 s, 3 s."""
    monkeypatch.setenv("EVALSERVER_WEBHOOK_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("EVALSERVER_NOTIFY_BACKOFF_MS", "1500")
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True


@pytest.mark.django_db(transaction=True)
def test_it_delivers_a_signed_webhook_through_a_real_worker(
    private_allowed: None, scoring_worker: Path
) -> None:
    user = factories.user_create("hooked")
    with receiver_running() as receiver:
        _, secret = webhook_endpoint_create(user=user, url=receiver.url)
        [delivery_id] = webhook_test_event_send(user=user)
        assert _wait_finished(delivery_id, log=scoring_worker) == "delivered"
        [received] = receiver.wait_for(1)
    assert signature_valid(secret, received)
    assert not signature_valid("whsec_wrong", received)
    body = json.loads(received.body)
    assert (body["event"], body["data"]) == ("test", {})
    assert received.headers["X-Evalserver-Event"] == "test"
    assert received.headers["X-Evalserver-Delivery"] == str(delivery_id)
    tries = list(NotificationDelivery.objects.get(id=delivery_id).tries.values_list(
        "status_code", "ok"))
    assert tries == [(200, True)]


@pytest.mark.django_db(transaction=True)
def test_it_tries_again_with_growing_waits_after_server_errors(
    private_allowed: None, scoring_worker: Path
) -> None:
    user = factories.user_create("retried")
    with receiver_running(answers=[500, 500]) as receiver:
        _, secret = webhook_endpoint_create(user=user, url=receiver.url)
        [delivery_id] = webhook_test_event_send(user=user)
        assert _wait_finished(delivery_id, log=scoring_worker) == "delivered"
        received = receiver.wait_for(3)
    assert len(received) == 3
    assert all(signature_valid(secret, each) for each in received)
    # the same delivery each time, waits of 1.5 s then 3 s (EVALSERVER_NOTIFY_BACKOFF_MS doubled)
    assert {each.headers["X-Evalserver-Delivery"] for each in received} == {str(delivery_id)}
    first_gap = received[1].at - received[0].at
    second_gap = received[2].at - received[1].at
    assert second_gap > first_gap
    delivery = NotificationDelivery.objects.get(id=delivery_id)
    assert list(delivery.tries.values_list("status_code", "ok")) == [
        (500, False), (500, False), (200, True)]
    assert delivery.attempts == 3


@pytest.mark.django_db(transaction=True)
def test_it_fails_a_delivery_the_receiver_refuses_without_trying_again(
    private_allowed: None, scoring_worker: Path
) -> None:
    user = factories.user_create("refused")
    with receiver_running(answers=[410]) as receiver:
        webhook_endpoint_create(user=user, url=receiver.url)
        [delivery_id] = webhook_test_event_send(user=user)
        assert _wait_finished(delivery_id, log=scoring_worker) == "failed"
        assert len(receiver.received) == 1
    delivery = NotificationDelivery.objects.get(id=delivery_id)
    assert (delivery.failure_code, delivery.failure_reason) == (
        "delivery_failed", "the receiver answered 410")


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/hook", "http://10.1.2.3/hook", "http://169.254.169.254/latest",
    "http://[::1]/hook", "http://localhost:8000/hook", "http://192.168.0.1/",
    "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "ftp://example.com/hook", "http:///x",
])
def test_it_refuses_urls_that_reach_private_addresses(settings: Settings, url: str) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ServiceError) as raised:
        webhook_url_check(url)
    assert raised.value.code == "webhook_url_refused"


def test_it_refuses_a_name_that_resolves_to_loopback(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = False
    name_resolving(monkeypatch, "hooks.example.com", "127.0.0.1")
    with pytest.raises(ServiceError, match="resolves to an address that is not public"):
        webhook_url_check("https://hooks.example.com/x")
    name_resolving(monkeypatch, "hooks.example.com", "93.184.215.14")
    webhook_url_check("https://hooks.example.com/x")  # a public address passes
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True
    webhook_url_check("http://127.0.0.1:9/")  # the operator allows them


def test_it_posts_to_the_addresses_the_check_approved_not_a_new_lookup() -> None:
    # `hooks.invalid` resolves nowhere (RFC 6761): the POST reaches the receiver only through
    # the address it is given, so a name that resolves elsewhere after the check cannot move it
    with receiver_running() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        code = webhook_post(f"http://hooks.invalid:{port}/hook", b"{}", {"X-Test": "1"},
                            addresses=["127.0.0.1"], timeout=10)
        [received] = receiver.wait_for(1)
    assert code == 200
    assert received.headers["Host"] == f"hooks.invalid:{port}"


def test_it_does_not_follow_a_redirect(settings: Settings) -> None:
    with receiver_running(answers=[302]) as receiver:
        code = webhook_post(receiver.url, b"{}", {}, addresses=["127.0.0.1"], timeout=10)
        assert code == 302 and len(receiver.wait_for(1)) == 1
