"""The host teams' API (docs/api.md §11): a lab asks to host, a site admin decides once, the
team's admin adds a host, outsiders find no team; `host_request.created` and
`host_request.decided` are sent once each to those who opted in."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import host_team_member_set
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.services import notification_preference_update
from tests.api_support import token_client
from tests.factories import user_create

pytestmark = pytest.mark.django_db


def _site_admin(username: str = "siteadmin") -> User:
    admin = user_create(username)
    host_team_member_set(actor=None, team=host_team_site_get(), user=admin, role="admin")
    return admin


def _ask(client: APIClient, slug: str = "vision-lab") -> Any:
    return client.post("/api/host-requests/", {"slug": slug, "name": "Vision lab",
                                               "reason": "a new test set"}, format="json")


def test_it_lets_a_lab_ask_and_a_site_admin_approve_once(
    django_capture_on_commit_callbacks: Any,
) -> None:
    lab, other, admin = user_create("lab"), user_create("other"), _site_admin()
    lab_api, other_api, admin_api = token_client(lab), token_client(other), token_client(admin)

    asked = _ask(lab_api)
    request_id = asked.json()["id"]
    assert (asked.status_code, {k: asked.json()[k] for k in (
        "team_slug", "team_name", "reason", "status", "requested_by", "decided_by", "team")}
    ) == (201, {"team_slug": "vision-lab", "team_name": "Vision lab",
                "reason": "a new test set", "status": "pending", "requested_by": "lab",
                "decided_by": None, "team": None})
    bad = lab_api.post("/api/host-requests/", {"slug": "Vision Lab", "name": "x"},
                       format="json").json()["error"]
    assert (bad["code"], bad["field"]) == ("invalid_input", "slug")
    assert _ask(lab_api, "second").json()["error"]["code"] == "request_pending"

    # each sees their own; the site admin sees all, and can filter by status
    assert [r["id"] for r in lab_api.get("/api/host-requests/").json()["results"]] == [
        request_id]
    assert other_api.get("/api/host-requests/").json()["results"] == []
    assert admin_api.get("/api/host-requests/?status=pending").json()["count"] == 1
    assert admin_api.get("/api/host-requests/?status=approved").json()["count"] == 0
    assert admin_api.get("/api/host-requests/?status=maybe").json()["error"]["field"] == \
        "status"

    url = f"/api/host-requests/{request_id}/decision/"
    denied = lab_api.post(url, {"decision": "approve"}, format="json")
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "permission_denied")
    assert admin_api.post("/api/host-requests/999999/decision/", {"decision": "approve"},
                          format="json").status_code == 404

    approved = admin_api.post(url, {"decision": "approve", "note": "welcome"}, format="json")
    assert (approved.status_code, approved.json()["status"], approved.json()["team"],
            approved.json()["decided_by"], approved.json()["decision_note"]) == (
        200, "approved", "vision-lab", "siteadmin", "welcome")
    team = HostTeam.objects.get(slug="vision-lab")
    assert list(HostTeamMembership.objects.filter(team=team).values_list(
        "user__username", "role")) == [("lab", "admin")]

    again = admin_api.post(url, {"decision": "refuse"}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_decided")
    taken = _ask(other_api, "vision-lab")
    assert (taken.status_code, taken.json()["error"]["code"]) == (409, "team_exists")


def test_it_lets_a_team_admin_add_a_host_and_hides_the_team_from_outsiders() -> None:
    admin, host, outsider = user_create("lab"), user_create("hoster"), user_create("outsider")
    token_client(admin).post("/api/host-requests/", {"slug": "vision-lab", "name": "Vision"},
                             format="json")
    token_client(_site_admin()).post(f"/api/host-requests/{HostRequest.objects.get().pk}/"
                                     "decision/", {"decision": "approve"}, format="json")
    team = HostTeam.objects.get(slug="vision-lab")
    Benchmark.objects.create(slug="lab-bench", name="Lab bench", num_classes=2,
                             main_example_set="test", hidden=True, team=team)
    admin_api = token_client(admin)

    added = admin_api.put("/api/teams/vision-lab/members/hoster/", {"role": "host"},
                          format="json")
    assert (added.status_code, added.json()) == (
        200, {"username": "hoster", "role": "host", "changed": True})
    assert admin_api.put("/api/teams/vision-lab/members/hoster/", {"role": "host"},
                         format="json").json()["changed"] is False
    assert admin_api.put("/api/teams/vision-lab/members/hoster/", {"role": "owner"},
                         format="json").json()["error"]["field"] == "role"
    assert admin_api.put("/api/teams/vision-lab/members/nobody/", {"role": "host"},
                         format="json").status_code == 404

    host_api = token_client(host)
    assert host_api.get("/api/teams/").json()["results"] == [{
        "slug": "vision-lab", "name": "Vision", "role": "host",
        "url": "http://testserver/api/teams/vision-lab/"}]
    assert host_api.get("/api/teams/vision-lab/").json() == {
        "slug": "vision-lab", "name": "Vision", "site": False, "role": "host",
        "members": [{"username": "hoster", "role": "host"}, {"username": "lab", "role": "admin"}],
        "benchmarks": [{"slug": "lab-bench", "name": "Lab bench", "hidden": True}]}
    # a host is not an admin: 403; an outsider finds no team at all: 404
    refused = host_api.put("/api/teams/vision-lab/members/outsider/", {"role": "reviewer"},
                           format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "permission_denied")
    nobody = host_api.put("/api/teams/vision-lab/members/nobody/", {"role": "reviewer"},
                          format="json")
    assert (nobody.status_code, nobody.json()["error"]["code"]) == (403, "permission_denied")
    outsider_api = token_client(outsider)
    for answer in (outsider_api.get("/api/teams/vision-lab/"),
                   outsider_api.put("/api/teams/vision-lab/members/outsider/",
                                    {"role": "admin"}, format="json"),
                   outsider_api.get("/api/teams/no-such-team/")):
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    assert outsider_api.get("/api/teams/").json()["results"] == []

    # the last admin stays; the host is removed
    last = admin_api.delete("/api/teams/vision-lab/members/lab/")
    assert (last.status_code, last.json()["error"]["code"]) == (409, "last_admin")
    assert admin_api.delete("/api/teams/vision-lab/members/hoster/").status_code == 204
    assert admin_api.delete("/api/teams/vision-lab/members/hoster/").status_code == 404
    assert list(HostTeamMembership.objects.filter(team=team).values_list(
        "user__username", flat=True)) == ["lab"]


def test_it_lists_the_callers_teams_in_api_me() -> None:
    lab = user_create("lab")
    host_team_member_set(actor=None, team=host_team_site_get(), user=lab, role="reviewer")
    assert token_client(lab).get("/api/me/").json()["teams"] == [
        {"slug": "site", "name": "Site team", "role": "reviewer"}]


def test_it_tells_site_admins_of_a_request_and_the_requester_of_the_decision_once(
    django_capture_on_commit_callbacks: Any,
) -> None:
    lab, admin, quiet_admin = user_create("lab"), _site_admin(), _site_admin("quiet")
    bystander = user_create("bystander")
    for user in (admin, bystander):  # a bystander's opt-in gets them nothing
        notification_preference_update(user=user, event="host_request.created", email=True,
                                       webhook=False)
    notification_preference_update(user=lab, event="host_request.decided", email=True,
                                   webhook=False)
    with django_capture_on_commit_callbacks(execute=True):
        request_id = _ask(token_client(lab)).json()["id"]
    [told] = NotificationDelivery.objects.filter(event="host_request.created")
    assert (told.user, told.channel, told.payload["summary"], told.payload["data"]) == (
        admin, "email", "lab asked to host as team 'vision-lab'",
        {"request": {"id": request_id, "team_slug": "vision-lab", "team_name": "Vision lab",
                     "requested_by": "lab", "status": "pending", "reason": "a new test set"}})
    assert quiet_admin.notification_deliveries.count() == 0

    url = f"/api/host-requests/{request_id}/decision/"
    with django_capture_on_commit_callbacks(execute=True):
        token_client(admin).post(url, {"decision": "refuse", "note": "not yet"}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        token_client(admin).post(url, {"decision": "approve"}, format="json")  # 409
    [decided] = NotificationDelivery.objects.filter(event="host_request.decided")
    assert (decided.user, decided.payload["summary"], decided.payload["data"]) == (
        lab, "your request to host as team 'vision-lab' was refused",
        {"request": {"id": request_id, "team_slug": "vision-lab", "team_name": "Vision lab",
                     "requested_by": "lab", "status": "refused", "decision_note": "not yet"}})
    assert NotificationDelivery.objects.count() == 2
