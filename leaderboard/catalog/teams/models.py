"""Host teams own benchmarks (docs/hosts/teams.md): a team's admins manage its members, its
hosts add and run its benchmarks, its reviewers review their queues. A lab asks to host with a
`HostRequest`; a site admin decides it. One team, the site team, owns the built-in benchmarks.

Who may do what is decided in one place, leaderboard/catalog/teams/permissions.py."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from leaderboard.common.slugs import SLUG_MAX_LENGTH

# The site team's slug: it owns the built-in bundles (benchmarks/*.toml) and holds the accounts
# that were staff or reviewers before host teams existed (migration 0028).
SITE_TEAM_SLUG = "site"
SITE_TEAM_NAME = "Site team"


class HostTeam(models.Model):
    slug = models.SlugField(max_length=SLUG_MAX_LENGTH, unique=True)
    name = models.CharField(max_length=200)
    # True for the one site team (a partial unique constraint keeps it one).
    is_site = models.BooleanField(default=False, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("slug",)
        constraints = [models.UniqueConstraint(fields=("is_site",), condition=Q(is_site=True),
                                               name="hostteam_one_site_team")]

    def __str__(self) -> str:
        return self.slug


class TeamRole(models.TextChoices):
    # Each role holds the rights of those below it (docs/hosts/teams.md, "Roles").
    ADMIN = "admin", "Admin"
    HOST = "host", "Host"
    REVIEWER = "reviewer", "Reviewer"


class HostTeamMembership(models.Model):
    team = models.ForeignKey(HostTeam, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="host_team_memberships")
    role = models.CharField(max_length=16, choices=TeamRole.choices)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("team", "user")
        constraints = [models.UniqueConstraint(fields=("team", "user"),
                                               name="hostteammembership_one_per_user")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.team}"


class HostRequest(models.Model):
    """A lab's request to host: the team it would be, and why. Deciding it is a conditional
    update from `pending`; approval creates the team with the requester as its admin."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REFUSED = "refused", "Refused"

    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                     related_name="host_requests")
    team_slug = models.SlugField(max_length=SLUG_MAX_LENGTH)
    team_name = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    # Why a request was refused (shown to the requester).
    decision_note = models.TextField(blank=True)
    team = models.ForeignKey(HostTeam, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return f"host request #{self.pk} {self.team_slug} ({self.status})"


def site_team_id() -> int:
    """The site team's id, made on first use: the default owner of a benchmark created without
    a team (the built-in bundles, `manage.py benchmark_add` without `--team`)."""
    team, _ = HostTeam.objects.get_or_create(
        is_site=True, defaults={"slug": SITE_TEAM_SLUG, "name": SITE_TEAM_NAME})
    return team.pk
