"""POST /api/auth/token/, DELETE /api/auth/token/ and GET /api/me/."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests import factories

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
PASSWORD = "a-long-test-password"  # tests/factories.user_create


def test_it_gives_the_same_token_for_a_username_and_password() -> None:
    user = factories.user_create("alice")

    first = APIClient().post(TOKEN, {"username": "alice", "password": PASSWORD}, format="json")
    second = APIClient().post(TOKEN, {"username": "alice", "password": PASSWORD})

    assert first.status_code == 200
    assert first.json() == {"token": Token.objects.get(user=user).key}
    assert second.json() == first.json()


def test_it_refuses_wrong_credentials_with_the_error_shape() -> None:
    factories.user_create("alice")

    wrong = APIClient().post(TOKEN, {"username": "alice", "password": "nope"}, format="json")
    unknown = APIClient().post(TOKEN, {"username": "bob", "password": PASSWORD}, format="json")

    expected = {"error": {"code": "invalid_credentials",
                          "message": "wrong username or password (or the account is inactive)"}}
    assert (wrong.status_code, wrong.json()) == (400, expected)
    assert (unknown.status_code, unknown.json()) == (400, expected)
    assert not Token.objects.exists()


def test_it_refuses_an_inactive_account() -> None:
    user = factories.user_create("alice")
    user.is_active = False
    user.save()

    response = APIClient().post(TOKEN, {"username": "alice", "password": PASSWORD})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_credentials"


def test_it_names_a_missing_password() -> None:
    response = APIClient().post(TOKEN, {"username": "alice"}, format="json")

    assert response.status_code == 400
    assert response.json() == {"error": {"code": "missing_password",
                                         "message": "password: give a password",
                                         "field": "password"}}


def test_it_revokes_the_token_so_it_no_longer_works() -> None:
    user = factories.user_create("alice")
    key = Token.objects.create(user=user).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/submissions/").status_code == 200

    revoked = client.delete(TOKEN)
    after = client.get("/api/submissions/")

    assert revoked.status_code == 204
    assert not Token.objects.filter(user=user).exists()
    assert after.status_code == 401
    assert after.json() == {"error": {"code": "authentication_failed",
                                      "message": "Invalid token."}}


def test_it_gives_a_new_token_after_revocation() -> None:
    user = factories.user_create("alice")
    old = Token.objects.create(user=user).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    client.delete(TOKEN)

    response = APIClient().post(TOKEN, {"username": "alice", "password": PASSWORD})

    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=user).key != old


def test_it_needs_credentials_to_revoke() -> None:
    response = APIClient().delete(TOKEN)

    assert response.status_code == 401
    assert response.json() == {"error": {
        "code": "not_authenticated", "message": "Authentication credentials were not provided."}}


def test_it_says_who_the_token_belongs_to() -> None:
    alice = factories.user_create("alice")
    staff = factories.user_create("root", staff=True)
    factories.team_role_give(staff, "reviewer")  # a maintainer: a team's member, not staff
    api = APIClient()

    anonymous = api.get("/api/me/")
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    mine = api.get("/api/me/")
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff).key}")
    theirs = api.get("/api/me/")

    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "not_authenticated"
    assert (mine.status_code, mine.json()) == (
        200, {"username": "alice", "staff": False, "maintainer": False, "teams": []})
    assert theirs.json() == {"username": "root", "staff": True, "maintainer": True,
                             "teams": [{"slug": "site", "name": "Site team",
                                        "role": "reviewer"}]}
