"""The client's failures, each with the exit status the command ends with (README: "Exit codes").

0 ok, 1 scoring failed (or did not finish in time), 2 usage, 3 authentication, 4 network,
5 refused by the server (its error code is printed). Scripts branch on these numbers.
"""

from __future__ import annotations

from typing import Any

OK, SCORING_FAILED, USAGE, AUTHENTICATION, NETWORK, REFUSED = 0, 1, 2, 3, 4, 5


class ClientError(Exception):
    """A failure to report in one line. `status` is the HTTP status of the server's answer,
    None when none came (unreachable, the connection dropped); `body` its parsed JSON (None when
    it was not JSON); `code` the server's error code when it sent one."""

    exit_code = SCORING_FAILED
    printed = False  # True when the command already printed its --json document

    def __init__(self, message: str, *, status: int | None = None, body: Any = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.body, self.code = status, body, code


class ScoringFailed(ClientError):
    """The submission was accepted but its scoring failed, or did not end in time."""

    exit_code = SCORING_FAILED


class UsageError(ClientError):
    """A bad argument found before anything was sent: a missing file, a malformed URL."""

    exit_code = USAGE


class AuthenticationError(ClientError):
    """No token, or one the server refuses (401): log in again."""

    exit_code = AUTHENTICATION


class NetworkError(ClientError):
    """No answer (refused connection, timeout, proxy failure) or one that is not the
    evalserver's (not JSON)."""

    exit_code = NETWORK


class RefusedError(ClientError):
    """The server answered with an error of its own shape (docs/api.md §3): `code` says what."""

    exit_code = REFUSED
