"""A full re-score in forked processes (leaderboard/review/rescoring/pool.py) stores exactly
the scores and hits the submission's own scoring stored, as the re-score in the job's own
process does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get, label_set_version_latest
from leaderboard.review.rescoring import pool
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.helpers import PROJECT_ROOT

pytestmark = pytest.mark.django_db

MODELS = ("nas", "cudaconvnet", "resnet_basic_110", "vgg16_keras", "resnet_preact_basic_110")


def _stored(version: LabelSetVersion) -> dict[int, tuple[Any, ...]]:
    # Without a new test set's `gap`: the submission's scoring adds it from its score on the
    # original labels (metrics.score_predictions), which re-scoring does not read.
    rows = Score.with_hidden.filter(label_set_version=version).values_list(
        "submission_id", "record", "accuracy", "correct", "total", "ci_low", "ci_high", "hits_id")
    return {row[0]: ({k: v for k, v in row[1].items() if k != "gap"}, *row[2:]) for row in rows}


def test_it_stores_the_same_scores_from_forked_processes_as_from_its_own(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for model in MODELS:
        submission = factories.submission_for_model(data_dir, model)
        assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get() \
            == "scored"
    benchmark = benchmark_get(slug="cifar10")
    versions = [label_set_version_latest(label_set=ls) for ls in benchmark.label_sets.all()]
    scored = {v.pk: _stored(v) for v in versions if v is not None}
    assert all(len(rows) == len(MODELS) for rows in scored.values()) and len(scored) >= 3

    pools: list[int] = []
    process_pool = pool._process_pool

    def counting_pool(processes: int) -> Any:
        pools.append(processes)
        return process_pool(processes)

    monkeypatch.setattr(pool, "_process_pool", counting_pool)
    # five rows in chunks of one: both processes get several, and results come back in order
    monkeypatch.setattr(pool, "POOL_CHUNK", 1)
    monkeypatch.setattr(pool, "POOL_MIN_ROWS", 2)
    rescored: dict[int, list[Any]] = {}
    for processes in (2, 1):
        loaded.EVALSERVER_RESCORE_PROCESSES = processes
        for version in versions:
            assert version is not None
            Score.with_hidden.filter(label_set_version=version).update(
                correct=0, record={"stale": True}, hits=None)
            assert rescoring._rescore_fully(version) == len(MODELS)
            assert _stored(version) == scored[version.pk], (processes, version.label_set.slug)
            rescored.setdefault(version.pk, []).append(list(
                Score.with_hidden.filter(label_set_version=version).order_by("submission_id")
                .values_list("record", "hits_id")))
    # forked or not, every record is the same, `gap` included (absent)
    assert all(serial == forked for forked, serial in rescored.values())
    assert pools == [2] * len(scored)  # one pool per version with 2; none with 1


@pytest.mark.parametrize("seed", range(5))
def test_it_finds_the_changed_keys_np_setxor1d_finds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, 5_000, size=int(rng.integers(0, 800))))
    b = np.unique(np.concatenate([rng.choice(a, size=a.size // 2, replace=False) if a.size
                                  else a, rng.integers(0, 5_000, size=int(rng.integers(0, 50)))]))
    for x, y in ((a, b), (b, a), (a, a), (a, a[:0]), (a[:0], b)):
        expected = np.setxor1d(x, y)
        found = rescoring._sorted_symmetric_difference(x, y)
        assert found.tolist() == expected.tolist()


PRINT_PROCESSES = """
import django
django.setup()
from django.conf import settings
print(settings.EVALSERVER_RESCORE_PROCESSES)
"""


def _processes(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALSERVER_RESCORE_PROCESSES"}
    env.update(DJANGO_SETTINGS_MODULE="evalserver.settings", SECRET_KEY="x" * 50)
    if value is not None:
        env["EVALSERVER_RESCORE_PROCESSES"] = value
    return subprocess.run([sys.executable, "-c", PRINT_PROCESSES], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_it_reads_the_rescoring_processes_and_refuses_a_bad_count() -> None:
    assert _processes(None).stdout.strip() == "2"  # both cores of the reference machine
    assert _processes("1").stdout.strip() == "1"
    for bad in ("0", "two"):
        refused = _processes(bad)
        assert refused.returncode != 0
        assert f"EVALSERVER_RESCORE_PROCESSES={bad!r} is not valid" in refused.stderr


def _hang(rows: Any) -> list[Any]:  # a child that never answers
    import time

    time.sleep(3600)
    return []


def test_it_fails_with_a_timeout_when_a_child_never_answers(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # the child runs what the parent's module names `_score_chunk` when it forks
    monkeypatch.setattr(pool, "_score_chunk", _hang)
    monkeypatch.setattr(pool, "CHUNK_RESULT_TIMEOUT_S", 1)
    monkeypatch.setattr(pool, "POOL_CHUNK", 1)
    monkeypatch.setattr(pool, "POOL_MIN_ROWS", 2)
    rows = [type("Row", (), {"submission_id": i, "compact": f"c{i}"})() for i in range(2)]
    inputs: Any = None  # never read: the children hang first
    with pytest.raises(TimeoutError) as raised:
        list(pool.scored_chunks(inputs=inputs, rows=rows, processes=2))
    assert str(raised.value) == ("a re-scoring process gave no result for a chunk of 1 "
                                 "submissions in 1 s")
