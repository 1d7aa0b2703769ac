"""The plots pages on six real CIFAR-10 models (published predictions, scored in-process): the
data of every chart equals a direct computation from the stored scores and the label files,
the SVGs have one linked point per submission, the downloads agree with the data, and each
submission page shows its residual from the new-test-set fit."""

from __future__ import annotations

import csv
import io
import json
import re
from itertools import combinations
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.presentation.charts import selectors as selectors_plots
from leaderboard.presentation.charts.noise import auto_max_prevalence
from leaderboard.submissions.models import Score, Submission
from leaderboard.templatetags.plots_extras import signed_points
from tests.scored_models import predictions, score_in_process, submit_model
from workers.scoring import stats

pytestmark = pytest.mark.django_db

# Six real models whose order changes between label sets; on corrected labels vgg16_keras
# overtakes densenet_BC_100_12's curve and the top three cross on original labels.
MODELS = ("vgg16_keras", "resnet_basic_110", "shake_shake_26_2x96d_SSI", "wrn_28_10_cutout16",
          "shake_drop", "densenet_BC_100_12")
LABEL_FILES = {"original": ("cifar10-test", "original_labels.npy"),
               "cifar10.1-v4": ("cifar10.1-v4", "cifar10.1_v4_labels.npy"),
               "cifar10.1-v6": ("cifar10.1-v6", "cifar10.1_v6_labels.npy")}


@pytest.fixture
def scored(run_load_benchmarks: Any, catalog_settings: Settings,
           data_dir: Path) -> list[Submission]:
    """The six models submitted by six users and scored, in MODELS order (= id order)."""
    run_load_benchmarks("--benchmark", "cifar10")
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    out = []
    for model in MODELS:
        submission = submit_model(data_dir, model)
        assert score_in_process(submission) == "scored"
        submission.refresh_from_db()
        out.append(submission)
    return out


def _direct_accuracy(data_dir: Path, model: str, slug: str) -> tuple[int, int]:
    example_set, label_file = LABEL_FILES[slug]
    labels = np.load(data_dir / "cifar10" / label_file)
    hits = predictions(data_dir, model, example_set) == labels
    return int(hits.sum()), int(hits.size)


def _stored(submission: Submission, slug: str) -> Score:
    return Score.objects.get(submission=submission, label_set__slug=slug)


def _rank(values: list[float]) -> list[int]:
    return [1 + sum(other > mine for other in values) for mine in values]


def test_it_plots_new_test_sets_and_their_fit_like_a_direct_computation(
        scored: list[Submission], data_dir: Path, client: Client) -> None:
    for slug in ("cifar10.1-v6", "cifar10.1-v4"):
        answer = client.get(f"/benchmarks/cifar10/plots/new-test-set/{slug}.json")
        assert answer.status_code == 200
        data = answer.json()
        assert [p["submission_id"] for p in data["points"]] == [s.pk for s in scored]
        assert [p["model_name"] for p in data["points"]] == list(MODELS)
        x, y = [], []
        for point, model in zip(data["points"], MODELS, strict=True):
            for axis, label_set in (("x", "original"), ("y", slug)):
                correct, total = _direct_accuracy(data_dir, model, label_set)
                low, high = stats.clopper_pearson(correct, total)
                assert point[axis] == correct / total
                assert (point[f"{axis}_low"], point[f"{axis}_high"]) == (low, high)
            x.append(point["x"])
            y.append(point["y"])
        fit = stats.linear_fit(np.array(x), np.array(y), n_boot=1000, seed=0)
        assert data["fit"]["slope"] == fit.slope and data["fit"]["intercept"] == fit.intercept
        assert data["fit"]["grid"] == fit.grid.tolist()
        assert data["fit"]["band_low"] == fit.band_low.tolist()
        assert data["fit"]["band_high"] == fit.band_high.tolist()
        assert [p["residual"] for p in data["points"]] == fit.residuals.tolist()
        assert [p["predicted"] for p in data["points"]] == \
            (fit.slope * np.array(x) + fit.intercept).tolist()
        assert data["fit"]["n"] == 6 and data["x"]["label_set"] == "original"
    # the fit is a real one: CIFAR-10.1 is harder, with a slope above 1 (Recht et al. 2019)
    assert data["fit"]["slope"] > 1 and all(p["y"] < p["x"] for p in data["points"])


