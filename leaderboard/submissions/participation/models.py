"""Who may submit to a benchmark, as its hosts set it (docs/hosts/participation.md): its
`ParticipationRules` (open or by approval, a verified email, terms), the users' requests to
join (`ParticipationRequest`) and their acceptances of the terms (`TermsAcceptance`).

A benchmark without a rules row has the defaults (`participation_rules_get`): open, or, where
it has a hidden label set, by approval with a verified email."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import Benchmark


class ParticipationMode(models.TextChoices):
    OPEN = "open", "Open: anyone signed in may submit"
    APPROVAL = "approval", "By approval: the hosts admit each participant"


class ParticipationRules(models.Model):
    """One benchmark's rules, made on the hosts' first write (no row: the defaults)."""

    benchmark = models.OneToOneField(Benchmark, on_delete=models.CASCADE,
                                     related_name="participation_rules")
    mode = models.CharField(max_length=16, choices=ParticipationMode.choices,
                            default=ParticipationMode.OPEN)
    require_verified_email = models.BooleanField(default=False)
    terms = models.TextField(blank=True)
    # sha256 of `terms` (hex): what an acceptance names, so new terms need a new one
    terms_sha256 = models.CharField(max_length=64, blank=True)
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"participation rules of {self.benchmark_id} ({self.mode})"


class ParticipationRequest(models.Model):
    """A user's request to join a benchmark in approval mode: one per user and benchmark,
    decided once (a conditional update from `pending`)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REFUSED = "refused", "Refused"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="participation_requests")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE,
                                  related_name="participation_requests")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # the user's message to the hosts
    message = models.TextField(blank=True)
    # the hosts' note on their decision (shown to the user)
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created", "-id")
        constraints = [models.UniqueConstraint(fields=("user", "benchmark"),
                                               name="participationrequest_one_per_user")]

    def __str__(self) -> str:
        return f"participation request #{self.pk} ({self.status})"


class TermsAcceptance(models.Model):
    """A user accepted this text of a benchmark's terms (by its sha256), once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="terms_acceptances")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE,
                                  related_name="terms_acceptances")
    terms_sha256 = models.CharField(max_length=64)
    accepted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-accepted_at", "-id")
        constraints = [models.UniqueConstraint(fields=("user", "benchmark", "terms_sha256"),
                                               name="termsacceptance_once")]

    def __str__(self) -> str:
        return f"terms {self.terms_sha256[:12]} accepted by {self.user_id}"
