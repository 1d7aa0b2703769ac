"""Sign-up, log in and out, and the profile page's API token."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.authtoken.models import Token

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"


def test_it_signs_up_then_logs_in_and_out(client: Client, settings: Settings) -> None:
    settings.ACCOUNT_EMAIL_VERIFICATION = "none"  # verification: tests/accounts/test_signup_*
    assert client.get("/signup/?next=/submit/")["Location"] == "/accounts/signup/?next=/submit/"
    assert client.get("/login/")["Location"] == "/accounts/login/"
    signup = client.post("/accounts/signup/", {
        "username": "carol", "email": "carol@example.org", "password1": PASSWORD,
        "password2": PASSWORD})
    assert signup.status_code == 302 and signup["Location"] == "/"
    carol = User.objects.get(username="carol")
    assert carol.email == "carol@example.org"
    client.post("/logout/")

    login = client.post("/accounts/login/", {"login": "carol", "password": PASSWORD})
    assert login.status_code == 302 and login["Location"] == "/"
    home = client.get("/").content.decode()
    assert '<a href="/profile/" class="username">carol</a>' in home
    assert 'action="/logout/"' in home

    assert client.get("/logout/").status_code == 200  # a page asking to confirm: no log out
    assert '<a href="/profile/" class="username">carol</a>' in client.get("/").content.decode()
    logout = client.post("/logout/")
    assert logout.status_code == 302
    assert 'href="/accounts/login/"' in client.get("/").content.decode()
    # and by the email address
    login = client.post("/accounts/login/", {"login": "carol@example.org", "password": PASSWORD})
    assert login.status_code == 302 and login["Location"] == "/"


def test_it_shows_sign_up_errors_on_the_form(client: Client) -> None:
    factories.user_create("carol")

    response = client.post("/accounts/signup/", {
        "username": "carol", "email": "carol@example.org", "password1": PASSWORD,
        "password2": "something-else"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "A user with that username already exists." in page
    # the address is not confirmed as taken (allauth's ACCOUNT_PREVENT_ENUMERATION: its owner
    # is emailed instead, when the rest of the form is right)
    assert "already registered with this email" not in page
    assert "You must type the same password each time." in page
    assert User.objects.filter(username="carol").count() == 1


def test_it_creates_and_revokes_the_api_token(client: Client) -> None:
    user = factories.user_create("dave")
    client.force_login(user)

    before = client.get("/profile/").content.decode()
    assert "You have no API token." in before and ">Create token</button>" in before
    assert client.get("/profile/token/create/").status_code == 405

    created = client.post("/profile/token/create/")
    assert created.status_code == 302 and created["Location"] == "/profile/"
    key = Token.objects.get(user=user).key
    page = client.get("/profile/").content.decode()
    assert f'value="{key}"' in page and ">Revoke token</button>" in page
    # no benchmark yet: placeholders; the server's own URL always (Django's test client's)
    assert (f"EVALSERVER_URL=http://testserver EVALSERVER_TOKEN={key} evalserver-client submit "
            "--benchmark BENCHMARK --model NAME EXAMPLE_SET=preds.npy") in page

    client.post("/profile/token/create/")  # a second create keeps the same key
    assert list(Token.objects.filter(user=user).values_list("key", flat=True)) == [key]

    revoked = client.post("/profile/token/revoke/")
    assert revoked.status_code == 302
    assert not Token.objects.filter(user=user).exists()
    assert key not in client.get("/profile/").content.decode()


def test_it_sends_anonymous_visitors_to_log_in(client: Client) -> None:
    for path in ("/profile/", "/submit/", "/submissions/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"] == f"/login/?next={path}"
    assert client.post("/profile/token/create/").status_code == 302
    assert not Token.objects.exists()


def test_it_names_the_benchmark_in_hand_in_the_profiles_command(
    client: Client, settings: Settings
) -> None:
    """The newest submission's benchmark, else the first one listed (by slug), never a hidden
    one; with the server's own URL, so that the token goes nowhere else."""
    settings.ALLOWED_HOSTS = ["lab.example.org"]
    user = factories.user_create("erin")
    client.force_login(user)
    key = Token.objects.create(user=user).key
    for slug, hidden in (("aaa-hidden", True), ("mnist", False), ("toy", False)):
        Benchmark.objects.create(slug=slug, name=slug, num_classes=10, hidden=hidden,
                                 main_example_set=f"{slug}-test")

    def command() -> str:
        page = client.get("/profile/", HTTP_HOST="lab.example.org", secure=True)
        return re.findall(r"<code>(EVALSERVER_URL=.*?)</code>", page.content.decode())[0]

    assert command() == (f"EVALSERVER_URL=https://lab.example.org EVALSERVER_TOKEN={key} "
                         "evalserver-client submit --benchmark mnist --model NAME "
                         "mnist-test=preds.npy")
    for slug in ("toy", "aaa-hidden"):  # the newest first, unless its benchmark is hidden
        Submission.objects.create(owner=user, benchmark=Benchmark.objects.get(slug=slug),
                                  model_name=f"on {slug}")
    assert command().endswith("--benchmark toy --model NAME toy-test=preds.npy")
