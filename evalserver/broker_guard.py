"""A guard in kombu's Redis transport that keeps a worker alive when Redis dies under it.

When the broker connection breaks, the Celery worker's consumer first calls
`connection.collect()` and then `connection.close()` on it (celery 5.7,
`Consumer.on_connection_error_after_connected`; the second call came with celery/celery#10242).
`collect()` closes the channels and then detaches the transport from the connection
(`transport.client = None`). When Redis was killed while a BRPOP was outstanding, the first
close of the default channel fails at its start (reading the BRPOP reply raises a connection
error, which `collect()` ignores) and the channel stays open. `close()` then closes it again:
its connection pool is gone by then, so restoring its unacknowledged messages (a busy worker
always has some) builds a new pool, and `Channel._connparams` reads the host from the detached
transport's client: `AttributeError: 'NoneType' object has no attribute 'hostname'`. That is
neither a connection nor a channel error, so nothing ignores it, and the worker exits with
"Unrecoverable error". The same AttributeError from `_connparams` on a channel closed after its
transport is reported in celery/kombu#582.

The guard makes a channel whose transport is gone raise redis's ConnectionError instead: the
close is then treated like any other on a lost connection (ignored), and the consumer goes on
to reconnect. The messages that could not be restored stay in the broker's `unacked` hash and
are delivered again after the visibility timeout, or sooner by the sweep.
"""

from __future__ import annotations

import functools
from typing import Any

import redis
from kombu.transport import redis as kombu_redis

_GUARD = "_evalserver_detached_transport_guard"


def detached_transport_guard_install() -> None:
    """Guard `kombu.transport.redis.Channel._connparams` (once per process)."""
    channel_class: Any = kombu_redis.Channel
    connparams = channel_class._connparams
    if getattr(connparams, _GUARD, False):
        return

    @functools.wraps(connparams)
    def _connparams(self: Any, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport is None or transport.client is None:
            raise redis.exceptions.ConnectionError(
                "the broker connection of this channel was closed")
        return connparams(self, asynchronous=asynchronous)

    setattr(_connparams, _GUARD, True)
    channel_class._connparams = _connparams
