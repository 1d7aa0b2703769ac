"""The API's rate limits (docs/api.md §3, 'Rate limits'): per client address without a user,
per user with one, and the narrower scopes of uploads and token creation; every answer says
where the caller stands in RateLimit-* headers, and past a limit the answer is 429 in the
error shape with Retry-After. The counts are in the shared Redis cache."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from django.core.cache import caches
from django.db import connection
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.common.throttling import throttle_redis
from tests import factories
from tests.api_support import token_client

pytestmark = pytest.mark.django_db

RATES = {"anon": "3/minute", "user": "5/minute", "uploads": "2/hour", "token": "2/minute"}


@pytest.fixture(autouse=True)
def rates(settings: Settings) -> Iterator[Settings]:
    """Real rates (the test settings turn them off), small enough to run out of."""
    settings.EVALSERVER_THROTTLE_RATES = dict(RATES)
    yield settings


@pytest.fixture
def address() -> str:
    """A client address of its own per test, so that no count leaks between tests."""
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def _limits(response: object) -> tuple[str | None, ...]:
    headers = response.headers  # type: ignore[attr-defined]
    return tuple(headers.get(name) for name in (
        "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Policy"))


def _assert_throttled(response: object) -> None:
    """A 429 in the error shape, with Retry-After, which its message and RateLimit-Reset
    agree with."""
    assert response.status_code == 429  # type: ignore[attr-defined]
    retry_after = response.headers["Retry-After"]  # type: ignore[attr-defined]
    assert 1 <= int(retry_after) <= 3600
    assert response.json() == {"error": {  # type: ignore[attr-defined]
        "code": "throttled",
        "message": f"Request was throttled. Expected available in {retry_after} seconds."}}
    assert response.headers["RateLimit-Remaining"] == "0"  # type: ignore[attr-defined]
    assert response.headers["RateLimit-Reset"] == retry_after  # type: ignore[attr-defined]


def test_it_counts_an_anonymous_clients_requests_down_in_the_headers(address: str) -> None:
    client = APIClient(REMOTE_ADDR=address)
    answers = [client.get("/api/benchmarks/") for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [_limits(a) for a in answers] == [
        ("3", "2", "3;w=60"), ("3", "1", "3;w=60"), ("3", "0", "3;w=60")]
    # the first request counted leaves the window a minute after it came
    assert [a.headers["RateLimit-Reset"] for a in answers][0] == "60"
    assert all(59 <= int(a.headers["RateLimit-Reset"]) <= 60 for a in answers)
    refused = client.get("/api/benchmarks/")
    _assert_throttled(refused)
    assert _limits(refused) == ("3", "0", "3;w=60")
    # the count is in the shared cache, where every web process reads it: the refused request
    # is not in it
    assert throttle_redis().zcard(caches["throttle"].make_key(f"throttle_anon_{address}")) == 3
    # another address has its own allowance
    assert _limits(APIClient(REMOTE_ADDR=address + "1").get("/api/benchmarks/")) == (
        "3", "2", "3;w=60")


def test_it_limits_every_api_route_the_schema_included(address: str) -> None:
    client = APIClient(REMOTE_ADDR=address)
    assert client.get("/api/benchmarks/").status_code == 200
    assert client.get("/api/submissions/").status_code == 401  # not counted: refused before
    assert _limits(client.get("/api/schema/")) == ("3", "1", "3;w=60")
    assert _limits(client.get("/api/benchmarks/no-such/")) == ("3", "0", "3;w=60")
    _assert_throttled(client.get("/api/schema/"))


def test_it_counts_a_users_requests_wherever_they_come_from(address: str) -> None:
    user = factories.user_create(f"u-{uuid.uuid4().hex[:8]}")
    client = token_client(user)
    remaining = []
    for i in range(5):
        answer = client.get("/api/benchmarks/", REMOTE_ADDR=f"{address}{i % 2}")
        remaining.append(_limits(answer))
    assert remaining == [("5", str(n), "5;w=60") for n in (4, 3, 2, 1, 0)]
    _assert_throttled(client.get("/api/submissions/"))
    # another user is not held back
    other = token_client(factories.user_create(f"v-{uuid.uuid4().hex[:8]}"))
    assert _limits(other.get("/api/benchmarks/")) == ("5", "4", "5;w=60")


def test_it_limits_uploads_apart_from_the_lists_they_are_posted_to() -> None:
    client = token_client(factories.user_create(f"u-{uuid.uuid4().hex[:8]}"))
    # counted before the upload is read: even a refused one (400) takes its place
    first = client.post("/api/submissions/", {}, format="json")
    second = client.post("/api/submissions/", {}, format="json")
    assert [first.status_code, second.status_code] == [400, 400]
    # the closest limit is shown: 2 uploads an hour before 5 requests a minute
    assert [_limits(first), _limits(second)] == [("2", "1", "2;w=3600"), ("2", "0", "2;w=3600")]
    assert 3599 <= int(second.headers["RateLimit-Reset"]) <= 3600
    _assert_throttled(client.post("/api/submissions/", {}, format="json"))
    # the list's GET is held to the user's limit only (its 4th request of 5)
    listed = client.get("/api/submissions/")
    assert (listed.status_code, _limits(listed)) == (200, ("5", "1", "5;w=60"))


def test_it_limits_bundle_uploads_by_the_same_scope() -> None:
    client = token_client(factories.host_create(f"s-{uuid.uuid4().hex[:8]}"))
    answers = [client.post("/api/bundles/", {}, format="multipart") for _ in range(2)]
    assert [a.status_code for a in answers] == [400, 400]
    assert [_limits(a) for a in answers] == [("2", "1", "2;w=3600"), ("2", "0", "2;w=3600")]
    _assert_throttled(client.post("/api/bundles/", {}, format="multipart"))


def test_it_limits_token_creation_per_address_the_right_password_included(address: str) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    client = APIClient(REMOTE_ADDR=address)
    wrong = client.post("/api/auth/token/", {"username": name, "password": "x"}, format="json")
    right = client.post("/api/auth/token/", {"username": name,
                                             "password": "a-long-test-password"}, format="json")
    assert [wrong.status_code, right.status_code] == [400, 200]
    assert [_limits(wrong), _limits(right)] == [("2", "1", "2;w=60"), ("2", "0", "2;w=60")]
    _assert_throttled(client.post("/api/auth/token/", {"username": name,
                                                       "password": "a-long-test-password"},
                                  format="json"))


def test_it_counts_each_client_behind_a_trusted_proxy_apart(settings: Settings,
                                                            address: str) -> None:
    settings.EVALSERVER_TRUSTED_PROXIES = ["172.18.0.0/16"]
    proxy = "172.18.0.5"
    first = APIClient(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=address)
    second = APIClient(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=address + "1")
    for _ in range(3):
        assert first.get("/api/benchmarks/").status_code == 200
    _assert_throttled(first.get("/api/benchmarks/"))
    assert _limits(second.get("/api/benchmarks/")) == ("3", "2", "3;w=60")
    # a client talking to the server directly cannot pick an address per request
    direct = address + "2"
    for i in range(3):
        assert APIClient(REMOTE_ADDR=direct, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").get(
            "/api/benchmarks/").status_code == 200
    _assert_throttled(APIClient(REMOTE_ADDR=direct, HTTP_X_FORWARDED_FOR="192.0.2.9").get(
        "/api/benchmarks/"))


def test_it_lets_requests_through_when_the_cache_is_unreachable(
        address: str, settings: Settings) -> None:
    settings.CACHES = {**settings.CACHES, "throttle": {  # a port nothing listens on
        **settings.CACHES["throttle"], "LOCATION": "redis://127.0.0.1:1/0"}}
    client = APIClient(REMOTE_ADDR=address)
    answers = [client.get("/api/benchmarks/") for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5
    assert "RateLimit-Limit" not in answers[0].headers


def test_it_lets_exactly_the_limit_of_a_burst_through(address: str, settings: Settings) -> None:
    # 24 requests at once with a limit of 12: each takes its place in one atomic step, or
    # they all read the same count and all get through
    settings.EVALSERVER_THROTTLE_RATES = {**RATES, "anon": "12/minute", "user": None}
    start = threading.Barrier(24)
    statuses: list[int] = []
    lock = threading.Lock()

    def request() -> None:
        try:
            start.wait()
            status = APIClient(REMOTE_ADDR=address).get("/api/benchmarks/").status_code
            with lock:
                statuses.append(status)
        finally:
            connection.close()  # this thread's own database connection

    threads = [threading.Thread(target=request) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] * 12 + [429] * 12