@pytest.mark.parametrize("scale", ["probit", "logit"])
def test_it_fits_new_test_sets_on_probit_and_logit_scales_like_a_direct_computation(
        scale: str, scored: list[Submission], client: Client) -> None:
    from scipy.stats import norm

    forward = {"probit": norm.ppf, "logit": lambda a: np.log(a / (1 - a))}[scale]
    back = {"probit": norm.cdf, "logit": lambda z: 1 / (1 + np.exp(-z))}[scale]
    data = client.get(f"/benchmarks/cifar10/plots/new-test-set/cifar10.1-v6.json?scale={scale}"
                      ).json()
    x = np.array([_stored(s, "original").accuracy for s in scored])
    y = np.array([_stored(s, "cifar10.1-v6").accuracy for s in scored])
    slope, intercept = np.polyfit(forward(x), forward(y), 1)
    assert data["fit"]["scale"] == scale and data["fit"]["n"] == 6
    assert data["fit"]["slope"] == pytest.approx(slope, rel=1e-12)
    assert data["fit"]["intercept"] == pytest.approx(intercept, rel=1e-12)
    predicted = back(slope * forward(x) + intercept)
    np.testing.assert_allclose([p["residual"] for p in data["points"]], y - predicted,
                               rtol=0, atol=1e-13)
    np.testing.assert_allclose(data["fit"]["line"],
                               back(slope * forward(np.array(data["fit"]["grid"])) + intercept),
                               rtol=0, atol=1e-13)
    # a private submission is measured against the same fit, on the same scale
    private = scored[2]
    Submission.objects.filter(pk=private.pk).update(public=False)
    scored[0].benchmark.refresh_from_db()
    rows = selectors_plots.submission_effective_robustness(submission=private, scale=scale)
    assert rows[0]["scale"] == scale
    assert rows[0]["residual"] == pytest.approx(
        y[2] - back(slope * forward(x[2]) + intercept), abs=1e-13)
    page = client.get(f"/benchmarks/cifar10/plots/?scale={scale}").content.decode()
    assert f'<option value="{scale}" selected>' in page
    assert f"<strong>{scale}(cifar10.1-v6) = {slope:.3f} × {scale}(original)" in page


def test_it_refuses_an_unknown_fit_scale_with_the_error_shape(
        scored: list[Submission], client: Client) -> None:
    answer = client.get("/benchmarks/cifar10/plots/new-test-set/cifar10.1-v6.json?scale=cubic")
    assert answer.status_code == 400
    assert answer.json() == {"error": {
        "code": "unknown_scale", "field": "scale",
        "message": "no fit scale 'cubic'; choose one of linear, probit, logit"}}
    assert client.get("/benchmarks/cifar10/plots/?scale=cubic").status_code == 400


def test_it_shows_each_submissions_residual_on_its_page(
        scored: list[Submission], client: Client) -> None:
    data = selectors_plots.new_test_set_plot(benchmark=scored[0].benchmark,
                                             label_set="cifar10.1-v6")
    for submission, point in zip(scored, data["points"], strict=True):
        rows = selectors_plots.submission_effective_robustness(submission=submission)
        assert [r["label_set"] for r in rows] == ["cifar10.1-v6", "cifar10.1-v4"]
        assert rows[0]["residual"] == point["residual"] and rows[0]["in_fit"]
        html = client.get(f"/submissions/{submission.pk}/").content.decode()
        section = html[html.index('id="effective-robustness"'):]
        cell = re.search(r'data-label-set="cifar10\.1-v6".*?<strong>([^<]+)</strong>', section,
                         re.S)
        assert cell is not None and cell.group(1) == f"{point['residual'] * 100:+.2f}"


