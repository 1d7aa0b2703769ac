"""A task that keeps a pool process busy, for tests/evalserver/test_pool_processes.py: a worker
started with `--include tests.pool_tasks` registers it (no database, no data)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import shared_task


@shared_task(name="tests.pool_tasks.busy")
def busy(seconds: float, marker_dir: str) -> None:
    """Leave a file named after this process in `marker_dir`, then sleep."""
    (Path(marker_dir) / str(os.getpid())).touch()
    time.sleep(seconds)
