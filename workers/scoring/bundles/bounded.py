"""Proving that reading untrusted input stays within a memory and a CPU limit, in a forked child
(docs/bundles.md §1, "Limits of a manifest").

`bounded_check(work, ...)` forks; the child limits itself (address space, CPU seconds, no core
file), runs `work` and reports with one byte on a pipe how it went; the parent waits for it
(a wall-clock deadline only bounds a hang) and raises `LimitExceeded` when the child ran out of
memory or CPU or died. The child's result is dropped: once it has shown that `work` finishes
within the limits, the caller runs it again itself. For a parser that costs a second pass
(a manifest: about a millisecond), and it needs no way to carry the result back.

Why a fork and not a new interpreter (workers/inference/sandbox.py starts one, for a model
that may run code): here the input is data for a pure-Python parser, and a fork costs about
8 ms where a fresh `python -c 'import tomllib'` costs about 40. The address-space limit is the
parent's size at the fork plus the budget, as the child shares the parent's mappings (a Celery
worker's size varies); memory the parent has mapped but freed is the child's to reuse as well,
so a child may use its budget and its parent's free heap. The child touches nothing of the
parent's: the garbage collector is off
(no finalizer of the parent's objects runs), it writes one byte to its own pipe and leaves with
os._exit (no atexit handler, no buffered output written twice, no database connection closed
with a goodbye the server would take for the parent's).
"""

from __future__ import annotations

import faulthandler
import gc
import os
import resource
import select
import signal
from collections.abc import Callable

_DONE, _MEMORY, _FAILED = b"d", b"m", b"f"


class LimitExceeded(Exception):
    """`work` did not finish within the limits: `reason` is "memory", "cpu", "time" (the
    wall-clock deadline), "killed" (SIGKILL: the CPU hard limit or the OOM killer) or
    "crashed"."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _address_space() -> int:
    """This process's virtual size now (Linux: /proc/self/statm); 0 where unknown."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _limit_self(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would dump the whole worker
    size = _address_space()
    if memory_bytes > 0 and size:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + memory_bytes
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    # SIGXCPU at the soft limit ends the child; the hard limit is a SIGKILL backstop (never
    # above the parent's own)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft, kill = cpu_seconds, cpu_seconds + 1
    if hard != resource.RLIM_INFINITY:
        soft, kill = min(soft, hard), min(kill, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, kill))


def _child(work: Callable[[], object], expected: tuple[type[BaseException], ...],
           memory_bytes: int, cpu_seconds: int, read_fd: int, write_fd: int) -> None:
    outcome = _FAILED
    try:
        gc.disable()
        faulthandler.disable()  # a crash is reported by its signal, not on the parent's stderr
        os.close(read_fd)
        _limit_self(memory_bytes, cpu_seconds)
        try:
            work()
            outcome = _DONE
        except MemoryError:
            outcome = _MEMORY
        except expected:  # a refusal of the input: the parent's own run raises it again
            outcome = _DONE
    except MemoryError:
        # out of memory again while the first MemoryError unwound (its traceback, the
        # handler's own frame): still the memory limit, not a crash
        outcome = _MEMORY
    except BaseException:  # noqa: BLE001 - anything else is a failure, reported as such
        pass
    finally:
        try:
            os.write(write_fd, outcome)
        finally:
            os._exit(0)


def bounded_check(
    work: Callable[[], object], *, memory_bytes: int, cpu_seconds: int,
    expected: tuple[type[BaseException], ...] = (), wall_seconds: float = 600.0,
) -> None:
    """Run `work` in a forked child with at most `memory_bytes` more address space than this
    process and `cpu_seconds` of CPU; return if it finished (or raised one of `expected`),
    raise LimitExceeded if not."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns (os._exit)
        _child(work, expected, memory_bytes, cpu_seconds, read_fd, write_fd)
    os.close(write_fd)
    outcome = b""
    ready = False
    try:
        poller = select.poll()  # not select(): a worker may hold more than 1,024 descriptors
        poller.register(read_fd, select.POLLIN)
        ready = bool(poller.poll(wall_seconds * 1000))
        if ready:
            outcome = os.read(read_fd, 1)  # b"": the child died before it could say
    finally:
        os.close(read_fd)
        if not outcome:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if outcome == _DONE:
        return
    if outcome == _MEMORY:
        raise LimitExceeded("memory", f"needs more than {memory_bytes / 2**20:,.0f} MiB of memory")
    if not ready:
        raise LimitExceeded("time", f"did not finish in {wall_seconds:g} s")
    died = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if died == signal.SIGXCPU:
        raise LimitExceeded("cpu", f"needs more than {cpu_seconds} s of CPU")
    if died == signal.SIGKILL:  # the CPU hard limit, or the kernel's OOM killer
        raise LimitExceeded("killed", "was killed before it finished")
    try:
        what = f"signal {signal.Signals(died).name}" if died else "an unexpected error"
    except ValueError:
        what = f"signal {died}"
    raise LimitExceeded("crashed", f"failed with {what}")
