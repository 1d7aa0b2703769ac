"""The failed-login lockout behind the reverse proxy counts each client's own address (read
from the trusted proxy's X-Forwarded-For by evalserver/client_address.py), so one client
locked out leaves the others behind the same proxy alone; and `manage.py lockout_lift`
lifts a lockout before its window ends."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from tests import factories

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
RIGHT = "a-long-test-password"  # tests/factories.py gives every user this one
PROXY = "172.18.0.5"


@pytest.fixture
def limits(settings: Settings) -> Iterator[Settings]:
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS = 3
    settings.EVALSERVER_LOGIN_FAILURES_PER_USER = 8
    settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS = 5
    settings.EVALSERVER_LOGIN_WINDOW_SECONDS = 600
    settings.EVALSERVER_TRUSTED_PROXIES = ["172.18.0.0/16"]
    yield settings


def _address() -> str:
    """A client address of its own per call, so that no count leaks between tests."""
    return f"203.0.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def _token(client: APIClient, username: str, password: str) -> int:
    return client.post(TOKEN, {"username": username, "password": password},
                       format="json").status_code


def _address_count(address: str) -> int | None:
    count: int | None = caches["throttle"].get(f"login-failures:count:address:{address}")
    return count


def test_it_locks_out_one_client_behind_the_proxy_not_another(limits: Settings) -> None:
    locked, other = _address(), _address()
    name = f"bob-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    # what nginx sends (docker/nginx/proxy.conf): the client's address as X-Forwarded-For
    attacker = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=locked)
    for i in range(5):
        assert _token(attacker, f"nobody-{i}-{locked}", "guess") == 400
    assert _token(attacker, name, RIGHT) == 429

    # the other client, through the same proxy, logs in
    assert _token(APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=other), name, RIGHT) == 200
    assert (_address_count(locked), _address_count(other), _address_count(PROXY)) == (
        5, 0, None)


def test_it_walks_back_through_trusted_proxies_only(limits: Settings) -> None:
    client = _address()
    # a load balancer (10.0.0.7, trusted too) in front of nginx: nginx appends its peer
    limits.EVALSERVER_TRUSTED_PROXIES = ["172.18.0.0/16", "10.0.0.7"]
    chained = APIClient(REMOTE_ADDR=PROXY,
                        HTTP_X_FORWARDED_FOR=f"198.51.100.1, {client}, 10.0.0.7")
    assert _token(chained, f"nobody-{client}", "guess") == 400
    # the client's own claim (198.51.100.1), left of its address, is never read
    assert (_address_count(client), _address_count("198.51.100.1")) == (1, None)


def test_it_ignores_forwarded_for_from_a_peer_that_is_no_trusted_proxy(limits: Settings) -> None:
    peer = "198.51.100." + str(uuid.uuid4().int % 250)
    name = f"carol-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for i in range(5):
        # a fresh claimed address each time: all counted on the peer's own
        direct = APIClient(REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=_address())
        assert _token(direct, f"nobody-{i}-{peer}", "guess") == 400
    assert _token(APIClient(REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=_address()), name, RIGHT) == 429
    assert _address_count(peer) == 5


def test_it_counts_the_clients_of_unparsable_hops_as_one_unknown_address(
        limits: Settings) -> None:
    # what a trusted proxy wrote is no address: the client is `unknown`
    # (evalserver/client_address.py), never the proxy, and a new spelling is no new allowance
    caches["throttle"].delete_many([f"login-failures:count:address:unknown{end}"
                                    for end in ("", ":since")])  # this Redis database's own
    name = f"frank-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for i, hop in enumerate(["garbage", "1.2.3.4:5678", "[::1]:80", "", "garbage-5"]):
        client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=hop)
        assert _token(client, f"nobody-{i}-{name}", "guess") == 400
    assert _token(APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="garbage-6"), name,
                  RIGHT) == 429
    assert (_address_count("unknown"), _address_count(PROXY)) == (5, None)
    # and an operator lifts it by that name: the address's own count and its 5 pairs
    assert _call("lockout_lift", "--address", "unknown") == "cleared 6 failed-login counts\n"
    assert _address_count("unknown") is None


def test_it_lifts_a_usernames_lockout(limits: Settings) -> None:
    name = f"dave-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=_address())
    for _ in range(3):
        assert _token(client, name, "wrong") == 400
    assert _token(client, name, RIGHT) == 429

    # the username's own count and that of its pair with the client's address
    out = _call("lockout_lift", "--username", name)
    assert out == "cleared 2 failed-login counts\n"
    assert _token(client, name, RIGHT) == 200


def test_it_lifts_an_addresss_lockout(limits: Settings) -> None:
    address = _address()
    factories.user_create(f"erin-{address}")
    client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=address)
    for i in range(5):
        assert _token(client, f"nobody-{i}-{address}", "guess") == 400
    assert _token(client, f"erin-{address}", RIGHT) == 429

    # the address's own count and those of its pairs with the five usernames it tried
    assert _call("lockout_lift", "--address", f" {address} ") == "cleared 6 failed-login counts\n"
    assert _address_count(address) is None
    assert _token(client, f"erin-{address}", RIGHT) == 200
    # nothing left to clear
    assert _call("lockout_lift", "--address", address) == "cleared 0 failed-login counts\n"


def test_it_lifts_the_pairs_of_the_address_asked_only(limits: Settings) -> None:
    # the pairs of 23.4.5.6, say, not those of 123.4.5.6, whose keys end the same way
    address = ".".join(str(part) for part in (
        uuid.uuid4().int % 90 + 10, uuid.uuid4().int % 250, uuid.uuid4().int % 250,
        uuid.uuid4().int % 250))
    longer = f"1{address}"
    name = f"grace-{uuid.uuid4().hex[:8]}"
    factories.user_create(name)
    for client in (address, longer):
        assert _token(APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=client), name,
                      "wrong") == 400

    # the address's own count and its pair's
    assert _call("lockout_lift", "--address", address) == "cleared 2 failed-login counts\n"
    user = hashlib.sha256(name.encode()).hexdigest()
    pairs = [caches["throttle"].get(f"login-failures:count:pair:{user}:{client}")
             for client in (address, longer)]
    assert (pairs, _address_count(longer)) == ([None, 1], 1)


def test_it_lifts_every_lockout(limits: Settings) -> None:
    _call("lockout_lift", "--all")  # those other tests left (this process's own Redis database)
    first, second = _address(), _address()
    for address in (first, second):
        client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=address)
        assert _token(client, f"nobody-{address}", "guess") == 400
    # the API's rate-limit counts in the same cache are not login counts: they stay
    caches["throttle"].set("throttle_anon_192.0.2.1", [1.0], 60)

    # two usernames' counts, two addresses' and their two pairs'
    assert _call("lockout_lift", "--all") == "cleared 6 failed-login counts\n"
    assert (_address_count(first), _address_count(second)) == (None, None)
    assert caches["throttle"].get("throttle_anon_192.0.2.1") == [1.0]


def test_it_refuses_a_lift_of_no_address() -> None:
    with pytest.raises(CommandError, match="--address 'the office' is not an IP address"):
        call_command("lockout_lift", "--address", "the office")


def _call(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()
