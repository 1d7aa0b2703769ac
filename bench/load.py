"""The load generators of the benches (bench/leaderboard.py): `wrk` when installed, else a
multi-threaded keep-alive http.client loop bounded in requests and time. Run in a process of
its own (`--load`), so that the client's CPU is not the server's; it prints one JSON line.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from typing import Any

HOST = "127.0.0.1"


def python_load(port: int, path: str, *, seconds: float, connections: int,
                max_requests: int, headers: dict[str, str], expect: int) -> dict[str, Any]:
    """Keep-alive http.client clients in threads (they reconnect when the server closes)."""
    latencies: list[list[float]] = [[] for _ in range(connections)]
    statuses: list[Counter[int]] = [Counter() for _ in range(connections)]
    errors = [0] * connections
    per_thread = max(1, max_requests // connections)
    start = time.perf_counter()
    deadline = start + seconds

    def client(i: int) -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while time.perf_counter() < deadline and len(latencies[i]) < per_thread:
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers={"Connection": "keep-alive", **headers})
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                errors[i] += 1
                conn.close()
                continue
            latencies[i].append(time.perf_counter() - t0)
            statuses[i][response.status] += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    every = sorted(x for chunk in latencies for x in chunk)
    status: Counter[int] = sum(statuses, Counter())

    def percentile(q: float) -> float:
        return 1000 * every[min(len(every) - 1, int(q * len(every)))] if every else float("nan")

    return {"tool": f"python http.client, {connections} connections", "requests": len(every),
            "seconds": elapsed, "rps": len(every) / elapsed, "p50_ms": percentile(0.50),
            "p99_ms": percentile(0.99), "errors": sum(errors),
            "unexpected": sum(n for code, n in status.items() if code != expect)}


def _wrk_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def wrk_load(wrk: str, port: int, path: str, *, seconds: float, connections: int,
             headers: dict[str, str]) -> dict[str, Any]:
    threads = max(1, min(connections, 2))
    out = subprocess.run(
        [wrk, f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
         "--timeout", "10s", *(f"-H{k}: {v}" for k, v in headers.items()),
         f"http://{HOST}:{port}{path}"],
        capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, flags=re.M))
    non_200 = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                              r"timeout (\d+)", out)
    return {"tool": f"wrk, {threads} threads, {connections} connections", "requests": requests,
            "seconds": seconds,
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
            "p50_ms": _wrk_ms(latency["50"]), "p99_ms": _wrk_ms(latency["99"]),
            # read errors are the server closing a connection (keep-alive's end): not failures
            "errors": int(socket_errors.group(1)) + int(socket_errors.group(4))
            if socket_errors else 0,
            # wrk counts only 4xx/5xx (its "Non-2xx or 3xx"): a 304 is not one
            "unexpected": int(non_200.group(1)) if non_200 else 0}


def load_main(args: argparse.Namespace) -> None:
    """The second process: send the load, print one JSON line of results."""
    wrk = shutil.which("wrk") if args.tool in ("auto", "wrk") else None
    if args.tool == "wrk" and wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    headers = dict(h.split(": ", 1) for h in args.header)
    if wrk:
        result = wrk_load(wrk, args.port, args.path, seconds=args.seconds,
                          connections=args.connections, headers=headers)
    else:
        result = python_load(args.port, args.path, seconds=args.seconds,
                             connections=args.connections, max_requests=args.max_requests,
                             headers=headers, expect=304 if headers else 200)
    print(json.dumps(result))


