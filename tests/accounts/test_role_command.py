"""`manage.py role grant|revoke|list`: the reviewer role (the `reviewers` group) and staff
(`User.is_staff`), through the command as an operator runs it, checked on the rows it leaves
and on what the review queue API then answers."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from leaderboard.common.roles import REVIEWERS_GROUP
from tests import factories
from tests.api_support import token_client

pytestmark = pytest.mark.django_db

QUEUE = "/api/review/toy/queue/"
DENIED = {"error": {"code": "permission_denied",
                    "message": "only maintainers (staff or the reviewers group) may review"}}


def role(*args: str) -> str:
    out = io.StringIO()
    call_command("role", *args, stdout=out, no_color=True)
    return out.getvalue()


def in_reviewers(username: str) -> bool:
    return User.objects.filter(username=username, groups__name=REVIEWERS_GROUP).exists()


def staff(username: str) -> bool:
    return User.objects.values_list("is_staff", flat=True).get(username=username)


@pytest.fixture
def toy_benchmark() -> None:
    """A benchmark with one label set: enough for its review queue to answer."""
    factories.toy_label_set()


def test_it_grants_the_reviewer_role_which_opens_the_review_queue(toy_benchmark: None) -> None:
    alice = factories.user_create("alice")
    before = token_client(alice).get(QUEUE)
    assert (before.status_code, before.json()) == (403, DENIED)

    assert role("grant", "--username", "alice", "--role", "reviewer") == \
        "granted reviewer to alice\n"

    assert in_reviewers("alice") and not staff("alice")
    assert list(Group.objects.get(name=REVIEWERS_GROUP).user_set.values_list(
        "username", flat=True)) == ["alice"]
    after = token_client(alice).get(QUEUE)
    assert (after.status_code, after.json()["results"]) == (200, [])


def test_it_revokes_the_reviewer_role_which_closes_the_review_queue(toy_benchmark: None) -> None:
    alice = factories.user_create("alice")
    role("grant", "--username", "alice", "--role", "reviewer")
    assert token_client(alice).get(QUEUE).status_code == 200

    assert role("revoke", "--username", "alice", "--role", "reviewer") == \
        "revoked reviewer from alice\n"

    assert not in_reviewers("alice")
    # the group stays (other reviewers may be in it); only alice's membership went
    assert Group.objects.filter(name=REVIEWERS_GROUP).count() == 1
    after = token_client(alice).get(QUEUE)
    assert (after.status_code, after.json()) == (403, DENIED)


def test_it_grants_and_revokes_staff(toy_benchmark: None) -> None:
    bob = factories.user_create("bob")

    assert role("grant", "--username", "bob", "--role", "staff") == "granted staff to bob\n"
    assert staff("bob") and not in_reviewers("bob")
    assert token_client(bob).get(QUEUE).status_code == 200  # staff act as reviewers

    assert role("revoke", "--username", "bob", "--role", "staff") == "revoked staff from bob\n"
    assert not staff("bob")
    assert token_client(bob).get(QUEUE).status_code == 403


def test_it_says_a_role_already_held_and_changes_nothing() -> None:
    factories.user_create("alice")
    role("grant", "--username", "alice", "--role", "reviewer")
    factories.user_create("sam", staff=True)
    memberships = list(User.groups.through.objects.values_list("pk", "user_id", "group_id"))

    assert role("grant", "--username", "alice", "--role", "reviewer") == \
        "alice already holds reviewer: nothing changed\n"
    assert role("grant", "--username", "sam", "--role", "staff") == \
        "sam already holds staff: nothing changed\n"
    assert role("revoke", "--username", "sam", "--role", "reviewer") == \
        "sam does not hold reviewer: nothing changed\n"

    assert list(User.groups.through.objects.values_list("pk", "user_id", "group_id")) == \
        memberships
    assert list(User.objects.order_by("username").values_list("username", "is_staff")) == \
        [("alice", False), ("sam", True)]


def test_it_refuses_an_unknown_user_naming_them() -> None:
    with pytest.raises(CommandError, match=r"^no user 'nobody'$"):
        role("grant", "--username", "nobody", "--role", "staff")
    assert not Group.objects.exists()


def test_it_refuses_an_unknown_role() -> None:
    factories.user_create("alice")
    with pytest.raises(CommandError, match=r"argument --role: invalid choice: 'admin'"):
        role("grant", "--username", "alice", "--role", "admin")
    assert not Group.objects.exists() and not staff("alice")


def test_it_lists_the_holders_of_each_role() -> None:
    for name in ("carol", "alice", "bob", "dave"):
        factories.user_create(name)
    role("grant", "--username", "carol", "--role", "reviewer")
    role("grant", "--username", "alice", "--role", "staff")
    role("grant", "--username", "alice", "--role", "reviewer")
    role("grant", "--username", "bob", "--role", "staff")

    assert role("list") == "alice\treviewer,staff\nbob\tstaff\ncarol\treviewer\n"
    assert role("list", "--role", "reviewer") == "alice\treviewer,staff\ncarol\treviewer\n"
    assert role("list", "--role", "staff") == "alice\treviewer,staff\nbob\tstaff\n"
    role("revoke", "--username", "carol", "--role", "reviewer")
    role("revoke", "--username", "alice", "--role", "reviewer")
    assert role("list", "--role", "reviewer") == "no user holds the reviewer role\n"