def test_it_ranks_label_sets_and_counts_inversions_from_the_stored_scores(
        scored: list[Submission], client: Client) -> None:
    for slug in ("corrected", "cifar10h"):
        data = client.get(f"/benchmarks/cifar10/plots/label-set/{slug}.json").json()
        original = [_stored(s, "original").accuracy for s in scored]
        other = [_stored(s, slug).accuracy for s in scored]
        rank_x, rank_y = _rank(original), _rank(other)
        assert [(p["x"], p["y"]) for p in data["points"]] == list(zip(original, other,
                                                                     strict=True))
        assert [(p["y_low"], p["y_high"]) for p in data["points"]] == [
            (_stored(s, slug).ci_low, _stored(s, slug).ci_high) for s in scored]
        assert [p["rank_x"] for p in data["points"]] == rank_x
        assert [p["rank_y"] for p in data["points"]] == rank_y
        assert [p["shift"] for p in data["points"]] == [a - b for a, b in zip(rank_x, rank_y,
                                                                             strict=True)]
        swapped = sum((rank_x[i] - rank_x[j]) * (rank_y[i] - rank_y[j]) < 0
                      for i, j in combinations(range(6), 2))
        assert data["inversions"] == {
            "up": sum(a > b for a, b in zip(rank_x, rank_y, strict=True)),
            "down": sum(a < b for a, b in zip(rank_x, rank_y, strict=True)),
            "same": sum(a == b for a, b in zip(rank_x, rank_y, strict=True)),
            "swapped_pairs": swapped, "n": 6}
    # the ranks API agrees (the ranks chart's data is the label-set data)
    assert client.get("/benchmarks/cifar10/plots/ranks/corrected.json").json() == \
        client.get("/benchmarks/cifar10/plots/label-set/corrected.json").json()


def test_it_draws_noise_prevalence_curves_and_crossings_like_the_core(
        scored: list[Submission], client: Client) -> None:
    corrected = sorted(scored, key=lambda s: (-_stored(s, "corrected").accuracy, s.pk))
    data = client.get("/benchmarks/cifar10/plots/noise-prevalence.json").json()
    assert data["default"] is True
    assert [s["submission_id"] for s in data["submissions"]] == [s.pk for s in corrected[:5]]
    _check_noise(data, corrected[:5])
    chosen = [scored[0], scored[2], scored[5]]
    data = client.get("/benchmarks/cifar10/plots/noise-prevalence.json",
                      {"ids": ",".join(str(s.pk) for s in chosen)}).json()
    assert data["default"] is False
    _check_noise(data, chosen)


def _check_noise(data: dict[str, Any], chosen: list[Submission]) -> None:
    inputs = {s.pk: _stored(s, "corrected").record["noise_prevalence"] for s in chosen}
    n_c, n_b = inputs[chosen[0].pk]["n_c"], inputs[chosen[0].pk]["n_b"]
    assert (data["n_c"], data["n_b"]) == (n_c, n_b) == (18, 9946)
    prevalence = np.array(data["prevalence"])
    assert prevalence[0] == n_c / (n_c + n_b) and prevalence[-1] == 1.0
    x = np.array(data["x"])
    for curve, submission in zip(data["submissions"], chosen, strict=True):
        i = inputs[submission.pk]
        for labels, key in (("original", "acc_c_original"), ("corrected", "acc_c_corrected")):
            n, acc = stats.noise_prevalence_curve(acc_c=i[key], n_c=n_c, acc_b=i["acc_b"],
                                                  n_b=n_b, x=x)
            assert curve[labels] == acc.tolist() and np.allclose(n, prevalence)
        # at x = 0 the curves are the stored accuracies on the pruned set
        assert curve["corrected"][0] == pytest.approx(_stored(submission, "corrected").accuracy)
    expected = []
    for a, b in combinations(chosen, 2):
        for labels, key in (("original", "acc_c_original"), ("corrected", "acc_c_corrected")):
            ia, ib = inputs[a.pk], inputs[b.pk]
            cross = stats.noise_prevalence_crossing(first=(ia[key], ia["acc_b"]),
                                                    second=(ib[key], ib["acc_b"]),
                                                    n_c=n_c, n_b=n_b)
            if cross is not None and 0 < cross < 1:  # meeting at an end is no swap
                _, (acc,) = stats.noise_prevalence_curve(acc_c=ia[key], n_c=n_c,
                                                         acc_b=ia["acc_b"], n_b=n_b,
                                                         x=np.array([cross]))
                expected.append((labels, a.pk, b.pk, cross, n_c / (n_c + n_b - cross * n_b),
                                 float(acc)))
    found = [(c["labels"], c["first"], c["second"], c["x"], c["prevalence"], c["accuracy"])
             for c in data["crossings"]]
    assert sorted(found) == sorted(expected) and found


