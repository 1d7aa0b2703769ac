"""Helpers shared by the tests (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import numpy as np
import pytest

if TYPE_CHECKING:
    from leaderboard.catalog.bundle_definition import BundleDefinition
    from leaderboard.catalog.models import LabelSet

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# CI installs every real service and file the tests use (scripts/test.sh): under CI=true a test
# that would skip for want of one fails instead.
UNDER_CI = os.environ.get("CI") == "true"


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip for want of a real service or file; under CI=true, fail with the same reason."""
    if UNDER_CI:
        pytest.fail(f"{reason} (CI=true: no test skips for want of it)", pytrace=False)
    pytest.skip(reason)


def make_partial_data_dir(source: Path, target: Path, *, leave_out: set[str]) -> Path:
    """A data directory with a copy of every file of `source` except the `leave_out` paths.
    Copies, not links: a bundle's files may not lead out of its root (docs/bundles.md §1)."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source).as_posix()
        if path.is_file() and relative not in leave_out:
            copy = target / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    return target


def builtin_definition(slug: str) -> BundleDefinition:
    """A built-in benchmark's rows as `load_benchmarks` writes them (its class and example
    names read from the configured data directory; CIFAR-10's and MNIST's need no file)."""
    from django.conf import settings

    from leaderboard.catalog.bundle_definition import builtin_source, bundle_definition
    from workers.scoring.bundles import BundleData, builtin_bundle

    bundle = builtin_bundle(slug)
    data = BundleData(bundle, data_dir=Path(settings.EVALSERVER_DATA_DIR))
    return bundle_definition(bundle, data, source=builtin_source(bundle))


def builtin_label_set_sync(benchmark: str, slug: str) -> LabelSet:
    """The rows of a built-in label set, its benchmark's and its example sets' (its own and the
    benchmark's main one), with no version."""
    from leaderboard.catalog.services import bundle_rows_sync

    rows = bundle_rows_sync(definition=builtin_definition(benchmark), label_sets=[slug])
    return rows.label_sets[slug][0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def imagenet_original_labels_by_file_number(data_dir: Path) -> list[int]:
    """ImageNet's original validation labels in file-number order, from cleanlab's class-folder
    order with a plain loop: a check written apart from workers.scoring.datasets' conversion."""
    labels = np.load(data_dir / "imagenet/cleanlab_original_labels.npy").tolist()
    paths = json.loads((data_dir / "imagenet/cleanlab_index_to_filepath.json").read_text())
    out = [0] * 50_000
    for i, path in enumerate(paths):
        out[int(path.rsplit("_", 1)[-1][:-len(".JPEG")]) - 1] = labels[i]
    return out


def mnist_labels(data_dir: Path) -> np.ndarray:
    """MNIST's original test labels (the data directory's original_labels.npy), as int64."""
    return np.load(data_dir / "mnist/original_labels.npy").astype(np.int64)


def mnist_probs(data_dir: Path) -> np.ndarray:
    """cleanlab's cross-validated probabilities of the MNIST test set."""
    return np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy")


def process_group_stop(process: subprocess.Popen[bytes], *, timeout: float = 20.0,
                       first: signal.Signals = signal.SIGTERM) -> None:
    """Stop a process started in a session of its own (`start_new_session=True`) and every
    process in that session: `first` (SIGTERM; nginx's graceful stop is SIGQUIT), then SIGKILL
    after `timeout` seconds."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, first)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
    except ProcessLookupError:
        pass
