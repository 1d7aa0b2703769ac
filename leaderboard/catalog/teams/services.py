"""Writes of host teams (docs/hosts/teams.md): teams and their members, and labs' requests to
host. Every write checks its actor's right here (leaderboard/catalog/teams/permissions.py), so the
API, the pages and the commands refuse the same things with the same error."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.dispatch import Signal
from django.utils import timezone

from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership, TeamRole
from leaderboard.catalog.teams.permissions import (
    host_requests_user_can_decide,
    team_user_can_manage,
    user_roles_forget,
)
from leaderboard.catalog.teams.signals import host_request_created, host_request_decided
from leaderboard.common.email_verification import user_email_verified
from leaderboard.common.errors import ServiceError

__all__ = [
    "HostTeamError",
    "host_request_create",
    "host_request_decide",
    "host_team_create",
    "host_team_member_remove",
    "host_team_member_set",
]


class HostTeamError(ServiceError):
    """A team write refused: nothing written."""


def _denied(message: str) -> HostTeamError:
    return HostTeamError("permission_denied", message, http_status=403)


def _slug_free(slug: str) -> None:
    if HostTeam.objects.filter(slug=slug).exists():
        raise HostTeamError("team_exists", f"a team named {slug!r} exists already", field="slug",
                            http_status=409)


def host_team_create(*, slug: str, name: str, admin: User) -> HostTeam:
    """A new team with `admin` as its first admin (an approved request, `manage.py host_team`,
    or a verified account where EVALSERVER_HOST_TEAMS_SELF_SERVICE is on)."""
    _slug_free(slug)
    try:
        with transaction.atomic():
            team = HostTeam.objects.create(slug=slug, name=name)
            HostTeamMembership.objects.create(team=team, user=admin, role=TeamRole.ADMIN)
    except IntegrityError as exc:  # two creations of one slug at once
        raise HostTeamError("team_exists", f"a team named {slug!r} exists already",
                            field="slug", http_status=409) from exc
    user_roles_forget(admin)
    return team


def host_team_member_set(*, actor: User | None, team: HostTeam, user: User,
                         role: str) -> bool:
    """Give `user` `role` in `team` (adding them, or changing their role); False when they
    held it already. `actor` None is the operator's command line. A team keeps at least one
    admin."""
    if role not in TeamRole.values:
        raise HostTeamError("invalid_role", f"unknown role {role!r}: one of "
                            f"{', '.join(TeamRole.values)}", field="role")
    if actor is not None and not team_user_can_manage(user=actor, team=team):
        raise _denied(f"only the admins of team {team.slug!r} may change its members")
    with transaction.atomic():
        membership, created = HostTeamMembership.objects.select_for_update().get_or_create(
            team=team, user=user, defaults={"role": role})
        if not created and membership.role == role:
            return False
        if not created:
            if membership.role == TeamRole.ADMIN:
                _last_admin_check(team=team, user=user)
            HostTeamMembership.objects.filter(pk=membership.pk).update(role=role)
    user_roles_forget(user)
    return True


def _last_admin_check(*, team: HostTeam, user: User) -> None:
    others = (HostTeamMembership.objects.select_for_update()
              .filter(team=team, role=TeamRole.ADMIN).exclude(user=user))
    if not others.exists():
        raise HostTeamError("last_admin", f"{user.username} is the last admin of team "
                            f"{team.slug!r}: make another member admin first", field="user",
                            http_status=409)


def host_team_member_remove(*, actor: User | None, team: HostTeam, user: User) -> bool:
    """Take `user` out of `team`; False when they were not in it. Members may leave."""
    if actor is not None and actor.pk != user.pk and not team_user_can_manage(user=actor,
                                                                              team=team):
        raise _denied(f"only the admins of team {team.slug!r} may change its members")
    with transaction.atomic():
        membership = (HostTeamMembership.objects.select_for_update()
                      .filter(team=team, user=user).first())
        if membership is None:
            return False
        if membership.role == TeamRole.ADMIN:
            _last_admin_check(team=team, user=user)
        membership.delete()
    user_roles_forget(user)
    return True


def _send_on_commit(signal: Signal, request_id: int) -> None:
    transaction.on_commit(lambda: signal.send(sender=HostRequest, request_id=request_id))


def host_request_create(*, user: User, slug: str, name: str, reason: str) -> HostRequest:
    """A lab asks to host as a new team. One pending request per user; the slug must be free.
    Where EVALSERVER_HOST_TEAMS_SELF_SERVICE is on, a request from an account whose email
    address is verified is approved at once; others wait for a site admin."""
    _slug_free(slug)
    with transaction.atomic():
        if HostRequest.objects.select_for_update().filter(
                requested_by=user, status=HostRequest.Status.PENDING).exists():
            raise HostTeamError("request_pending", "you have a request to host waiting for a "
                                "decision already", http_status=409)
        request = HostRequest.objects.create(requested_by=user, team_slug=slug, team_name=name,
                                             reason=reason)
        _send_on_commit(host_request_created, request.pk)
    if settings.EVALSERVER_HOST_TEAMS_SELF_SERVICE and user_email_verified(user=user):
        return host_request_decide(actor=None, request=request, approve=True)
    return request


def host_request_decide(*, actor: User | None, request: HostRequest, approve: bool,
                        note: str = "") -> HostRequest:
    """Approve (the team is created, the requester its admin) or refuse a pending request,
    once: a conditional update from pending, so two decisions at once decide it once.
    `actor` None is the server itself (self-service) or the operator's command line."""
    if actor is not None and not host_requests_user_can_decide(user=actor):
        raise _denied("only site admins may decide requests to host")
    status = HostRequest.Status.APPROVED if approve else HostRequest.Status.REFUSED
    with transaction.atomic():
        decided = HostRequest.objects.filter(
            pk=request.pk, status=HostRequest.Status.PENDING).update(
            status=status, decided_by=actor, decided_at=timezone.now(), decision_note=note)
        if not decided:
            raise HostTeamError("already_decided", f"host request #{request.pk} was decided "
                                "already", http_status=409)
        if approve:
            team = host_team_create(slug=request.team_slug, name=request.team_name,
                                    admin=request.requested_by)
            HostRequest.objects.filter(pk=request.pk).update(team=team)
        _send_on_commit(host_request_decided, request.pk)
    request.refresh_from_db()
    return request
