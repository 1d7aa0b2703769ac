"""Who may sign up (EVALSERVER_SIGNUP_MODE: leaderboard/accounts/adapters.py): open, domains,
invitation (a code used once: leaderboard/accounts/invitations.py, `manage.py invite`) and
closed; social sign-ups held to the same modes."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from allauth.core import context
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.db import connection
from django.test import Client, RequestFactory
from pytest_django.fixtures import Settings

from leaderboard.accounts.adapters import SocialAccountAdapter
from leaderboard.accounts.forms import SocialSignupForm
from leaderboard.accounts.invitations import invitation_create, invitation_use
from leaderboard.accounts.models import SignupInvitation
from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"


def _signup(client: Client, username: str, email: str, **extra: str) -> Any:
    return client.post("/accounts/signup/", {"username": username, "email": email,
                                             "password1": PASSWORD, "password2": PASSWORD,
                                             **extra})


def test_it_admits_anyone_in_open_mode_by_default(client: Client) -> None:
    response = _signup(client, "carol", "carol@anywhere.example")
    # mandatory verification (DEBUG=false): signed up, then asked to verify the address
    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    assert User.objects.get(username="carol").email == "carol@anywhere.example"


def test_it_refuses_every_sign_up_in_closed_mode(client: Client, settings: Settings) -> None:
    settings.EVALSERVER_SIGNUP_MODE = "closed"
    page = client.get("/accounts/signup/")
    assert page.status_code == 200 and "<h1>Sign-up closed</h1>" in page.content.decode()
    response = _signup(client, "carol", "carol@example.org")
    assert "<h1>Sign-up closed</h1>" in response.content.decode()
    assert not User.objects.filter(username="carol").exists()


def test_it_admits_only_the_allowed_domains_in_domains_mode(client: Client,
                                                            settings: Settings) -> None:
    settings.EVALSERVER_SIGNUP_MODE = "domains"
    settings.EVALSERVER_SIGNUP_ALLOWED_DOMAINS = ["example.org", "lab.example.net"]

    refused = _signup(client, "mallory", "mallory@sub.example.org")
    assert refused.status_code == 200
    assert ("Sign-up is open to email addresses at example.org, lab.example.net only."
            in refused.content.decode())
    assert not User.objects.filter(username="mallory").exists()

    admitted = _signup(client, "carol", "Carol@Lab.Example.net")
    assert admitted.status_code == 302
    assert User.objects.get(username="carol").email == "carol@lab.example.net"


def test_it_requires_an_unused_invitation_code_in_invitation_mode(client: Client,
                                                                  settings: Settings) -> None:
    settings.EVALSERVER_SIGNUP_MODE = "invitation"
    inviter = factories.user_create("host", staff=True)
    invitation = invitation_create(created_by=inviter)

    assert 'name="invitation"' in client.get("/accounts/signup/").content.decode()
    missing = _signup(client, "carol", "carol@example.org")
    assert missing.status_code == 200 and "This field is required." in missing.content.decode()
    wrong = _signup(client, "carol", "carol@example.org", invitation="not-a-code")
    assert ("This invitation code is unknown, already used, or for another address."
            in wrong.content.decode())
    assert not User.objects.filter(username="carol").exists()

    admitted = _signup(client, "carol", "carol@example.org", invitation=invitation.code)
    assert admitted.status_code == 302
    carol = User.objects.get(username="carol")
    invitation.refresh_from_db()
    assert (invitation.used_by, invitation.created_by) == (carol, inviter)
    assert invitation.used_at is not None

    again = _signup(Client(), "dave", "dave@example.org", invitation=invitation.code)
    assert ("This invitation code is unknown, already used, or for another address."
            in again.content.decode())
    assert not User.objects.filter(username="dave").exists()


def test_it_admits_only_its_address_with_an_invitation_for_one(client: Client,
                                                               settings: Settings) -> None:
    settings.EVALSERVER_SIGNUP_MODE = "invitation"
    invitation = invitation_create(email="Carol@Example.org")
    other = _signup(client, "mallory", "mallory@example.org", invitation=invitation.code)
    assert "for another address" in other.content.decode()
    admitted = _signup(client, "carol", "carol@example.org", invitation=invitation.code)
    assert admitted.status_code == 302
    assert SignupInvitation.objects.get().used_by == User.objects.get(username="carol")


@pytest.mark.django_db(transaction=True)
def test_it_gives_one_invitation_to_one_of_two_racing_sign_ups() -> None:
    invitation = invitation_create()
    users = [factories.user_create(f"racer{i}") for i in range(2)]
    barrier, results = threading.Barrier(2), []

    def take(user: User) -> None:
        try:
            barrier.wait()
            results.append(invitation_use(code=invitation.code, user=user))
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, True]
    invitation.refresh_from_db()
    assert invitation.used_by in users


def test_it_prints_new_invitation_codes_from_the_command() -> None:
    factories.user_create("host", staff=True)
    out = io.StringIO()
    call_command("invite", "--count", "2", "--email", "new@example.org", "--by", "host",
                 stdout=out)
    codes = out.getvalue().split()
    stored = SignupInvitation.objects.order_by("pk")
    assert codes == [each.code for each in stored] and len(set(codes)) == 2
    assert {(each.email, each.created_by.username if each.created_by else None, each.used_by)
            for each in stored} == {("new@example.org", "host", None)}


def _sociallogin(email: str) -> SocialLogin:
    user = User(username="social", email=email)
    return SocialLogin(user=user, account=SocialAccount(provider="github", uid="1"))


def test_it_holds_social_sign_ups_to_the_same_modes(settings: Settings) -> None:
    adapter = SocialAccountAdapter()
    request = RequestFactory().get("/accounts/github/login/callback/")
    request._messages = CookieStorage(request)  # type: ignore[attr-defined]

    def opens(mode: str, email: str) -> bool:
        settings.EVALSERVER_SIGNUP_MODE = mode
        return adapter.is_open_for_signup(request, _sociallogin(email))

    settings.EVALSERVER_SIGNUP_ALLOWED_DOMAINS = ["example.org"]
    assert [opens("open", "a@else.example"), opens("closed", "a@example.org"),
            opens("domains", "a@example.org"), opens("domains", "a@else.example"),
            opens("invitation", "a@else.example")] == [True, False, True, False, True]
    assert [str(message) for message in request._messages] == [  # type: ignore[attr-defined]
        "Sign-up is open to email addresses at example.org only."]


def test_it_makes_an_invitation_with_a_fresh_code_in_the_admin(client: Client) -> None:
    host = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    client.force_login(host)
    added = client.post("/admin/leaderboard/signupinvitation/add/",
                        {"email": "guest@example.org", "_save": "Save"})
    assert added.status_code == 302, added.content.decode()[:2000]
    invitation = SignupInvitation.objects.get()
    assert (invitation.email, invitation.created_by, invitation.used_by) == (
        "guest@example.org", host, None)
    assert len(invitation.code) >= 20
    assert invitation.code in client.get("/admin/leaderboard/signupinvitation/").content.decode()
    # the providers' apps are the settings', never rows: no admin page for them
    assert client.get("/admin/socialaccount/socialapp/").status_code == 404


def test_it_asks_a_social_sign_up_for_an_invitation_and_takes_it(settings: Settings) -> None:
    settings.EVALSERVER_SIGNUP_MODE = "invitation"
    invitation = invitation_create()
    request = RequestFactory().post("/accounts/3rdparty/signup/")
    request.session = SessionStore()  # type: ignore[assignment]
    request.user = AnonymousUser()
    request._messages = CookieStorage(request)  # type: ignore[attr-defined]

    def form(**data: str) -> SocialSignupForm:
        return SocialSignupForm(sociallogin=_sociallogin("new@example.org"), data={
            "email": "new@example.org", "username": "newbie", **data})

    assert form().errors["invitation"] == ["This field is required."]
    assert form(invitation="wrong").errors["invitation"] == [
        "This invitation code is unknown, already used, or for another address."]
    good = form(invitation=invitation.code)
    assert good.is_valid(), good.errors
    sociallogin = good.sociallogin
    with context.request_context(request):
        SocialAccountAdapter().save_user(request, sociallogin, form=good)
    user = User.objects.get(username="newbie")
    invitation.refresh_from_db()
    assert (invitation.used_by, user.email) == (user, "new@example.org")
    assert SocialAccount.objects.get().user == user
    assert form(invitation=invitation.code).errors["invitation"] == [
        "This invitation code is unknown, already used, or for another address."]
