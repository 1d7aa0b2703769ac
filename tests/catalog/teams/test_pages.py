"""The host teams' pages, without JavaScript (plain forms): /host/ asks to host, /host/requests/
decides (site admins), /teams/<slug>/ shows a team to its members and lets its admins manage
them; the profile links them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import host_team_member_set
from tests.factories import user_create

pytestmark = pytest.mark.django_db


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _members(team: HostTeam) -> list[tuple[str, str]]:
    return list(HostTeamMembership.objects.filter(team=team).order_by("user__username")
                .values_list("user__username", "role"))


def test_it_lets_a_lab_ask_to_host_and_a_site_admin_decide_on_the_pages() -> None:
    lab, admin = user_create("lab"), user_create("siteadmin")
    host_team_member_set(actor=None, team=host_team_site_get(), user=admin, role="admin")
    lab_page = _client(lab)

    assert Client().get("/host/")["Location"] == "/login/?next=/host/"
    bad = lab_page.post("/host/", {"slug": "Not A Slug", "name": "Vision lab"})
    assert bad.status_code == 400 and not HostRequest.objects.exists()
    asked = lab_page.post("/host/", {"slug": "vision-lab", "name": "Vision lab",
                                     "reason": "a new test set"}, follow=True)
    assert "Your request to host as &#x27;vision-lab&#x27; is pending." in asked.content.decode()
    again = lab_page.post("/host/", {"slug": "other", "name": "Other"})
    assert again.status_code == 409
    assert "you have a request to host waiting for a decision already" in again.content.decode()
    request = HostRequest.objects.get()

    refused = lab_page.get("/host/requests/")
    assert refused.status_code == 403
    assert "Only site admins decide requests to host." in refused.content.decode()
    assert lab_page.post("/host/requests/", {"request_id": request.pk,
                                             "decision": "approve"}).status_code == 403

    admin_page = _client(admin)
    listed = admin_page.get("/host/requests/").content.decode()
    assert re.findall(r'name="request_id" value="(\d+)"', listed) == [str(request.pk)]
    decided = admin_page.post("/host/requests/", {"request_id": request.pk,
                                                  "decision": "approve", "note": "welcome"},
                              follow=True)
    assert f"Request #{request.pk} (vision-lab) is approved." in decided.content.decode()
    assert _members(HostTeam.objects.get(slug="vision-lab")) == [("lab", "admin")]
    twice = admin_page.post("/host/requests/", {"request_id": request.pk,
                                                "decision": "refuse"})
    assert twice.status_code == 409
    assert f"host request #{request.pk} was decided already" in twice.content.decode()

    mine = lab_page.get("/host/").content.decode()
    assert 'href="/teams/vision-lab/"' in mine and "welcome" in mine
    profile = lab_page.get("/profile/").content.decode()
    assert re.findall(r'<a href="(/teams/[^"]+|/host/[^"]*)">', profile) == [
        "/teams/vision-lab/", "/host/"]


def test_it_lets_a_team_admin_manage_members_on_the_team_page() -> None:
    admin, host, outsider = user_create("lab"), user_create("hoster"), user_create("outsider")
    team = HostTeam.objects.create(slug="vision-lab", name="Vision lab")
    host_team_member_set(actor=None, team=team, user=admin, role="admin")
    Benchmark.objects.create(slug="lab-bench", name="Lab bench", num_classes=2,
                             main_example_set="test", hidden=True, team=team)
    page = _client(admin)

    added = page.post("/teams/vision-lab/", {"action": "set", "username": "hoster",
                                             "role": "host"}, follow=True).content.decode()
    assert "hoster is now host of vision-lab." in added
    assert _members(team) == [("hoster", "host"), ("lab", "admin")]
    assert 'href="/benchmarks/lab-bench/"' in added and "(hidden)" in added
    assert page.post("/teams/vision-lab/", {"action": "set", "username": "nobody",
                                            "role": "host"}).status_code == 404
    last = page.post("/teams/vision-lab/", {"action": "set", "username": "lab",
                                            "role": "host"})
    assert last.status_code == 409 and _members(team)[1] == ("lab", "admin")

    host_page = _client(host)
    shown = host_page.get("/teams/vision-lab/").content.decode()
    assert "You are host." in shown and 'name="action"' not in shown
    assert host_page.post("/teams/vision-lab/", {"action": "remove",
                                                 "username": "lab"}).status_code == 403
    assert _client(outsider).get("/teams/vision-lab/").status_code == 404
    assert _client(outsider).get("/teams/no-such-team/").status_code == 404

    changed = page.post("/teams/vision-lab/", {"action": "set", "username": "hoster",
                                               "role": "reviewer"}, follow=True)
    assert "hoster is now reviewer of vision-lab." in changed.content.decode()
    removed = page.post("/teams/vision-lab/", {"action": "remove", "username": "hoster"},
                        follow=True)
    assert "hoster is no longer a member." in removed.content.decode()
    assert _members(team) == [("lab", "admin")]
