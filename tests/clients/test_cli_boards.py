"""`leaderboard`, `benchmarks` and `benchmark` against a live server: three real CIFAR-10 models'
board with each row's submitter, the sorted label set's accuracy and Clopper-Pearson interval,
the rank shifts and rank (UB), every figure computed here from the data files (scipy's beta
quantiles and binomial test); the benchmarks in 100 columns, one benchmark's sets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from scipy import stats

from leaderboard.submissions.board_significance import board_significance_refresh
from leaderboard.submissions.models import Score, Submission
from tests import factories
from tests.api_support import LABEL_FILES, scored_in_process
from tests.clients.test_cli import run_client

MODELS = ("resnet_basic_110", "wrn_28_10", "vgg16_keras")
COLUMNS = ("original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6")
SORT = "cifar10.1-v6"
EXAMPLE_SETS = {"original": "cifar10-test", "cifar10.1-v6": "cifar10.1-v6"}


def _hits(data_dir: Path, model: str, example_set: str) -> np.ndarray:
    path = factories.cifar10_model_files(data_dir, model)[example_set]
    predictions = np.array(json.loads(path.read_text()))
    hits: np.ndarray = predictions == np.load(data_dir / LABEL_FILES[example_set])
    return hits


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _ranks(accuracy: dict[int, float]) -> dict[int, int]:
    """Competition ranks: 1 + the rows with a higher accuracy."""
    return {pk: 1 + sum(other > mine for other in accuracy.values())
            for pk, mine in accuracy.items()}


def _expected_rows(data_dir: Path, submissions: dict[str, Submission]) -> list[list[str]]:
    """Each row's words: rank, rank (UB), model, submitter, id, then per column the accuracy,
    its shift when not 0, and on the sorted column its 95% interval."""
    accuracy: dict[str, dict[int, float]] = {column: {} for column in COLUMNS}
    hits: dict[int, np.ndarray] = {}
    for model, submission in submissions.items():
        for column in ("original", SORT):
            found = _hits(data_dir, model, EXAMPLE_SETS[column])
            accuracy[column][submission.pk] = float(found.mean())
        hits[submission.pk] = _hits(data_dir, model, EXAMPLE_SETS[SORT])
        for column in ("corrected", "cifar10h"):  # the stored scores, as the board serves them
            accuracy[column][submission.pk] = Score.objects.get(
                submission=submission, label_set__slug=column).accuracy
    ranks = {column: _ranks(accuracy[column]) for column in COLUMNS if accuracy[column]}
    rows = []
    for model, submission in sorted(submissions.items(), key=lambda item: (
            -accuracy[SORT][item[1].pk], item[1].pk)):
        pk, mine = submission.pk, hits[submission.pk]
        better = [other for other in submissions.values() if ranks[SORT][other.pk] <
                  ranks[SORT][pk] and stats.binomtest(
                      int(np.sum(hits[other.pk] & ~mine)),
                      int(np.sum(hits[other.pk] != mine))).pvalue < 0.05]
        words = [str(ranks[SORT][pk]), str(1 + len(better)), model, f"u-{model}", str(pk)]
        for column in COLUMNS:
            if pk not in accuracy[column]:
                words.append("-")
                continue
            words.append(_percent(accuracy[column][pk]))
            shift = ranks["original"][pk] - ranks[column][pk]
            if shift:
                words.append(f"({shift:+d})")
        correct, total = int(mine.sum()), mine.size
        low = stats.beta.ppf(0.025, correct, total - correct + 1)
        high = stats.beta.ppf(0.975, correct + 1, total - correct)
        at = words.index(_percent(accuracy[SORT][pk]), 5) + 1
        words[at:at] = [f"[{100 * low:.2f},", f"{100 * high:.2f}]"]
        rows.append(words)
    return rows


@pytest.mark.django_db(transaction=True)
def test_it_prints_the_board_with_submitters_intervals_and_rank_ub(
    loaded: Settings, data_dir: Path, live_server: LiveServer
) -> None:
    submissions = {model: scored_in_process(data_dir, model, factories.user_create(f"u-{model}"))
                   for model in MODELS}
    board_significance_refresh(benchmark_id=factories.cifar10().pk)

    done = run_client("leaderboard", "cifar10", "--sort", SORT, url=live_server.url)

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "cifar10 leaderboard sorted by cifar10.1-v6 (95% intervals); (+n) = places gained "
        "against original",
        "rank (UB) = 1 + the rows significantly better on cifar10.1-v6 (McNemar, p < 0.05; "
        "- until computed)",
        "rank  rank (UB)  model             submitter           id  original  corrected  "
        "cifar10h  cifar10.1-v4           cifar10.1-v6"]
    assert [line.split() for line in lines[3:]] == _expected_rows(data_dir, submissions)
    assert {row.split()[1] for row in lines[3:]} != {"1"}  # the test sees rank (UB) at work


@pytest.mark.django_db(transaction=True)
def test_it_lists_the_benchmarks_in_100_columns(loaded: Settings,
                                                live_server: LiveServer) -> None:
    listed = run_client("benchmarks", url=live_server.url)
    long = run_client("benchmarks", "--long", url=live_server.url)
    one = run_client("benchmark", "cifar10", url=live_server.url)
    unknown = run_client("benchmark", "svhn", url=live_server.url)

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert lines[0].split() == ["benchmark", "name", "main", "example", "set", "(examples)",
                                "classes", "example", "sets", "label", "sets"]
    assert lines[3].split() == ["cifar10", "CIFAR-10", "cifar10-test", "(10000)", "10", "3",
                                "5"]
    assert lines[-1] == ("Each one's example sets and label sets: evalserver-client benchmark "
                         "SLUG (or benchmarks --long)")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[:7] == [
        "cifar10: CIFAR-10, 10 classes", "",
        "example set   in a submission  examples",
        "cifar10-test  required            10000",
        "cifar10.1-v4  optional             2021",
        "cifar10.1-v6  optional             2000", ""]
    assert [line.split()[:4] for line in one.stdout.splitlines()[8:]] == [
        ["cifar10.1-v4", "cifar10.1-v4", "single", "v1"],
        ["cifar10.1-v6", "cifar10.1-v6", "single", "v1"],
        ["cifar10h", "cifar10-test", "soft", "v1"],
        ["corrected", "cifar10-test", "single", "v1"],
        ["original", "cifar10-test", "single", "v1"]]
    assert one.stdout in long.stdout and max(map(len, long.stdout.splitlines())) <= 100
    assert (unknown.returncode, unknown.stderr) == (
        5, "error: not_found: no benchmark 'svhn'; `evalserver-client benchmarks` lists them\n")
