"""The hidden demo benchmark (leaderboard/demo/hidden_benchmark.py): seeding it hosts
CIFAR-10.1 v6's labels as a hidden label set split 50/50 with the 30 published CIFAR-10
models, one participant each; the open board shows their released public figures, and a
reveal shows the private part and the shake-up. Every expected figure is computed here from
the data files with NumPy and SciPy, not by the server's code."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings
from scipy.stats import rankdata

from leaderboard.catalog.models import Benchmark
from leaderboard.demo.hidden_benchmark import (
    HIDDEN_DEMO_LABEL_SET,
    HIDDEN_DEMO_SEED,
    HIDDEN_DEMO_SLUG,
    hidden_demo_seed,
)
from leaderboard.demo.seeding import DemoSeedReport
from leaderboard.submissions.models import Submission
from leaderboard.tasks.cpu import score_submission
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
PRIVATE = f"{HIDDEN_DEMO_LABEL_SET}-private"


def _expected(data_dir: Path) -> dict[str, tuple[float, float]]:
    """model -> (accuracy on the public part, on the private part), from the files: the
    private part is the first 1,000 of numpy's default_rng(seed).permutation(2000)."""
    labels = np.load(data_dir / "cifar10/cifar10.1_v6_labels.npy")
    private = np.zeros(2000, dtype=bool)
    private[np.random.default_rng(HIDDEN_DEMO_SEED).permutation(2000)[:1000]] = True
    out = {}
    folder = data_dir / "cifar10/model_predictions/v6_predictions"
    for path in sorted(folder.glob("*_predictions.json")):
        hits = np.asarray(json.loads(path.read_text())) == labels
        out[path.name[: -len("_predictions.json")]] = (hits[~private].mean(),
                                                        hits[private].mean())
    return out


def _ranks(values: list[float]) -> list[int]:
    return [int(r) for r in rankdata([-v for v in values], method="min")]


def test_it_hosts_the_hidden_demo_and_reveals_its_shake_up(
    run_load_benchmarks: Callable[..., tuple[str, str]], catalog_settings: Settings,
    data_dir: Path,
) -> None:
    skipped = DemoSeedReport()
    hidden_demo_seed(data_dir=data_dir, report=skipped, echo=lambda line: None)
    assert (skipped.queued, skipped.skipped) == ([], [])  # CIFAR-10 is not loaded yet
    run_load_benchmarks("--benchmark", "cifar10")
    report, said = DemoSeedReport(), []
    hidden_demo_seed(data_dir=data_dir, report=report, echo=said.append)
    assert len(report.queued) == 30
    # the demo lab owns it, the site team keeps CIFAR-10 (leaderboard/demo/lab_team.py)
    assert dict(Benchmark.objects.filter(slug__in=["cifar10", HIDDEN_DEMO_SLUG]).values_list(
        "slug", "team__slug")) == {"cifar10": "site", HIDDEN_DEMO_SLUG: "demo-lab"}
    assert said[0] == ("cifar10-hidden belongs to team demo-lab (Demo vision lab): "
                       "demo-lab-admin (admin), demo-lab-host (host), demo-lab-reviewer "
                       "(reviewer); no passwords: `manage.py changepassword <name>` to log in "
                       "as one")
    for submission in Submission.objects.filter(benchmark__slug=HIDDEN_DEMO_SLUG):
        assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}"
                                      ).get() == "scored"
    again = DemoSeedReport()
    hidden_demo_seed(data_dir=data_dir, report=again, echo=lambda line: None)
    assert (len(again.queued), len(again.skipped)) == (0, 30)  # idempotent

    expected = _expected(data_dir)
    models = sorted(expected)
    board = Client().get(f"/api/benchmarks/{HIDDEN_DEMO_SLUG}/leaderboard/"
                         f"?sort={HIDDEN_DEMO_LABEL_SET}").json()
    shown = {r["model_name"]: r["scores"][HIDDEN_DEMO_LABEL_SET]["accuracy"]
             for r in board["rows"]}
    # the parameter-free Ladder releases a participant's first submission as scored
    assert shown == pytest.approx({m: expected[m][0] for m in models}, abs=1e-12)
    assert all(PRIVATE not in r["scores"] for r in board["rows"])

    # a host of the team that owns the demo benchmark (the demo's lab: docs/hosts/teams.md)
    factories.host_create("host", team=Benchmark.objects.get(slug=HIDDEN_DEMO_SLUG).team)
    out = io.StringIO()
    call_command("reveal_hidden", HIDDEN_DEMO_SLUG, HIDDEN_DEMO_LABEL_SET, "--by", "host",
                 stdout=out)
    assert out.getvalue() == f"{HIDDEN_DEMO_SLUG}/{HIDDEN_DEMO_LABEL_SET} phase 1: revealed\n"
    revealed = Client().get(f"/api/benchmarks/{HIDDEN_DEMO_SLUG}/leaderboard/"
                            f"?sort={PRIVATE}").json()
    public_ranks = dict(zip(models, _ranks([expected[m][0] for m in models]), strict=True))
    private_ranks = dict(zip(models, _ranks([expected[m][1] for m in models]), strict=True))
    got = {r["model_name"]: (r["scores"][PRIVATE]["accuracy"], r["ranks"][PRIVATE],
                             r["rank_shift"][PRIVATE]) for r in revealed["rows"]}
    assert got == {m: (pytest.approx(expected[m][1], abs=1e-12), private_ranks[m],
                       public_ranks[m] - private_ranks[m]) for m in models}
    moves = [abs(public_ranks[m] - private_ranks[m]) for m in models]
    print(f"hidden demo shake-up: {sum(1 for x in moves if x)} of 30 models move, "
          f"the largest move {max(moves)} places")
    assert sum(1 for x in moves if x) > 0  # a real split of real models moves some
