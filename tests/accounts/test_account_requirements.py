"""What a signed-in user is asked before anything else (leaderboard/accounts/middleware.py):
a maintainer without a TOTP authenticator when EVALSERVER_MFA_REQUIRED is on, and an account
without an email address (made before sign-up asked for one) for its address; the API's tokens
keep working for both. And the social sign-in a configured provider offers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
    yield_hotp_counters_from_time,
)
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.authtoken.models import Token

from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = factories.PASSWORD
ACTIVATE = "/accounts/2fa/totp/activate/"


def _login(client: Client, username: str) -> str:
    response = client.post("/accounts/login/", {"login": username, "password": PASSWORD})
    assert response.status_code == 302
    return str(response["Location"])


def test_it_asks_a_maintainer_for_totp_before_anything_when_mfa_is_required(
    client: Client, settings: Settings,
) -> None:
    settings.EVALSERVER_MFA_REQUIRED = True
    # one code for the whole window around now: the code computed below is still valid when
    # it is checked, whatever the second (allauth.mfa's MFA_TOTP_TOLERANCE)
    settings.MFA_TOTP_TOLERANCE = 1
    host = factories.host_create("rita")  # a host of the site team
    assert _login(client, "rita") == "/"
    for path in ("/", "/submissions/", "/profile/", "/review/"):
        assert client.get(path)["Location"] == ACTIVATE, path
    # allauth asks for the password again before an authenticator is added: that page too
    # is open to the maintainer, and then the activation page
    reauthenticate = "/accounts/reauthenticate/?next=%2Faccounts%2F2fa%2Ftotp%2Factivate%2F"
    assert client.get(ACTIVATE)["Location"] == reauthenticate
    assert client.get(reauthenticate).status_code == 200
    assert client.post(reauthenticate, {"password": PASSWORD})["Location"] == ACTIVATE
    assert client.get(ACTIVATE).status_code == 200
    assert client.get("/accounts/2fa/").status_code == 200
    token = Token.objects.create(user=host)
    assert Client(HTTP_AUTHORIZATION=f"Token {token.key}").get("/api/me/").status_code == 200

    secret = generate_totp_secret()
    TOTP.activate(host, secret)
    assert client.get("/").status_code == 200
    # the password alone no longer gives a token; the one it has keeps working
    refused = Client().post("/api/auth/token/", {"username": "rita", "password": PASSWORD})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "mfa_required")
    assert Client(HTTP_AUTHORIZATION=f"Token {token.key}").get("/api/me/").status_code == 200
    # nor the admin's login (a staff maintainer's password alone)
    host.is_staff = True
    host.save()
    admin = Client()
    page = admin.post("/admin/login/?next=/admin/", {"username": "rita", "password": PASSWORD})
    assert page.status_code == 200 and "two-factor authentication" in page.content.decode()
    assert "_auth_user_id" not in admin.session

    # the next login asks for the authenticator's code
    client.post("/logout/")
    assert _login(client, "rita") == "/accounts/2fa/authenticate/"
    assert client.get("/profile/")["Location"].startswith("/login/")  # not signed in yet
    counter = list(yield_hotp_counters_from_time())[1]  # now's (the middle of the window)
    code = format_hotp_value(hotp_value(secret, counter))
    done = client.post("/accounts/2fa/authenticate/", {"code": code})
    assert done["Location"] == "/"
    assert client.get("/profile/").status_code == 200


def test_it_asks_no_totp_of_a_participant_or_when_mfa_is_not_required(
    client: Client, settings: Settings,
) -> None:
    settings.EVALSERVER_MFA_REQUIRED = True
    factories.user_create("pat")
    _login(client, "pat")
    assert client.get("/").status_code == 200

    settings.EVALSERVER_MFA_REQUIRED = False
    staff = Client()
    factories.user_create("sam", staff=True)
    _login(staff, "sam")
    assert staff.get("/").status_code == 200
    assert not Authenticator.objects.exists()


def test_it_asks_an_account_without_an_address_for_one_and_keeps_its_token(
    client: Client,
) -> None:
    old = factories.user_create("olde", email="")
    token = Token.objects.create(user=old)
    # mandatory verification does not hold it at the login: it has no address to verify
    assert _login(client, "olde") == "/"
    assert client.get("/")["Location"] == "/accounts/email/"
    assert client.get("/submissions/")["Location"] == "/accounts/email/"
    page = client.get("/accounts/email/")
    assert page.status_code == 200 and "Add your email address to continue" in page.content.decode()
    me = Client(HTTP_AUTHORIZATION=f"Token {token.key}").get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "olde"

    added = client.post("/accounts/email/", {"action_add": "", "email": "olde@example.org"})
    assert added.status_code == 302
    # added, waiting for its verification (an email is queued): the site is open again
    assert list(EmailAddress.objects.filter(user=old).values_list(
        "email", "verified")) == [("olde@example.org", False)]
    assert client.get("/").status_code == 200


def test_it_offers_a_configured_github_sign_in_and_sends_to_githubs_authorize_page(
    client: Client, settings: Settings,
) -> None:
    assert "/accounts/github/login/" not in client.get("/accounts/login/").content.decode()
    settings.SOCIALACCOUNT_PROVIDERS = {
        **settings.SOCIALACCOUNT_PROVIDERS,
        "github": {"APPS": [{"client_id": "gh-client-123", "secret": "gh-secret", "key": ""}],
                   "SCOPE": ["user:email"]}}
    page = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/github/login/?process=login"' in page
    assert "/accounts/orcid/login/" not in page and "/accounts/google/login/" not in page

    response = client.post("/accounts/github/login/?process=login")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    query = parse_qs(target.query)
    assert (target.scheme, target.netloc, target.path) == ("https", "github.com",
                                                          "/login/oauth/authorize")
    assert query["client_id"] == ["gh-client-123"]
    assert query["redirect_uri"] == ["http://testserver/accounts/github/login/callback/"]
    assert query["scope"] == ["user:email"] and query["response_type"] == ["code"]