def test_it_draws_one_linked_point_per_submission(
        scored: list[Submission], client: Client) -> None:
    page = client.get("/benchmarks/cifar10/plots/")
    assert page.status_code == 200
    html = page.content.decode()
    for url in ("/benchmarks/cifar10/plots/new-test-set/cifar10.1-v6.svg",
                "/benchmarks/cifar10/plots/label-set/corrected.svg",
                "/benchmarks/cifar10/plots/ranks/corrected.svg"):
        answer = client.get(url)
        assert answer.status_code == 200 and answer["Content-Type"] == "image/svg+xml"
        svg = answer.content.decode()
        ElementTree.fromstring(answer.content)  # a well-formed standalone SVG file
        assert svg.count('class="plot-pt"') == 6
        for submission in scored:
            assert svg.count(f'href="http://testserver/submissions/{submission.pk}/"') == 1
            assert f"<title>{submission.model_name} (#{submission.pk})" in svg
        assert url in html  # linked from the page
    # the page inlines every chart twice (desktop and phone layouts)
    assert html.count('class="plot-pt"') == 3 * 2 * 6
    assert html.count('class="plot-chart plot-noise"') == 2
    noise = client.get("/benchmarks/cifar10/plots/noise-prevalence.svg").content.decode()
    assert noise.count('class="curve-corrected"') == noise.count('class="curve-original"') == 5
    data = client.get("/benchmarks/cifar10/plots/noise-prevalence.json").json()
    top = auto_max_prevalence(data)  # where the x axis ends: past the last crossing
    assert 0 < top < 1
    shown = [c for c in data["crossings"] if c["prevalence"] <= top]
    assert noise.count('class="crossing"') == len(shown) > 0
    assert html.count('<tr><td class="num number">') == len(data["crossings"])  # the table
    leaderboard = client.get("/benchmarks/cifar10/").content.decode()
    assert 'href="/benchmarks/cifar10/plots/" class="plots-link"' in leaderboard


