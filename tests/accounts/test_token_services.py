"""The profile page and `/api/auth/token/` go through one service
(leaderboard/accounts/services.py): each sees the token the other made, and a revocation on one
is a revocation on both."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from leaderboard.accounts.services import token_get_or_create, token_revoke
from tests import factories

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
PASSWORD = "a-long-test-password"  # tests/factories.user_create


def test_it_returns_and_revokes_the_same_token_on_the_page_and_the_api(client: Client) -> None:
    user = factories.user_create("erin")
    client.force_login(user)

    client.post("/profile/token/create/")
    page_key = Token.objects.get(user=user).key
    api_key = APIClient().post(TOKEN, {"username": "erin", "password": PASSWORD}).json()["token"]
    assert api_key == page_key
    assert f'value="{page_key}"' in client.get("/profile/").content.decode()

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key}")
    assert api.delete(TOKEN).status_code == 204
    page = client.get("/profile/").content.decode()
    assert "You have no API token." in page and page_key not in page

    new_api_key = APIClient().post(TOKEN, {"username": "erin",
                                           "password": PASSWORD}).json()["token"]
    assert new_api_key != page_key
    assert f'value="{new_api_key}"' in client.get("/profile/").content.decode()
    new_api = APIClient()
    new_api.credentials(HTTP_AUTHORIZATION=f"Token {new_api_key}")
    assert new_api.get("/api/submissions/").status_code == 200

    revoked = client.post("/profile/token/revoke/", follow=True).content.decode()
    assert "API token revoked: requests with it are refused from now on." in revoked
    assert not Token.objects.filter(user=user).exists()
    assert new_api.get("/api/submissions/").status_code == 401


def test_it_keeps_one_token_per_user_and_says_what_it_did() -> None:
    user = factories.user_create("erin")

    first, first_created = token_get_or_create(user=user)
    second, second_created = token_get_or_create(user=user)

    assert first_created is True
    assert (second.key, second_created) == (first.key, False)
    assert list(Token.objects.values_list("key", flat=True)) == [first.key]
    assert token_revoke(user=user) is True
    assert token_revoke(user=user) is False
    assert not Token.objects.exists()
