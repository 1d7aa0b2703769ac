"""Fixtures for the scoring-core tests: the real data directory, one compile cache for the
session, and the raw public files read with plain Python (the independent side of each check)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.support import compile_builtin, load_json
from workers.scoring.label_set_builders import CompiledLabelSet

DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"
VAL_PREFIX = "ILSVRC2012_val_"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real public data directory (../shared/data beside the project)."""
    if not DATA_DIR.is_dir():
        pytest.fail(f"the data directory {DATA_DIR} does not exist: these tests read the real "
                    "public label files (see shared/data/MANIFEST.md)", pytrace=False)
    return DATA_DIR


@pytest.fixture
def run_score(data_dir: Path, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """run_score(*args): `python -m workers.score ARGS` as a real subprocess, with a fresh
    compile cache and the real data directory (no multilabel file from the environment)."""
    env = {**os.environ, "EVALSERVER_CACHE_DIR": str(tmp_path / "cache"),
           "EVALSERVER_DATA_DIR": str(data_dir)}
    env.pop("EVALSERVER_MULTILABEL_FILE", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "workers.score", *args], cwd=PROJECT_ROOT,
                              env=env, capture_output=True, text=True, timeout=120)

    return run


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of compiled label sets for the whole session."""
    return tmp_path_factory.mktemp("compiled-label-sets")


@pytest.fixture(scope="session")
def compiled(data_dir: Path, cache_dir: Path) -> Callable[[str, str], CompiledLabelSet]:
    """compiled(benchmark, slug): a built-in bundle's label set (benchmarks/*.toml) compiled
    once per session, from the bundle."""
    memo: dict[tuple[str, str], CompiledLabelSet] = {}

    def get(benchmark: str, slug: str) -> CompiledLabelSet:
        if (benchmark, slug) not in memo:
            memo[benchmark, slug] = compile_builtin(benchmark, slug, data_dir=data_dir,
                                                    cache_dir=cache_dir)
        return memo[benchmark, slug]

    return get


def file_number(name: str) -> int:
    """1-based number of 'ILSVRC2012_val_XXXXXXXX.JPEG' (a 'val/<wnid>/' prefix allowed)."""
    base = name.rsplit("/", 1)[-1]
    assert base.startswith(VAL_PREFIX) and base.endswith(".JPEG"), base
    return int(base[len(VAL_PREFIX):-len(".JPEG")])


@pytest.fixture(scope="session")
def class_info(data_dir: Path) -> list[dict[str, Any]]:
    return load_json(data_dir / "imagenet/class_info.json")


@pytest.fixture(scope="session")
def imagenet_paths(data_dir: Path) -> list[str]:
    return load_json(data_dir / "imagenet/cleanlab_index_to_filepath.json")


@pytest.fixture(scope="session")
def canonical_imagenet_labels(data_dir: Path, imagenet_paths: list[str]) -> list[int]:
    """Original ImageNet labels in file-number order, derived with a plain loop: the label at
    cleanlab index i belongs to the file that cleanlab_index_to_filepath.json[i] names."""
    cleanlab = np.load(data_dir / "imagenet/cleanlab_original_labels.npy").tolist()
    labels: list[int | None] = [None] * 50_000
    for i, path in enumerate(imagenet_paths):
        number = file_number(path)
        assert labels[number - 1] is None, f"file number {number} named twice"
        labels[number - 1] = cleanlab[i]
    assert None not in labels
    return labels  # type: ignore[return-value]


@pytest.fixture(scope="module")
def originals(data_dir: Path, canonical_imagenet_labels: list[int]) -> dict[str, list[int]]:
    """Original labels of each benchmark in canonical order, read without the code under test."""
    return {
        "imagenet": canonical_imagenet_labels,
        "cifar10": np.load(data_dir / "cifar10/original_labels.npy").tolist(),
        "mnist": np.load(data_dir / "mnist/original_labels.npy").tolist(),
    }


@pytest.fixture(scope="session")
def real_lists(data_dir: Path) -> list[list[int]]:
    return load_json(data_dir / "imagenet/real.json")


@pytest.fixture(scope="session")
def real_rated_pairs(data_dir: Path) -> set[tuple[int, int]]:
    """(0-based image index, class) of every pair in real_scores.npz `info`."""
    with np.load(data_dir / "imagenet/real_scores.npz") as z:
        info = z["info"].tolist()
    return {(file_number(name) - 1, int(cls)) for name, cls in info}
