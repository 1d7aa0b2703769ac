"""allauth's emails (verification, password reset) leave by the notify queue's worker: the web
request renders them and queues `leaderboard.tasks.cpu.send_account_email` by name when its
transaction commits (leaderboard/accounts/adapters.py, leaderboard/queue.py); the task sends
what it was given (Django's locmem mail backend here: pytest-django's)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from leaderboard import queue
from leaderboard.tasks.cpu import send_account_email
from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"
NEW_PASSWORD = "another-long-password"


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """The messages sent by name, instead of reaching a broker."""
    messages: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(queue, "message_send",
                        lambda name, kwargs: messages.append((name, kwargs)))
    return messages


def _link(body: str, path: str) -> str:
    found = re.findall(rf"http://testserver({re.escape(path)}\S+/)", body)
    assert len(found) == 1, body
    return str(found[0])


def test_it_queues_the_verification_email_and_the_task_sends_it(
    client: Client, queued: list[tuple[str, dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/accounts/signup/", {
            "username": "carol", "email": "carol@example.org", "password1": PASSWORD,
            "password2": PASSWORD})
    assert response.status_code == 302
    assert mail.outbox == []  # nothing sent in the request
    assert [name for name, _ in queued] == ["leaderboard.tasks.cpu.send_account_email"]
    message = queued[0][1]
    assert set(message) == {"subject", "body", "html", "to", "from_email"}
    assert message["to"] == ["carol@example.org"]
    assert message["subject"] == "[evalserver] Please Confirm Your Email Address"

    assert send_account_email(**message) == 1
    (sent,) = mail.outbox
    assert (sent.subject, sent.to, sent.body) == (message["subject"], ["carol@example.org"],
                                                  message["body"])
    link = _link(sent.body, "/accounts/confirm-email/")
    address = EmailAddress.objects.get(user__username="carol")
    assert (address.email, address.primary, address.verified) == ("carol@example.org", True,
                                                                   False)
    # mandatory verification: no login before the link is followed, nor a token
    assert client.post("/accounts/login/", {"login": "carol", "password": PASSWORD}
                       )["Location"] == "/accounts/confirm-email/"
    token = Client().post("/api/auth/token/", {"username": "carol", "password": PASSWORD})
    assert (token.status_code, token.json()["error"]["code"]) == (403, "email_unverified")
    assert client.get(link).status_code == 200  # a page with a button: a GET changes nothing
    assert client.post(link).status_code == 302
    address.refresh_from_db()
    assert address.verified
    done = client.post("/accounts/login/", {"login": "carol", "password": PASSWORD})
    assert done["Location"] == "/"
    assert Client().post("/api/auth/token/", {"username": "carol", "password": PASSWORD}
                         ).status_code == 200


def test_it_queues_the_password_reset_email_and_its_link_resets_the_password(
    client: Client, queued: list[tuple[str, dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    factories.user_create("dave")
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post("/accounts/password/reset/", {"email": "dave@example.org"})
    assert asked["Location"] == "/accounts/password/reset/done/"
    assert mail.outbox == []
    (name, message), = queued
    assert message["to"] == ["dave@example.org"]
    send_account_email(**message)
    link = _link(mail.outbox[0].body, "/accounts/password/reset/key/")

    form = client.get(link)  # allauth moves the key into the session and redirects
    assert form.status_code == 302
    changed = client.post(form["Location"], {"password1": NEW_PASSWORD,
                                             "password2": NEW_PASSWORD})
    assert changed["Location"] == "/accounts/password/reset/key/done/"
    assert User.objects.get(username="dave").check_password(NEW_PASSWORD)


def test_it_sends_no_email_to_an_unknown_address_but_answers_the_same(
    client: Client, queued: list[tuple[str, dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert asked["Location"] == "/accounts/password/reset/done/"
    # allauth's ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS: an "unknown account" note to the address
    assert [message["to"] for _, message in queued] in ([], [["nobody@example.org"]])
