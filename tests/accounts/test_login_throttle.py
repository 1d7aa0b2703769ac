"""Failed logins are limited per username and per address, on the API and the login page,
with the counts in the shared Redis cache: past the limit even the right password gets 429
with Retry-After, until the window ends."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.core.cache import caches
from django.db import connection
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from tests import factories

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
RIGHT = "a-long-test-password"  # tests/factories.py gives every user this one


@pytest.fixture
def limits(settings: Settings) -> Iterator[Settings]:
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 3
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 5
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    yield settings


@pytest.fixture
def address() -> str:
    """A client address of its own per test, so that no count leaks between tests."""
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def _token(address: str, username: str, password: str) -> tuple[int, dict, str | None]:
    response = APIClient(REMOTE_ADDR=address).post(
        TOKEN, {"username": username, "password": password}, format="json")
    return response.status_code, response.json(), response.headers.get("Retry-After")


def test_it_refuses_the_right_password_after_too_many_wrong_ones(limits: Settings,
                                                                 address: str) -> None:
    name = f"alice-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for _ in range(3):
        status, body, _ = _token(address, name, "wrong")
        assert (status, body["error"]["code"]) == (400, "invalid_credentials")
    status, body, retry_after = _token(address, name, RIGHT)
    assert status == 429
    assert body["error"]["code"] == "throttled"
    assert retry_after is not None and 590 <= int(retry_after) <= 600
    # the wait is said once, in the header's number of seconds
    assert body["error"]["message"] == f"too many failed logins; try again in {retry_after} s"
    # the count is in the shared Redis cache, where every web process reads it; the refused
    # attempt is not counted
    assert caches["throttle"].get(f"login-failures:count:address:{address}") == 3


def test_it_limits_an_address_trying_many_usernames(limits: Settings,
                                                    address: str) -> None:
    factories.user_create(f"bob-{address}")
    for i in range(5):
        assert _token(address, f"nobody-{i}-{address}", "guess")[0] == 400
    status, body, retry_after = _token(address, f"bob-{address}", RIGHT)
    assert (status, body["error"]["code"]) == (429, "throttled") and retry_after
    # the same user from another address is not held back
    assert _token(address + "9", f"bob-{address}", RIGHT)[0] == 200


def test_it_clears_a_usernames_count_after_a_success(limits: Settings,
                                                     address: str) -> None:
    name = f"carol-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for _ in range(2):
        assert _token(address, name, "wrong")[0] == 400
    assert _token(address, name, RIGHT)[0] == 200
    for _ in range(2):
        assert _token(address, name, "wrong")[0] == 400
    assert _token(address, name, RIGHT)[0] == 200


def test_it_throttles_the_login_page_like_the_api(limits: Settings, address: str) -> None:
    name = f"dave-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    browser = Client(REMOTE_ADDR=address)
    for _ in range(2):
        assert browser.post("/login/", {"username": name, "password": "wrong"}).status_code == 200
    assert _token(address, name, "wrong")[0] == 400  # the API and the page share one count
    page = browser.post("/login/", {"username": name, "password": RIGHT})
    assert page.status_code == 429
    assert 590 <= int(page["Retry-After"]) <= 600
    assert "Too many failed logins: try again in" in page.content.decode()
    assert "_auth_user_id" not in browser.session


def test_it_lets_exactly_the_limit_of_parallel_wrong_passwords_through(
    settings: Settings, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 guesses at once with a limit of 10: each must take its place in the count before
    # its password is checked, or they all read a count under the limit and all get through
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 10
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 50
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    name = f"erin-{uuid.uuid4().hex[:8]}"
    checked: list[str] = []
    lock = threading.Lock()

    def slow_authenticate(request: Any, **credentials: Any) -> Any:
        with lock:
            checked.append(credentials["password"])
        time.sleep(0.2)  # a password hash takes time: the others arrive meanwhile
        return authenticate(request, **credentials)

    monkeypatch.setattr("leaderboard.accounts.api.authenticate", slow_authenticate)
    start = threading.Barrier(20)
    answers: list[tuple[int, str]] = []

    def guess(i: int) -> None:
        try:
            start.wait()
            status, body, _ = _token(address, name, f"wrong-{i}")
            with lock:
                answers.append((status, body["error"]["code"]))
        finally:
            connection.close()  # this thread's own database connection

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(checked) == 10
    assert sorted(answers) == [(400, "invalid_credentials")] * 10 + [(429, "throttled")] * 10
    user = hashlib.sha256(name.encode()).hexdigest()
    assert caches["throttle"].get(f"login-failures:count:user:{user}") == 10
    assert caches["throttle"].get(f"login-failures:count:address:{address}") == 10
