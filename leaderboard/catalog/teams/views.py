"""The host teams' pages (docs/hosts/requesting-to-host.md): ask to host (`/host/`), decide
the requests (`/host/requests/`, site admins), and one team (`/teams/<slug>/`, its members
only; its admins add, change and remove members). Plain forms: they work without JavaScript.
Every refusal comes from the services, which ask the one module of rules (permissions.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from leaderboard.catalog.teams import selectors
from leaderboard.catalog.teams.forms import (
    HostRequestDecisionForm,
    HostRequestForm,
    TeamMemberForm,
    TeamMemberRemoveForm,
)
from leaderboard.catalog.teams.models import HostRequest, HostTeam, TeamRole
from leaderboard.catalog.teams.permissions import (
    host_requests_user_can_decide,
    team_user_can_manage,
    user_roles_forget,
    user_team_roles,
)
from leaderboard.catalog.teams.services import (
    host_request_create,
    host_request_decide,
    host_team_member_remove,
    host_team_member_set,
)
from leaderboard.common.errors import ServiceError
from leaderboard.common.page_access import role_required


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required
    return user


@login_required
def host_request_page(request: HttpRequest) -> HttpResponse:
    """GET: the form and the user's requests. POST: make the request, then back here."""
    user, status = _user(request), 200
    form = HostRequestForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                made = host_request_create(user=user, **form.cleaned_data)
            except ServiceError as exc:  # team_exists, request_pending
                form.add_error("slug" if exc.field else None, exc.message)
                status = exc.http_status
            else:
                messages.success(request, f"Your request to host as {made.team_slug!r} is "
                                 f"{made.status}.")
                return redirect("host_request")
    return render(request, "leaderboard/host_request.html", {
        "form": form, "requests": selectors.host_requests_of_user(user=user),
        "can_decide": host_requests_user_can_decide(user=user)}, status=status)


@role_required(lambda user: host_requests_user_can_decide(user=user),
               title="Requests to host", message="Only site admins decide requests to host.")
def host_requests_page(request: HttpRequest) -> HttpResponse:
    """GET: the pending requests, each with its approve/refuse form, then those decided.
    POST: decide one, then back here."""
    status, failed = 200, None
    if request.method == "POST":
        form = HostRequestDecisionForm(request.POST)
        status = 400
        if form.is_valid():
            pending = selectors.host_request_get(request_id=form.cleaned_data["request_id"])
            if pending is None:
                raise Http404("no such request to host")
            try:
                decided = host_request_decide(
                    actor=_user(request), request=pending,
                    approve=form.cleaned_data["decision"] == "approve",
                    note=form.cleaned_data["note"])
            except ServiceError as exc:  # already_decided, team_exists
                messages.error(request, exc.message)
                status = exc.http_status
            else:
                messages.success(request, f"Request #{decided.pk} ({decided.team_slug}) is "
                                 f"{decided.status}.")
                return redirect("host_requests")
        else:
            messages.error(request, "Choose to approve or refuse a pending request.")
        failed = form
    requests = selectors.host_requests_list()
    return render(request, "leaderboard/host_requests.html", {
        "pending": requests.filter(status=HostRequest.Status.PENDING),
        "decided": requests.exclude(status=HostRequest.Status.PENDING)[:50],
        "failed": failed}, status=status)


def _team_action(request: HttpRequest, team: HostTeam) -> tuple[str, int]:
    """Do the POSTed member change: (what happened or why not, HTTP status)."""
    action = request.POST.get("action")
    form: TeamMemberForm | TeamMemberRemoveForm = (
        TeamMemberRemoveForm(request.POST) if action == "remove" else TeamMemberForm(request.POST))
    if action not in ("set", "remove") or not form.is_valid():
        return "Give a username and one of the roles.", 400
    username = form.cleaned_data["username"]
    member = selectors.user_by_username(username=username)
    if member is None:
        return f"There is no account {username!r}.", 404
    try:
        if action == "remove":
            if not host_team_member_remove(actor=_user(request), team=team, user=member):
                return f"{username} is not a member of this team.", 404
            return f"{username} is no longer a member.", 200
        role = form.cleaned_data["role"]
        host_team_member_set(actor=_user(request), team=team, user=member, role=role)
        return f"{username} is now {TeamRole(role).label.lower()} of {team.slug}.", 200
    except ServiceError as exc:  # permission_denied, last_admin
        return exc.message, exc.http_status


@login_required
def team_page(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the team's members and benchmarks (its members only: 404 to anyone else).
    POST (its admins): set a member's role (`action=set`) or remove one (`action=remove`)."""
    user = _user(request)
    team = selectors.host_team_of_member(slug=slug, user=user)
    if team is None:
        raise Http404("no such team")
    status = 200
    if request.method == "POST":
        said, status = _team_action(request, team)
        if status == 200:
            messages.success(request, said)
            user_roles_forget(user)  # they may have left the team, or changed their own role
            if selectors.host_team_of_member(slug=slug, user=user) is None:
                return redirect("profile")
            return redirect("team", slug=team.slug)
        messages.error(request, said)
    return render(request, "leaderboard/team.html", {
        "team": team, "role": user_team_roles(user).get(team.pk),
        "can_manage": team_user_can_manage(user=user, team=team),
        "members": selectors.host_team_members_list(team=team),
        "benchmarks": selectors.host_team_benchmarks_list(team=team),
        "form": TeamMemberForm(initial={"role": TeamRole.HOST}), "roles": TeamRole.choices},
        status=status)
