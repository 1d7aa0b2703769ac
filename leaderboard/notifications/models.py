"""Notifications (docs/api.md, 'Notifications and webhooks'): what each user asked to be told
(`NotificationPreference`, opt-in per event and channel), where webhooks go
(`WebhookEndpoint`, per user or per benchmark), and every notification sent
(`NotificationDelivery`, a job a worker claims, leaderboard/jobs/) with one
`DeliveryAttempt` per try, the log shown on the user's page."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import Benchmark
from leaderboard.jobs.lifecycle import ClaimedJob


class Event(models.TextChoices):
    SUBMISSION_SCORED = "submission.scored", "A submission was scored"
    SUBMISSION_FAILED = "submission.failed", "A submission failed"
    SCORES_CHANGED = "scores.changed", "A label-set version changed a score or rank"
    REVIEW_DECIDED = "review.decided", "A review decision on an item a submission raised"
    REVIEW_QUEUE_GREW = "review.queue_grew", "A review queue grew past its threshold"
    HOST_REQUEST_CREATED = "host_request.created", "A lab asked to host (site admins)"
    HOST_REQUEST_DECIDED = "host_request.decided", "Your request to host was decided"
    PARTICIPATION_REQUESTED = ("participation.requested",
                               "A user asked to join a benchmark you host")
    PARTICIPATION_DECIDED = ("participation.decided",
                             "Your request to join a benchmark was decided")
    TEST = "test", "A test event"


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class NotificationPreference(models.Model):
    """One event a user opted into, on which channels (no row: not told)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="notification_preferences")
    event = models.CharField(max_length=32, choices=Event.choices)
    email = models.BooleanField(default=False)
    webhook = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("user", "event"),
                                               name="notification_preference_unique")]

    def __str__(self) -> str:
        return f"{self.event} of user {self.user_id}"


class WebhookEndpoint(models.Model):
    """A URL the user's events are POSTed to; with a benchmark, only that benchmark's. The
    secret signs every body (docs/api.md, 'Verifying a webhook'): it is kept to sign, and shown
    to the user once, when the endpoint is made."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="webhook_endpoints")
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=128)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.url


class NotificationDelivery(ClaimedJob):
    """One notification to one user on one channel (an email, or a POST to one endpoint): a
    job (its variant, the channel). A failed try is sent again later with a growing wait until
    EVALSERVER_NOTIFY_MAX_ATTEMPTS tries; every try leaves a `DeliveryAttempt`."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="notification_deliveries")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    endpoint = models.ForeignKey(WebhookEndpoint, null=True, blank=True,
                                 on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32, choices=Event.choices)
    # The event's JSON body (docs/api.md, 'Webhook payload'), the same on every channel.
    payload = models.JSONField()
    # What the event was about ("submission:12:submission.scored"): an event emitted twice (a
    # task run again) is sent once. Blank for test events.
    key = models.CharField(max_length=120, blank=True, db_index=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=("status", "queued_at")),
                   models.Index(fields=("user", "-created"))]

    def __str__(self) -> str:
        return f"{self.event} to user {self.user_id} by {self.channel}: {self.status}"


class DeliveryAttempt(models.Model):
    """One try of a delivery: the receiver's HTTP status (none for an email or when no answer
    came) or what went wrong."""

    delivery = models.ForeignKey(NotificationDelivery, on_delete=models.CASCADE,
                                 related_name="tries")
    at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ("at", "pk")

    def __str__(self) -> str:
        return f"try of delivery {self.delivery_id}: {self.status_code or self.error}"
