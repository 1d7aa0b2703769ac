"""The processes of the topology's hosts (tests/deploy/topology.py), from procfs, and entering
a host's network namespace from a thread: shared by the topology and the benches that kill
one process of a host (bench/faults.py, bench/chaos.py)."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

CLONE_NEWNET = 0x40000000  # <sched.h>


def enter_namespace(namespace: str) -> None:
    """Move the calling thread into a network namespace (setns(2) moves only that thread)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {namespace}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def namespace_pids(namespace: str) -> list[int]:
    """Every process in a network namespace."""
    listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(pid) for pid in listed.stdout.split()]


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after "(comm)", which may hold spaces (proc(5)); None
    when the process ended meanwhile."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_ticks(pid: int) -> int:
    """utime + stime, and cutime + cstime for the children it reaped (prefork pool processes,
    PostgreSQL backends): fields 14-17 of proc(5); 0 for a process that ended."""
    fields = _stat_fields(pid)
    return sum(int(value) for value in fields[11:15]) if fields else 0


def forked_children(pids: list[int], marker: bytes) -> list[int]:
    """Of `pids`, the processes whose command line holds `marker` and whose parent's does too:
    the pool processes of a prefork Celery worker (marker b"celery"), gunicorn's workers
    (b"gunicorn") under their arbiter."""
    parents = {}
    for pid in pids:
        fields = _stat_fields(pid)
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if fields and marker in cmdline:
            parents[pid] = int(fields[1])  # field 4, ppid
    return [pid for pid, parent in parents.items() if parent in parents]


def command_line_holds(pid: int, *words: bytes) -> bool:
    """Whether every word is one of the process's arguments (False once it ended)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return all(word in arguments for word in words)


def established_connections(pid: int, port: int) -> int:
    """TCP connections on local `port` that the process holds open and established: a gunicorn
    worker serving a request holds one. Read from the process's file descriptors and its
    network namespace's /proc/<pid>/net/tcp (proc(5)); 0 for a process that ended."""
    inodes = set()
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        table = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return 0
    for fd in descriptors:
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for line in table:
        fields = line.split()  # sl, local address:port, remote, state (01 established), ...
        if (fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port
                and fields[9] in inodes):
            count += 1
    return count
