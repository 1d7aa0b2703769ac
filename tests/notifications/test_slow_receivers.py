"""A webhook receiver that trickles its answer (a byte every half second, for ever) gets one
deadline for the whole POST (EVALSERVER_WEBHOOK_TIMEOUT), and the try that ran out of it is
logged and tried again like any other without an answer (docs/api.md, 'Retries'), rather than
holding a worker until the task's time limit kills it unlogged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.posting import webhook_post
from leaderboard.notifications.services import webhook_endpoint_create, webhook_test_event_send
from tests import factories
from tests.notifications.receiver import Receiver, receiver_running
from tests.settings_fixtures import RunSettings


def _trickled(receiver: Receiver, count: int, *, timeout: float = 60) -> list[str]:
    """How the receiver's first `count` trickled answers ended, once they have."""
    deadline = time.monotonic() + timeout
    while len(receiver.trickled) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return list(receiver.trickled)


def test_it_gives_a_trickling_receiver_one_deadline_for_the_whole_post() -> None:
    with receiver_running(trickles=1) as receiver:
        with pytest.raises(TimeoutError, match=r"^no complete answer within 2 s$"):
            webhook_post(receiver.url, b"{}", {}, addresses=["127.0.0.1"], timeout=2)
        # the POST hung up on it: the receiver's next byte found the connection closed
        assert _trickled(receiver, 1) == ["hung up"]
        assert len(receiver.received) == 1


def test_it_gives_the_deadline_without_pinned_addresses_too() -> None:
    # private addresses allowed: no addresses approved, the URL's host is connected to
    with receiver_running(trickles=1) as receiver:
        with pytest.raises(TimeoutError, match=r"^no complete answer within 1\.5 s$"):
            webhook_post(receiver.url, b"{}", {}, addresses=[], timeout=1.5)
        assert _trickled(receiver, 1) == ["hung up"]


@pytest.fixture
def short_deadlines(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Loopback receivers allowed; a POST has 2 s, a try 10 s (soft limit 9 s), the next
    try comes 1 s later: for this process and the worker's."""
    for name, value in {"EVALSERVER_WEBHOOK_ALLOW_PRIVATE": "true",
                        "EVALSERVER_WEBHOOK_TIMEOUT": "2",
                        "EVALSERVER_NOTIFY_TIME_LIMIT": "10",
                        "EVALSERVER_NOTIFY_BACKOFF_MS": "1000"}.items():
        monkeypatch.setenv(name, value)
    settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE = True


@pytest.mark.django_db(transaction=True)
def test_it_logs_and_retries_a_try_that_ran_out_of_time(
    short_deadlines: None, scoring_worker: Path
) -> None:
    user = factories.user_create("slow-receiver")
    with receiver_running(trickles=1) as receiver:
        webhook_endpoint_create(user=user, url=receiver.url)
        [delivery_id] = webhook_test_event_send(user=user)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = NotificationDelivery.objects.values_list("status", flat=True).get(
                id=delivery_id)
            if status in ("delivered", "failed"):
                break
            time.sleep(0.1)
        assert len(receiver.wait_for(2)) == 2, scoring_worker.read_text()
        assert _trickled(receiver, 1) == ["hung up"]
    delivery = NotificationDelivery.objects.get(id=delivery_id)
    assert (delivery.status, delivery.attempts) == ("delivered", 2), (
        delivery.failure_code, delivery.failure_reason, scoring_worker.read_text()[-3000:])
    assert list(delivery.tries.order_by("id").values_list("status_code", "ok", "error")) == [
        (None, False, "no answer: no complete answer within 2 s"), (200, True, "")]


def test_it_refuses_a_webhook_timeout_not_well_under_a_tries_time_limit(
        run_settings: RunSettings) -> None:
    refused = run_settings(SECRET_KEY="x" * 50, EVALSERVER_WEBHOOK_TIMEOUT="56")
    assert refused.failed
    assert ("EVALSERVER_WEBHOOK_TIMEOUT (56 s) must be at least 5 s under "
            "EVALSERVER_NOTIFY_TIME_LIMIT (60 s), the time limit of one try") in refused.output
    allowed = run_settings(SECRET_KEY="x" * 50, EVALSERVER_WEBHOOK_TIMEOUT="20",
                           EVALSERVER_NOTIFY_TIME_LIMIT="25")
    assert not allowed.failed, allowed.output
