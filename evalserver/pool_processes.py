"""A worker's prefork pool processes end with the worker's main process.

A pool process whose main process was killed (SIGKILL, the OOM killer) has no one to hand its
result to or to acknowledge its message: the message is acknowledged late (CELERY_TASK_ACKS_LATE),
so Redis hands it to another worker after the visibility timeout, and the sweep queues the job
again sooner (docs/operators/many-machines.md, "When a worker dies"). Whatever it still computes is
wasted, and it holds CPU, memory and, for a checkpoint run, the GPU meanwhile. So it is killed at
once, with SIGKILL: a pool process ignores SIGINT, SIGTERM would wait for the task's Python code to
reach a point where it can raise, and a task blocked in native code (inference, a read from a hung
NFS mount) would never get there. Nothing is lost by it: every task is idempotent and claims its
job (tests/submissions/test_worker_lost.py).

Linux does it: prctl(PR_SET_PDEATHSIG) has the kernel send the signal when the parent dies.
Celery's prefork pool asks for that too (celery.concurrency.prefork.process_initializer), but
quietly goes on when it cannot, and does not look whether the parent died before the request
took effect (between fork and prctl), after which it never comes. Connected by
evalserver/celery.py.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any

from celery.signals import worker_init, worker_process_init

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1  # linux/prctl.h

# The worker's main process, set there before it starts its pool: what a pool process's parent
# must still be once the request took effect.
_worker_pid: int | None = None


@worker_init.connect
def _worker_pid_remember(**_: Any) -> None:
    global _worker_pid
    _worker_pid = os.getpid()


@worker_process_init.connect
def _pool_process_tie(**_: Any) -> None:
    # worker_process_init also runs in the main process itself with `--pool solo`: that one
    # lives on after its own parent (a shell, a supervisor)
    if _worker_pid is None or os.getpid() == _worker_pid:
        return
    die_with_parent(_worker_pid)


def die_with_parent(parent_pid: int) -> None:
    """Have this process get SIGKILL when its parent dies; killed at once if `parent_pid` is
    no longer its parent (it died before the request took effect, or this process was never
    its child). Not Linux: nothing done."""
    if sys.platform != "linux":
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d): this pool process may "
                    "outlive a killed worker", ctypes.get_errno())
        return
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)
