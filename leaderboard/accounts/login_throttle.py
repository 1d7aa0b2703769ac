"""Password guessing is limited, on the API (`POST /api/auth/token/`), the login page and the
admin's login page alike. Failed logins are counted three ways, each with its limit:

- per username and client address together (EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS, 10):
  the lock that stops guessing at an account, and it holds only the address that guessed, so
  that anyone who knows a username cannot lock its owner out from everywhere;
- per client address (EVALSERVER_LOGIN_FAILURES_PER_ADDRESS, 50), whatever the usernames;
- per username alone (EVALSERVER_LOGIN_FAILURES_PER_USER, 100), from every address together:
  a much higher count, against guessing spread over many addresses.

This is django-axes's combination mode (lockout by username and address together) with the
two single counts kept as backstops. Past a limit every attempt it covers, the right password
included, is refused with 429 and `Retry-After` until the window that started with the first
counted attempt has passed (docs/api.md §3, "Errors": the failed logins).

The counts live in the `throttle` cache (Redis, settings.CACHES) so that every web process
sees the same ones; a per-process cache would give an attacker one allowance per process.
The address is REMOTE_ADDR, which evalserver/client_address.py sets to the client's: behind a
reverse proxy, read from X-Forwarded-For, and only on requests from EVALSERVER_TRUSTED_PROXIES
(a client can write any header it likes). `manage.py lockout_lift` lifts a lockout early
(`login_lockout_lift`).

An attempt takes its place in the counts before the password is checked
(`login_attempt_start`), with Redis's atomic INCR, and is refused from the number INCR
returned: reading the count first and writing it after the check let parallel guesses all
read the same count and all get through (11 of 20 with a limit of 10). A success clears its
pair's count and gives its place back in the others (`login_success_record`), so a count is
the failed attempts of its window, plus those still being checked.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches

log = logging.getLogger(__name__)


_KEYS = "login-failures:count:"
_USER_KEY = f"{_KEYS}user:"
_PAIR_KEY = f"{_KEYS}pair:"
_ADDRESS_KEY = f"{_KEYS}address:"


def _user_hash(username: str) -> str:
    # hashed: a username may hold any characters, cache keys may not
    return hashlib.sha256(username.strip().lower().encode()).hexdigest()


def _counters(*, username: str, address: str) -> tuple[tuple[str, int], tuple[str, int],
                                                        tuple[str, int]]:
    """(cache key, limit) of each counter an attempt is held to: the (username, address)
    pair's, the username's and the address's. Each has a companion `<key>:since`, when its
    window started (for Retry-After)."""
    user = _user_hash(username)
    # not the `login-failures:<kind>:` keys of the earlier (count, start) pairs: INCR fails
    # on those, so a count still held in Redis across an upgrade would turn limiting off
    return ((f"{_PAIR_KEY}{user}:{address}", settings.EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS),
            (f"{_USER_KEY}{user}", settings.EVALSERVER_LOGIN_FAILURES_PER_USER),
            (f"{_ADDRESS_KEY}{address}", settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS))


def _count_add(key: str, *, now: float, window: int) -> int:
    """Count one attempt on `key`, starting its window if none is running; returns the count
    with this attempt, as INCR returned it."""
    cache = caches["throttle"]
    cache.add(f"{key}:since", now, timeout=window)  # kept only if no window is running
    for _ in range(3):
        cache.add(key, 0, timeout=window)
        try:
            count: int = cache.incr(key)
        except ValueError:  # the window ended between add and incr: start the next one
            continue
        if count == 1:
            # Django's incr checks that the key exists, then INCRs: a key that expires in
            # between comes back without an expiry, and would lock its owner out for good
            cache.touch(key, timeout=window)
        return count
    raise RuntimeError(f"login throttle: could not count on {key}")


def _count_return(key: str) -> None:
    """Give back an attempt counted on `key`."""
    cache = caches["throttle"]
    try:
        if cache.decr(key) < 0:  # the window ended meanwhile: decr made a key with no expiry
            cache.delete(key)
    except ValueError:  # the window ended: nothing left to give back
        pass


def _wait(key: str, *, now: float, window: int) -> int:
    """Seconds until the window of `key` ends."""
    started = caches["throttle"].get(f"{key}:since", now)
    return max(1, int(started + window - now + 0.999))


def login_attempt_start(*, username: str, address: str) -> int | None:
    """Count a login attempt against the (username, address) pair, the username and the
    address, before its password is checked; it stays counted as a failure unless
    `login_success_record` follows. Returns None when it may go on to the password check,
    else the seconds to wait (and the attempt is not counted). An unreachable cache lets the
    attempt through (and says so in the log): logging in must not depend on Redis."""
    now = time.time()
    window = settings.EVALSERVER_LOGIN_WINDOW_SECONDS
    counted: list[str] = []
    waits: list[int] = []
    try:
        for key, limit in _counters(username=username, address=address):
            counted.append(key)
            if _count_add(key, now=now, window=window) > limit:
                waits.append(_wait(key, now=now, window=window))
        if waits:
            # refused without a password check: that is no failed attempt, so it does not
            # count (an address trying a locked username keeps its own allowance)
            for key in counted:
                _count_return(key)
    except Exception:  # the cache backend's own errors (connection refused, timeout)
        log.warning("login throttle: the throttle cache is unreachable; not limiting",
                    exc_info=True)
        return None
    return max(waits) if waits else None


def login_success_record(*, username: str, address: str) -> None:
    """A successful login clears its pair's count (this address's failures at this username)
    and gives back its place in the username's and the address's. Not the whole username
    count: the owner logging in must not give someone guessing from many addresses a new
    allowance; nor the whole address count: one account an attacker owns must not reset the
    count of the guesses it made at others."""
    (pair_key, _), (user_key, _), (address_key, _) = _counters(username=username,
                                                              address=address)
    try:
        caches["throttle"].delete_many([pair_key, f"{pair_key}:since"])
        _count_return(user_key)
        _count_return(address_key)
    except Exception:
        log.warning("login throttle: could not clear a count", exc_info=True)


def login_lockout_lift(*, username: str | None = None, address: str | None = None,
                       everyone: bool = False) -> int:
    """Clear the failed-login counts of a username (its own and those of its pairs with every
    address), of an address (its own and those of its pairs with every username), or
    (`everyone`) all of them, so that their next attempt is checked at once; returns how many
    counts were cleared. Unlike the login path, an unreachable cache is an error here: the
    operator must know the lockout was not lifted."""
    cache = caches["throttle"]
    # no cache method lists keys: Redis is asked for those under the cache's own prefix
    throttle_cache: Any = settings.CACHES["throttle"]
    client = redis.Redis.from_url(str(throttle_cache["LOCATION"]))
    patterns: list[str] = []
    if username is not None:
        user = _user_hash(username)
        patterns += [f"{_USER_KEY}{user}", f"{_PAIR_KEY}{user}:*"]
    if address is not None:
        # the pairs' username part is a sha256 in hex: exactly 64 characters, so that
        # 23.4.5.6 does not match the pairs of 123.4.5.6
        patterns += [f"{_ADDRESS_KEY}{_glob_escape(address)}",
                     f"{_PAIR_KEY}{'?' * 64}:{_glob_escape(address)}"]
    if everyone:
        patterns = [f"{_KEYS}*"]
    try:
        found: set[bytes] = set()
        for pattern in patterns:
            match = cache.make_key(pattern)
            # a pattern that ends in * finds its `:since` companions itself
            for each in (match,) if match.endswith("*") else (match, f"{match}:since"):
                found.update(client.scan_iter(match=each, count=1000))
        counts = sorted(key for key in found if not key.endswith(b":since"))
        # a count of 0 (its attempts all succeeded) locks nobody out: not counted as cleared
        cleared = sum(1 for count in (client.mget(counts) if counts else [])
                      if count and int(count) > 0)
        if found:
            client.delete(*found)
    finally:
        client.close()
    return cleared


def _glob_escape(text: str) -> str:
    """`text` matched literally in a Redis SCAN pattern."""
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)