def test_it_downloads_csv_that_matches_the_json(scored: list[Submission], client: Client) -> None:
    base = "/benchmarks/cifar10/plots"
    data = client.get(f"{base}/new-test-set/cifar10.1-v6.json").json()
    answer = client.get(f"{base}/new-test-set/cifar10.1-v6.csv")
    assert answer["Content-Disposition"] == \
        'attachment; filename="cifar10-new-test-set-cifar10.1-v6.csv"'
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert [int(r["submission_id"]) for r in rows] == [p["submission_id"] for p in data["points"]]
    assert [float(r["cifar10.1-v6_accuracy"]) for r in rows] == [p["y"] for p in data["points"]]
    assert [float(r["residual"]) for r in rows] == [p["residual"] for p in data["points"]]
    assert {float(r["slope"]) for r in rows} == {data["fit"]["slope"]}
    band = list(csv.DictReader(io.StringIO(
        client.get(f"{base}/new-test-set/cifar10.1-v6.csv", {"part": "band"}).content.decode())))
    assert [float(r["band_low"]) for r in band] == data["fit"]["band_low"]
    ranks = list(csv.DictReader(io.StringIO(
        client.get(f"{base}/label-set/corrected.csv").content.decode())))
    labels = client.get(f"{base}/label-set/corrected.json").json()
    assert [int(r["corrected_rank"]) for r in ranks] == [p["rank_y"] for p in labels["points"]]
    noise = client.get(f"{base}/noise-prevalence.json").json()
    curves = list(csv.DictReader(io.StringIO(
        client.get(f"{base}/noise-prevalence.csv").content.decode())))
    assert len(curves) == 5 * 2 * selectors_plots.CURVE_POINTS
    crossings = list(csv.DictReader(io.StringIO(client.get(
        f"{base}/noise-prevalence.csv", {"part": "crossings"}).content.decode())))
    assert [float(r["noise_prevalence"]) for r in crossings] == \
        [c["prevalence"] for c in noise["crossings"]]


def test_it_refuses_unknown_label_sets_and_bad_ids(
        scored: list[Submission], client: Client) -> None:
    base = "/benchmarks/cifar10/plots"
    answer = client.get(f"{base}/new-test-set/corrected.json")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "unknown_label_set"
    assert client.get(f"{base}/noise-prevalence.json", {"ids": "1,x"}).json()["error"][
        "code"] == "invalid_ids"
    missing = client.get(f"{base}/noise-prevalence.json", {"ids": f"{scored[0].pk},99999"})
    assert missing.status_code == 400 and "#99999" in missing.json()["error"]["message"]
    page = client.get(f"{base}/", {"labels": "nope"})
    assert page.status_code == 400 and b"no label set &#x27;nope&#x27;" in page.content
    assert client.get("/benchmarks/nope/plots/").status_code == 404
    # a private submission is on no chart
    Submission.objects.filter(pk=scored[0].pk).update(public=False)
    scored[0].benchmark.leaderboard_generation += 1
    scored[0].benchmark.save(update_fields=["leaderboard_generation"])
    data = client.get(f"{base}/new-test-set/cifar10.1-v6.json").json()
    assert [p["submission_id"] for p in data["points"]] == [s.pk for s in scored[1:]]
    assert json.dumps(data)  # plain JSON: no NaN
    # ... but its page still measures it against the public fit
    scored[0].refresh_from_db()
    (row, _) = selectors_plots.submission_effective_robustness(submission=scored[0])
    original, new = _stored(scored[0], "original").accuracy, _stored(scored[0],
                                                                     "cifar10.1-v6").accuracy
    assert row["in_fit"] is False and row["n"] == 5
    assert row["residual"] == new - (data["fit"]["slope"] * original + data["fit"]["intercept"])


def test_it_draws_empty_charts_before_any_submission(
        run_load_benchmarks: Any, client: Client) -> None:
    run_load_benchmarks("--benchmark", "mnist")  # original and corrected labels only
    html = client.get("/benchmarks/mnist/plots/").content.decode()
    assert 'id="new-test-set"' not in html and 'id="label-set"' in html
    assert html.count("no public scored submissions yet") == 2 * 2  # scatter and ranks
    assert "no submissions with a corrected score" in html
    data = client.get("/benchmarks/mnist/plots/noise-prevalence.json").json()
    assert data["submissions"] == [] and data["crossings"] == []
    assert client.get("/benchmarks/mnist/plots/new-test-set/corrected.json").status_code == 400


def test_it_shows_a_dash_for_a_point_without_a_residual() -> None:
    """Under 3 points there is no fit and a point has no residual: the page's table gave the
    filter the template's "" for it, which answered 500."""
    assert [signed_points(v) for v in (0.0052, -0.01, None, "")] == ["+0.52", "-1.00", "—", "—"]
