"""The slow webhook receivers of the chaos soak (bench/chaos.py): a receiver on the client host
that answers every POST one byte every TRICKLE_EVERY_S, for ever (until the sender hangs up),
and the users pointed at it:

- each uploading user opts into `submission.scored` webhooks to one endpoint there, so every
  scoring is followed by a delivery that trickles;
- a third user ("chaos-hooks") adds as many endpoints there as one user may
  (EVALSERVER_WEBHOOK_MAX_ENDPOINTS) and sends as many test events as allowed
  (EVALSERVER_WEBHOOK_TESTS_PER_HOUR), each fanning out to all of them.

The notifications run on their own queue (a `-Q notify` worker on the web host), so the
scorings' worst wait should not change beside them; `--no-webhooks` runs the soak without
them, for the comparison. Counted from the database: the deliveries by status, their tries
logged, the tries cut off by the POST's deadline, and deliveries failed with `time_limit`
(a try killed by the task's time limit, unlogged: the bug this guards against)."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evalserver_client.api import Api
from tests.deploy.topology import Cluster

HOOKS_USER = "chaos-hooks"
TRICKLE_EVERY_S = 1.0
TRICKLE_FOR_S = 120.0  # a sender that never hangs up is let go after this long
# The topology's settings for the notifications: loopback and private receivers allowed (the
# client host is on the bridge's private network), and tries again after 2 s, 4 s, 8 s...
ENV = {"EVALSERVER_WEBHOOK_ALLOW_PRIVATE": "true", "EVALSERVER_NOTIFY_BACKOFF_MS": "2000"}
MAX_ENDPOINTS, TESTS_PER_HOUR = 10, 6  # the settings' defaults, which the soak keeps


@dataclass
class Trickler:
    """The receiver: how many POSTs came, how each trickled answer ended, the longest one a
    sender held on to."""

    url: str = ""
    connections: int = 0
    ended: Counter[str] = field(default_factory=Counter)  # "hung up" / "gave up"
    longest_s: float = 0.0
    _server: socket.socket | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, cluster: Cluster) -> None:
        """Listen on the client host (the socket is made in its namespace), answer from
        threads of this process."""
        address = cluster.hosts["client"].address

        def listening() -> socket.socket:
            server = socket.create_server((address, 0), backlog=128)
            return server

        self._server = cluster.in_client(listening)
        self.url = f"http://{address}:{self._server.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        started = time.monotonic()
        how = "gave up"
        with connection:
            connection.settimeout(TRICKLE_FOR_S)
            try:
                connection.recv(65536)  # the request's head (and body): not read further
                for byte in b"HTTP/1.1 200 OK\r\n" * 1000:
                    if time.monotonic() - started > TRICKLE_FOR_S:
                        break
                    connection.sendall(bytes([byte]))
                    time.sleep(TRICKLE_EVERY_S)
            except OSError:
                how = "hung up"
        with self._lock:
            self.ended[how] += 1
            self.longest_s = max(self.longest_s, time.monotonic() - started)


def webhooks_point_at(cluster: Cluster, trickler: Trickler, uploaders: list[Api],
                      hooks: Api) -> int:
    """Each uploader's `submission.scored` to one trickling endpoint; the hooks user's
    endpoints, all trickling, and its test events. Returns the test deliveries made."""

    def setup() -> int:
        for api in uploaders:
            api.request("POST", "/api/notifications/webhooks/", form={"url": trickler.url})
            api.request("PUT", "/api/notifications/preferences/", form={
                "event": "submission.scored", "email": False, "webhook": True})
        for number in range(MAX_ENDPOINTS):
            hooks.request("POST", "/api/notifications/webhooks/",
                          form={"url": f"{trickler.url}-{number}"})
        made = 0
        for _ in range(TESTS_PER_HOUR):
            made += len(hooks.request("POST", "/api/notifications/webhooks/test/")["deliveries"])
        return made

    return cluster.in_client(setup)


@dataclass(frozen=True)
class DeliveryCounts:
    by_status: dict[str, int]
    tries: int
    cut_off: int  # tries logged as cut off by the POST's deadline
    time_limited: int  # deliveries failed by a task's time limit (a try unlogged)


def delivery_counts(cluster: Cluster) -> DeliveryCounts:
    rows: list[tuple[Any, ...]] = cluster.sql(
        "SELECT status, count(*) FROM leaderboard_notificationdelivery GROUP BY status")
    tries = cluster.sql("SELECT count(*), count(*) FILTER (WHERE error LIKE %s)"
                        " FROM leaderboard_deliveryattempt", ("%no complete answer within%",))
    limited = cluster.sql("SELECT count(*) FROM leaderboard_notificationdelivery"
                          " WHERE failure_code = 'time_limit'")
    return DeliveryCounts(by_status={str(s): int(n) for s, n in rows}, tries=int(tries[0][0]),
                          cut_off=int(tries[0][1]), time_limited=int(limited[0][0]))


def report(counts: DeliveryCounts, trickler: Trickler, test_deliveries: int) -> str:
    statuses = ", ".join(f"{status} {n}" for status, n in sorted(counts.by_status.items()))
    return (f"  webhooks: a receiver trickling a byte every {TRICKLE_EVERY_S:.0f} s; "
            f"{test_deliveries} test deliveries to {MAX_ENDPOINTS} endpoints of one user, and "
            f"submission.scored to the uploaders' own; deliveries: {statuses or 'none'}; "
            f"{counts.tries} tries logged, {counts.cut_off} of them cut off by the POST's "
            f"deadline; {counts.time_limited} failed by a task's time limit; the receiver got "
            f"{trickler.connections} POSTs, hung up on {trickler.ended['hung up']}, let "
            f"{trickler.ended['gave up']} go after {TRICKLE_FOR_S:.0f} s; the longest held "
            f"{trickler.longest_s:.1f} s")
