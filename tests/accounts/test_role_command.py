"""`manage.py role grant|revoke|list`: the roles in host teams (admin, host, reviewer; the site
team unless `--team`) and Django's staff flag, through the command as an operator runs it,
checked on the rows it leaves and on what the review queue API then answers
(docs/hosts/teams.md)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from leaderboard.catalog.teams.models import HostTeamMembership
from tests import factories
from tests.api_support import token_client

pytestmark = pytest.mark.django_db

QUEUE = "/api/review/toy/queue/"
DENIED = {"error": {"code": "permission_denied",
                    "message": "only the members of a host team may review (docs/hosts/teams.md)"}}


def role(*args: str) -> str:
    out = io.StringIO()
    call_command("role", *args, stdout=out, no_color=True)
    return out.getvalue()


def memberships() -> list[tuple[str, str, str]]:
    return list(HostTeamMembership.objects.order_by("team__slug", "user__username")
                .values_list("team__slug", "user__username", "role"))


def staff(username: str) -> bool:
    return User.objects.values_list("is_staff", flat=True).get(username=username)


@pytest.fixture
def toy_benchmark() -> None:
    """A benchmark of the site team with one label set: enough for its review queue."""
    factories.toy_label_set()


def test_it_grants_the_reviewer_role_which_opens_the_review_queue(toy_benchmark: None) -> None:
    alice = factories.user_create("alice")
    before = token_client(alice).get(QUEUE)
    assert (before.status_code, before.json()) == (403, DENIED)

    assert role("grant", "--username", "alice", "--role", "reviewer") == \
        "granted reviewer of site to alice\n"

    assert memberships() == [("site", "alice", "reviewer")] and not staff("alice")
    after = token_client(alice).get(QUEUE)
    assert (after.status_code, after.json()["results"]) == (200, [])


def test_it_revokes_the_reviewer_role_which_closes_the_review_queue(toy_benchmark: None) -> None:
    alice = factories.user_create("alice")
    role("grant", "--username", "alice", "--role", "reviewer")
    assert token_client(alice).get(QUEUE).status_code == 200

    assert role("revoke", "--username", "alice", "--role", "reviewer") == \
        "revoked reviewer of site from alice\n"

    assert memberships() == []
    after = token_client(alice).get(QUEUE)
    assert (after.status_code, after.json()) == (403, DENIED)


def test_it_grants_a_role_in_another_team_which_gives_nothing_on_the_site_teams(
    toy_benchmark: None,
) -> None:
    factories.team_create("lab")
    carol = factories.user_create("carol")
    assert role("grant", "--username", "carol", "--role", "host", "--team", "lab") == \
        "granted host of lab to carol\n"
    assert memberships() == [("lab", "carol", "host")]
    refused = token_client(carol).get(QUEUE)
    assert (refused.status_code, refused.json()) == (403, {"error": {
        "code": "permission_denied",
        "message": "only the reviewers, hosts and admins of the team 'site' may review 'toy'"}})
    # a second grant in the same team replaces the role held there
    assert role("grant", "--username", "carol", "--role", "admin", "--team", "lab") == \
        "granted admin of lab to carol\n"
    assert memberships() == [("lab", "carol", "admin")]


def test_it_grants_and_revokes_staff_which_gives_no_benchmark_right(toy_benchmark: None) -> None:
    bob = factories.user_create("bob")

    assert role("grant", "--username", "bob", "--role", "staff") == "granted staff to bob\n"
    assert staff("bob") and memberships() == []
    assert token_client(bob).get(QUEUE).json() == DENIED  # staff alone reviews nothing

    assert role("revoke", "--username", "bob", "--role", "staff") == "revoked staff from bob\n"
    assert not staff("bob")


def test_it_says_a_role_already_held_and_changes_nothing() -> None:
    factories.user_create("alice")
    role("grant", "--username", "alice", "--role", "reviewer")
    factories.user_create("sam", staff=True)
    before = memberships()

    assert role("grant", "--username", "alice", "--role", "reviewer") == \
        "alice already holds reviewer of site: nothing changed\n"
    assert role("grant", "--username", "sam", "--role", "staff") == \
        "sam already holds staff: nothing changed\n"
    assert role("revoke", "--username", "sam", "--role", "reviewer") == \
        "sam does not hold reviewer of site: nothing changed\n"
    assert role("revoke", "--username", "alice", "--role", "host") == \
        "alice does not hold host of site: nothing changed\n"

    assert memberships() == before == [("site", "alice", "reviewer")]
    assert list(User.objects.order_by("username").values_list("username", "is_staff")) == \
        [("alice", False), ("sam", True)]


def test_it_keeps_a_teams_last_admin() -> None:
    factories.user_create("root")
    role("grant", "--username", "root", "--role", "admin")
    with pytest.raises(CommandError, match=r"^root is the last admin of team 'site'"):
        role("revoke", "--username", "root", "--role", "admin")
    assert memberships() == [("site", "root", "admin")]


def test_it_refuses_an_unknown_user_or_team_naming_them() -> None:
    with pytest.raises(CommandError, match=r"^no user 'nobody'$"):
        role("grant", "--username", "nobody", "--role", "staff")
    factories.user_create("alice")
    with pytest.raises(CommandError, match=r"^no host team 'nowhere'$"):
        role("grant", "--username", "alice", "--role", "host", "--team", "nowhere")
    assert memberships() == []


def test_it_refuses_an_unknown_role() -> None:
    factories.user_create("alice")
    with pytest.raises(CommandError, match=r"argument --role: invalid choice: 'owner'"):
        role("grant", "--username", "alice", "--role", "owner")
    assert memberships() == [] and not staff("alice")


def test_it_lists_the_holders_of_each_role() -> None:
    for name in ("carol", "alice", "bob", "dave"):
        factories.user_create(name)
    factories.team_create("lab")
    role("grant", "--username", "carol", "--role", "reviewer")
    role("grant", "--username", "alice", "--role", "staff")
    role("grant", "--username", "alice", "--role", "reviewer")
    role("grant", "--username", "alice", "--role", "admin", "--team", "lab")
    role("grant", "--username", "bob", "--role", "staff")

    assert role("list") == ("alice\tlab:admin,site:reviewer,staff\nbob\tstaff\n"
                            "carol\tsite:reviewer\n")
    assert role("list", "--role", "reviewer") == ("alice\tlab:admin,site:reviewer,staff\n"
                                                  "carol\tsite:reviewer\n")
    assert role("list", "--role", "staff") == "alice\tlab:admin,site:reviewer,staff\nbob\tstaff\n"
    assert role("list", "--team", "lab") == "alice\tlab:admin,staff\nbob\tstaff\n"
    role("revoke", "--username", "carol", "--role", "reviewer")
    role("revoke", "--username", "alice", "--role", "reviewer")
    assert role("list", "--role", "reviewer") == "no user holds the reviewer role\n"
