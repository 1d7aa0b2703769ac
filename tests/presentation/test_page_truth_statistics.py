"""What the demo's CIFAR-10 board and plots say of significance and of noise, against values
computed here from the data files (as tests/presentation/test_page_truth.py does for counts
and accuracies): every row's Rank (UB) by an exact McNemar test with SciPy, and the crossings
of the noise-prevalence curves."""

from __future__ import annotations

import pytest
from django.test import Client
from scipy.stats import binom

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.board_significance import board_significance_refresh
from leaderboard.submissions.models import Submission
from tests.demo_truth import CIFAR10, Cifar10Truth, page_get, page_text


@pytest.mark.django_db
def test_it_gives_every_cifar10_rows_rank_ub_as_mcnemars_test_on_the_data_gives_it(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    """docs/metrics.md §10.3: 1 + the rows that get more examples right with an exact two-sided
    McNemar p < 0.05 against this one, on the original labels and on the pruned corrected
    ones; the significance computed as the worker does after a scoring."""
    board_significance_refresh(benchmark_id=Benchmark.objects.get(slug=CIFAR10).pk)
    for slug, labels, kept in (("original", truth.original, truth.original >= 0),
                               ("corrected", truth.corrected, truth.corrected >= 0)):
        hits = {m: (top1 == labels)[kept] for m, top1 in truth.predictions.items()}
        expected = {}
        for model, mine in hits.items():
            better = 0
            for other in hits.values():
                if other.sum() <= mine.sum():
                    continue
                b, c = int((other & ~mine).sum()), int((mine & ~other).sum())
                better += bool(min(1.0, 2 * binom.cdf(min(b, c), b + c, 0.5)) < 0.05)
            expected[model] = 1 + better
        rows = client.get(f"/api/benchmarks/{CIFAR10}/leaderboard/?sort={slug}"
                          "&page_size=100").json()["rows"]
        assert {row["model_name"]: row["rank_ub"] for row in rows} == expected, slug
        # not every row ties with its neighbours: the figure says something on this board
        assert len(set(expected.values())) > 5, slug
        page = page_text(page_get(client, f"/benchmarks/{CIFAR10}/?sort={slug}"))
        assert "Rank (UB)" in page and "computing" not in page, slug


@pytest.mark.django_db
def test_it_lists_the_noise_prevalence_crossings_the_data_gives(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    """docs/metrics.md §9 on the eight best models on corrected labels: two curves cross at
    x* = 1 + |C| dA_C / (|B| dA_B) when 0 < x* < 1; computed from the labels and predictions."""
    kept = truth.corrected >= 0
    c_set = kept & (truth.corrected != truth.original)
    b_set = kept & ~c_set
    n_c, n_b = int(c_set.sum()), int(b_set.sum())
    best = sorted(truth.scores, key=lambda m: -truth.scores[m]["corrected"][0])[:8]
    parts = {m: {"b": (truth.predictions[m] == truth.original)[b_set].mean(),
                 "original": (truth.predictions[m] == truth.original)[c_set].mean(),
                 "corrected": (truth.predictions[m] == truth.corrected)[c_set].mean()}
             for m in best}
    expected = []
    for i, first in enumerate(best):
        for second in best[i + 1:]:
            a, b = parts[first], parts[second]
            for labels in ("original", "corrected"):
                if a["b"] == b["b"]:
                    continue
                x = 1 + n_c * (a[labels] - b[labels]) / (n_b * (a["b"] - b["b"]))
                if not 0 < x < 1:
                    continue
                kept_b = (1 - x) * n_b
                ahead = first if a["b"] * n_b + a[labels] * n_c >= \
                    b["b"] * n_b + b[labels] * n_c else second
                expected.append((labels, {first, second}, n_c / (n_c + kept_b),
                                 (a[labels] * n_c + a["b"] * kept_b) / (n_c + kept_b), ahead))
    expected.sort(key=lambda e: (e[0] != "corrected", e[2]))
    ids = dict(Submission.objects.filter(benchmark__slug=CIFAR10)
               .values_list("model_name", "pk"))
    names = {pk: model for model, pk in ids.items()}
    data = client.get(f"/benchmarks/{CIFAR10}/plots/noise-prevalence.json"
                      f"?ids={','.join(str(ids[m]) for m in best)}").json()

    got = [(c["labels"], {names[c["first"]], names[c["second"]]}, c["prevalence"],
            c["accuracy"], names[c["ahead_before"]]) for c in data["crossings"]]
    assert [(e[0], e[1], e[4]) for e in got] == [(e[0], e[1], e[4]) for e in expected]
    assert [v for e in got for v in e[2:4]] == pytest.approx(
        [float(v) for e in expected for v in e[2:4]], abs=1e-12)
    assert len(expected) > 3  # some pairs do swap order on this board
