"""The migration that brings existing accounts to allauth (leaderboard/migrations/
0031_signup_invitations.py), run for real: the database taken back to the migration before it,
accounts made there as they were, then migrated forward. Every user, group membership, token,
password and staff flag is kept; each user with an address gets allauth's EmailAddress, primary
and unverified; a user without one gets none."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.hashers import check_password, make_password
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def _migration_of_invitations(executor: MigrationExecutor) -> tuple[str, str]:
    (key,) = [key for key in executor.loader.graph.nodes
              if key[0] == "leaderboard" and key[1].endswith("_signup_invitations")]
    return key


def _migrate(targets: list[tuple[str, str]]) -> Any:
    """Migrate to `targets`; the models as the applied migrations leave them."""
    MigrationExecutor(connection).migrate(targets)
    executor = MigrationExecutor(connection)
    return executor._create_project_state(with_applied_migrations=True).apps


def test_it_keeps_every_account_and_gives_each_address_an_unverified_email_address() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    node = executor.loader.graph.nodes[_migration_of_invitations(executor)]
    before = [dependency for dependency in node.dependencies if dependency[0] == "leaderboard"]
    try:
        old = _migrate(before)
        User, Group = old.get_model("auth", "User"), old.get_model("auth", "Group")
        Token = old.get_model("authtoken", "Token")
        reviewers = Group.objects.create(name="reviewers")
        made = {}
        for username, email, staff in (("ada", "Ada@Example.org", True),
                                       ("bob", "", False), ("cy", " cy@example.net ", False)):
            user = User.objects.create(username=username, email=email, is_staff=staff,
                                       password=make_password(f"{username}-password"))
            made[username] = user.pk
        User.objects.get(username="ada").groups.add(reviewers)
        Token.objects.create(user_id=made["bob"], key="b" * 40)
        assert "leaderboard_signupinvitation" not in connection.introspection.table_names()

        new = _migrate(latest)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    User = new.get_model("auth", "User")
    EmailAddress = new.get_model("account", "EmailAddress")
    Token = new.get_model("authtoken", "Token")
    assert sorted(User.objects.values_list("pk", "username", "email", "is_staff")) == sorted([
        (made["ada"], "ada", "Ada@Example.org", True), (made["bob"], "bob", "", False),
        (made["cy"], "cy", " cy@example.net ", False)])
    assert all(check_password(f"{user.username}-password", user.password)
               for user in User.objects.all())
    assert list(User.objects.filter(groups__name="reviewers").values_list("username", flat=True)
                ) == ["ada"]
    assert list(Token.objects.values_list("user_id", "key")) == [(made["bob"], "b" * 40)]
    assert sorted(EmailAddress.objects.values_list("user_id", "email", "primary", "verified")
                  ) == sorted([(made["ada"], "ada@example.org", True, False),
                               (made["cy"], "cy@example.net", True, False)])
    assert "leaderboard_signupinvitation" in connection.introspection.table_names()
