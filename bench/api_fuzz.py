"""The API fuzz test (tests/test_api_fuzz.py) at its full budget: schemathesis's generated
requests, 40 an operation (the suite runs 10), and 100 generated prediction-file uploads (the
suite runs 40), against a live test server; it prints the cases sent and the answers by status.

    python bench/api_fuzz.py            # the full budget
    python bench/api_fuzz.py --quick    # the suite's budget

Fails on what the test fails on (a 5xx, a body not in the error shape, an answer the schema
does not document); its figures are counts, and the time it took."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the suite's budget")
    args = parser.parse_args()
    budget = ("10", "40") if args.quick else ("40", "100")
    env = {**os.environ, "EVALSERVER_FUZZ_EXAMPLES": budget[0],
           "EVALSERVER_FUZZ_UPLOAD_EXAMPLES": budget[1],
           "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-s",
                           "tests/test_api_fuzz.py"], cwd=ROOT, env=env)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"api fuzz: {budget[0]} examples an operation, {budget[1]} uploads: "
          f"{'passed' if done.returncode == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s"
          f" ({os.cpu_count()} cores, load average {load})")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
