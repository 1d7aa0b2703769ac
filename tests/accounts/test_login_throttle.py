"""Failed logins are limited per username and address together, per address, and per username
alone at a much higher count, on the API and the login page, with the counts in the shared
Redis cache: past a limit even the right password gets 429 with Retry-After, until the window
ends."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_login_failed
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
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS = 3
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 8
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 5
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    yield settings


def _fresh_address() -> str:
    """A client address of its own, so that no count leaks between tests."""
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


@pytest.fixture
def address() -> str:
    return _fresh_address()


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
        wrong = browser.post("/accounts/login/", {"login": name, "password": "wrong"})
        assert wrong.status_code == 200
    assert _token(address, name, "wrong")[0] == 400  # the API and the page share one count
    page = browser.post("/accounts/login/", {"login": name, "password": RIGHT})
    assert page.status_code == 429
    assert 590 <= int(page["Retry-After"]) <= 600
    assert "Too many failed logins: try again in" in page.content.decode()
    assert "_auth_user_id" not in browser.session


def test_it_refuses_a_locked_login_page_attempt_without_checking_its_password(
        limits: Settings, address: str) -> None:
    name = f"olivia-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    browser = Client(REMOTE_ADDR=address)
    for i in range(5):  # the address's limit
        assert browser.post("/accounts/login/", {"login": f"nobody-{i}-{address}",
                                                 "password": "wrong"}).status_code == 200
    checked: list[str] = []

    def failed(sender: Any, credentials: dict[str, Any], **kwargs: Any) -> None:
        checked.append(credentials["username"])

    user_login_failed.connect(failed)
    try:
        page = browser.post("/accounts/login/", {"login": name, "password": "wrong"})
    finally:
        user_login_failed.disconnect(failed)

    assert page.status_code == 429
    # Django's authenticate() says so of every password it checks and finds wrong: none here
    assert checked == []


def test_it_lets_exactly_the_limit_of_parallel_wrong_passwords_through(
    settings: Settings, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 guesses at once with a limit of 10: each must take its place in the count before
    # its password is checked, or they all read a count under the limit and all get through
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS = 10
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 100
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 50
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    name = f"erin-{uuid.uuid4().hex[:8]}"
    checked, answers = _parallel_guesses(monkeypatch, name, [address] * 20)

    assert len(checked) == 10
    assert sorted(answers) == [(400, "invalid_credentials")] * 10 + [(429, "throttled")] * 10
    assert [caches["throttle"].get(key) for key in _keys(name, address)] == [10, 10, 10]


def _parallel_guesses(monkeypatch: pytest.MonkeyPatch, name: str, addresses: list[str]
                      ) -> tuple[list[str], list[tuple[int, str]]]:
    """A wrong password for `name` from each address, all at once, each password check
    taking long enough for the others to arrive meanwhile; returns the passwords checked
    and the (status, error code) answers."""
    checked: list[str] = []
    lock = threading.Lock()

    def slow_authenticate(request: Any, **credentials: Any) -> Any:
        with lock:
            checked.append(credentials["password"])
        time.sleep(0.2)  # a password hash takes time: the others arrive meanwhile
        return authenticate(request, **credentials)

    monkeypatch.setattr("leaderboard.accounts.api.authenticate", slow_authenticate)
    start = threading.Barrier(len(addresses))
    answers: list[tuple[int, str]] = []

    def guess(i: int, address: str) -> None:
        try:
            start.wait()
            status, body, _ = _token(address, name, f"wrong-{i}")
            with lock:
                answers.append((status, body["error"]["code"]))
        finally:
            connection.close()  # this thread's own database connection

    threads = [threading.Thread(target=guess, args=(i, address))
               for i, address in enumerate(addresses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return checked, answers


def _keys(name: str, address: str) -> tuple[str, str, str]:
    """The cache keys of the username's, the (username, address) pair's and the address's
    counts (leaderboard/accounts/login_throttle.py)."""
    user = hashlib.sha256(name.encode()).hexdigest()
    return (f"login-failures:count:user:{user}", f"login-failures:count:pair:{user}:{address}",
            f"login-failures:count:address:{address}")


def test_it_does_not_lock_a_user_out_from_another_address_by_default(address: str) -> None:
    # the default limits: ten wrong passwords from one address lock the username there only,
    # so that anyone who knows a username cannot lock its owner out from everywhere
    name = f"grace-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for _ in range(10):
        assert _token(address, name, "wrong")[0] == 400

    assert _token(_fresh_address(), name, RIGHT)[0] == 200


def test_it_locks_a_user_out_from_the_address_that_guessed_by_default(address: str) -> None:
    name = f"heidi-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for _ in range(10):
        assert _token(address, name, "wrong")[0] == 400

    status, body, retry_after = _token(address, name, RIGHT)
    assert (status, body["error"]["code"]) == (429, "throttled")
    assert retry_after is not None and 890 <= int(retry_after) <= 900
    assert [caches["throttle"].get(key) for key in _keys(name, address)] == [10, 10, 10]


def test_it_locks_a_username_out_everywhere_at_its_own_count_from_many_addresses(
        limits: Settings, address: str) -> None:
    # 8 failures a username: 3 from each of two addresses and 2 from a third, none of them
    # past its pair's limit of 3; then the username is refused from any address
    name = f"ivan-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    guessers = [_fresh_address() for _ in range(3)]
    for guesser, tries in zip(guessers, (3, 3, 2), strict=True):
        for _ in range(tries):
            assert _token(guesser, name, "wrong")[0] == 400
    assert [caches["throttle"].get(_keys(name, guesser)[1]) for guesser in guessers] == [3, 3, 2]

    status, body, retry_after = _token(address, name, RIGHT)
    assert (status, body["error"]["code"]) == (429, "throttled")
    assert retry_after is not None and 590 <= int(retry_after) <= 600
    # the refused attempt is not counted, on the username nor on the new address
    assert [caches["throttle"].get(key) for key in _keys(name, address)] == [8, 0, 0]


def test_it_keeps_the_failures_of_other_addresses_after_a_success(limits: Settings,
                                                                  address: str) -> None:
    # a success clears its own address's failures at the username, not those others made:
    # the owner logging in must not give someone guessing from many addresses a new allowance
    name = f"judy-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    guesser, owner = _fresh_address(), address
    for _ in range(3):
        assert _token(guesser, name, "wrong")[0] == 400
    for _ in range(2):
        assert _token(owner, name, "wrong")[0] == 400
    assert _token(owner, name, RIGHT)[0] == 200
    assert [caches["throttle"].get(key) for key in _keys(name, owner)] == [5, None, 2]

    for _ in range(3):
        assert _token(_fresh_address(), name, "wrong")[0] == 400
    assert _token(owner, name, RIGHT)[0] == 429  # 8 failures at the username


def test_it_lets_exactly_the_usernames_limit_of_parallel_guesses_from_many_addresses_through(
    settings: Settings, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 guesses at once, each from an address of its own, with a username limit of 10
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS = 10
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 10
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 50
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    name = f"kate-{uuid.uuid4().hex[:8]}"
    checked, answers = _parallel_guesses(monkeypatch, name, [_fresh_address() for _ in range(20)])

    assert len(checked) == 10
    assert sorted(answers) == [(400, "invalid_credentials")] * 10 + [(429, "throttled")] * 10
    assert caches["throttle"].get(_keys(name, address)[0]) == 10


def test_it_throttles_the_admin_login_page_like_the_api(limits: Settings, address: str) -> None:
    name = f"mallory-{uuid.uuid4().hex[:8]}"
    factories.user_create(name, staff=True)
    browser = Client(REMOTE_ADDR=address)
    for _ in range(2):
        wrong = browser.post("/admin/login/", {"username": name, "password": "wrong"})
        assert wrong.status_code == 200
    assert _token(address, name, "wrong")[0] == 400  # the API and the admin share one count

    page = browser.post("/admin/login/?next=/admin/", {"username": name, "password": RIGHT})
    assert page.status_code == 429
    assert 590 <= int(page["Retry-After"]) <= 600
    assert "Too many failed logins: try again in" in page.content.decode()
    assert "_auth_user_id" not in browser.session


def test_it_clears_the_pairs_count_after_an_admin_login(limits: Settings, address: str) -> None:
    name = f"niaj-{uuid.uuid4().hex[:8]}"
    factories.user_create(name, staff=True)
    browser = Client(REMOTE_ADDR=address)
    for _ in range(2):
        assert browser.post("/admin/login/", {"username": name, "password": "wrong"}
                            ).status_code == 200

    done = browser.post("/admin/login/?next=/admin/", {"username": name, "password": RIGHT})
    assert (done.status_code, done["Location"]) == (302, "/admin/")
    assert [caches["throttle"].get(key) for key in _keys(name, address)] == [2, None, 2]
