"""The work of a notification's job (the registry of job kinds, leaderboard/tasks/registry.py, runs
it on
a claimed `NotificationDelivery`): one try, an email through Django's email backend or a POST
to a webhook, logged as a `DeliveryAttempt`.

A try that may succeed later (a 5xx or 429 answer, no answer, the email server away) puts the
job back in the queue to run EVALSERVER_NOTIFY_BACKOFF_MS later, doubled at every try
(docs/api.md, 'Retries'), until EVALSERVER_NOTIFY_MAX_ATTEMPTS tries; then, or at once for an
answer that will not change (a 4xx, a refused URL), the job fails (`DeliveryFailed`). The
sweep sees a waiting try as queued (its `queued_at` is when it is due) and its message as held
by the broker, so it is not sent twice."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from leaderboard import queue
from leaderboard.common.errors import ServiceError
from leaderboard.jobs.lifecycle import RUNNING, job_finish, job_held, job_rows
from leaderboard.notifications import signing
from leaderboard.notifications.addresses import webhook_url_check
from leaderboard.notifications.models import DeliveryAttempt, NotificationDelivery
from leaderboard.notifications.posting import webhook_post

Status = NotificationDelivery.Status


class DeliveryFailed(Exception):
    """A delivery that will not succeed: stored as the job's failure (code, reason)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


def payload_body(payload: dict[str, Any]) -> bytes:
    """The exact bytes POSTed and signed."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def webhook_deliver(*, delivery_id: int, task_id: str) -> bool:
    """One POST of a claimed webhook delivery, signed (docs/api.md, 'Verifying a webhook')."""
    delivery = NotificationDelivery.objects.select_related("endpoint").get(id=delivery_id)
    endpoint = delivery.endpoint
    if endpoint is None:
        raise DeliveryFailed("endpoint_removed", "the webhook endpoint was removed")
    try:
        # again: its host may resolve elsewhere now (and the POST goes to what is checked)
        addresses = webhook_url_check(endpoint.url)
    except ServiceError as exc:
        _attempt_log(delivery_id, status_code=None, error=exc.message)
        raise DeliveryFailed(exc.code, exc.message) from None
    body = payload_body(delivery.payload)
    timestamp = str(int(time.time()))
    headers = {
        signing.EVENT_HEADER: delivery.event, signing.DELIVERY_HEADER: str(delivery.pk),
        signing.TIMESTAMP_HEADER: timestamp,
        signing.SIGNATURE_HEADER: signing.webhook_signature(
            secret=endpoint.secret, timestamp=timestamp, body=body)}
    try:
        code: int | None = webhook_post(endpoint.url, body, headers, addresses=addresses,
                                        timeout=settings.EVALSERVER_WEBHOOK_TIMEOUT)
        error = ""
    except (OSError, ValueError) as exc:  # refused, timed out, no route, a bad answer
        code, error = None, f"no answer: {exc}"[:500]
    if code is not None and 200 <= code < 300:
        return _delivered(delivery, task_id, status_code=code)
    again = code is None or code >= 500 or code == 429
    return _try_failed(delivery, task_id, status_code=code,
                       error=error or f"the receiver answered {code}", again=again)


def email_send(*, delivery_id: int, task_id: str) -> bool:
    """The email of a claimed email delivery, through Django's email backend."""
    delivery = NotificationDelivery.objects.select_related("user").get(id=delivery_id)
    if not delivery.user.email:
        raise DeliveryFailed("no_email", "the user has no email address")
    subject, text = email_text(delivery.payload)
    try:
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [delivery.user.email])
    except OSError as exc:  # the server away (smtplib's errors are OSErrors)
        return _try_failed(delivery, task_id, status_code=None, error=str(exc)[:500], again=True)
    return _delivered(delivery, task_id, status_code=None)


def email_text(payload: dict[str, Any]) -> tuple[str, str]:
    """Subject and plain text of an event's email."""
    data = payload.get("data", {})
    lines = [payload.get("summary", "")]
    for score in data.get("scores", []):
        lines.append(f"  {score['label_set']} (version {score['version']}): "
                     f"accuracy {score['accuracy']}")
    for change in data.get("changes", []):
        lines.append(f"  {change['label_set']}: accuracy {change['before']['accuracy']} -> "
                     f"{change['after']['accuracy']}, rank {change['before']['rank']} -> "
                     f"{change['after']['rank']}")
    if data.get("failure_reason"):
        lines.append(f"  {data['failure_reason']}")
    return f"[evalserver] {payload.get('summary', payload.get('event', ''))}"[:200], \
        "\n".join(lines) + "\n"


def _attempt_log(delivery_id: int, *, status_code: int | None, error: str = "",
                 ok: bool = False) -> None:
    DeliveryAttempt.objects.create(delivery_id=delivery_id, status_code=status_code,
                                   error=error[:500], ok=ok)


def _delivered(delivery: NotificationDelivery, task_id: str, *, status_code: int | None) -> bool:
    with transaction.atomic():
        if not job_held(NotificationDelivery, job_id=delivery.pk, task_id=task_id):
            return False
        _attempt_log(delivery.pk, status_code=status_code, ok=True)
        return job_finish(NotificationDelivery, job_id=delivery.pk, task_id=task_id,
                          status=Status.DELIVERED)


def retry_countdown(attempts: int) -> float:
    """Seconds before the next try, after `attempts` tries: the backoff doubled each time."""
    return settings.EVALSERVER_NOTIFY_BACKOFF_MS / 1000 * 2 ** max(attempts - 1, 0)


def _try_failed(delivery: NotificationDelivery, task_id: str, *, status_code: int | None,
                error: str, again: bool) -> bool:
    """Log the try; queue the next one later, or fail the job (raises DeliveryFailed)."""
    _attempt_log(delivery.pk, status_code=status_code, error=error)
    attempts = NotificationDelivery.objects.values_list("attempts", flat=True).get(
        id=delivery.pk)
    if not again or attempts >= settings.EVALSERVER_NOTIFY_MAX_ATTEMPTS:
        tries = "" if not again else f" after {attempts} tries"
        raise DeliveryFailed("delivery_failed", f"{error}{tries}")
    countdown = retry_countdown(attempts)
    with transaction.atomic():
        # running -> queued again, for this claim only; due after the countdown
        requeued = job_rows(NotificationDelivery, delivery.pk).filter(
            status=RUNNING, claimed_by=task_id).update(
            status=Status.QUEUED, started=None,
            queued_at=timezone.now() + timedelta(seconds=countdown))
        if requeued:
            queue.job_queue(kind="notification", variant=delivery.channel, job_id=delivery.pk,
                            countdown=countdown)
    return False
