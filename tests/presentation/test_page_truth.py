"""What the demo's pages say must be true (issue 24): each page of the demo, rendered on the
demo's own data (`manage.py seed_demo` on the loaded benchmarks, every submission scored by
the real scoring task), has its stated counts and figures read back and compared with values
computed here with NumPy straight from the data directory's files: the published labels, the
human votes and the models' published predictions. Nothing here asks the selectors that drew
the pages.

The demo (every benchmark, 67 submissions, scored in this process) is seeded once for the
module and removed after it (tests/presentation/conftest.py `demo_seeded`); each test only
reads it, and what a test writes is rolled back with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.submissions.models import Submission
from tests import factories
from tests.demo_truth import (
    CIFAR10,
    CLEANLAB_CIFAR10,
    NEW_TEST_SETS,
    PREDICTIONS,
    Cifar10Truth,
    competition_ranks,
    page_get,
    page_text,
    pct,
    shift_text,
)
from tests.pages import home_cards, leaderboard_table

# the benchmarks with one demo model each (leaderboard/demo/seeding.py)
ONE_MODEL_BENCHMARKS = ("20news", "caltech256", "cifar100", "imagenet", "imdb", "mnist")


@pytest.mark.django_db
def test_it_counts_each_benchmarks_public_models_and_examples_on_the_home_page(
    demo: None, client: Client, truth: Cifar10Truth, data_dir: Path,
) -> None:
    cards = home_cards(page_get(client, "/"))
    submissions = {slug: card.facts["Submissions"] for slug, card in cards.items()}
    participants = {slug: card.facts["Participants"] for slug, card in cards.items()}
    # one demo model per benchmark of the label-error study, ImageNet and MNIST; 31 on
    # CIFAR-10 (30 published models and cleanlab's), all the demo user's; one participant per
    # model on the hidden demo
    assert submissions[CIFAR10] == str(len(truth.scores)) == "31"
    assert participants[CIFAR10] == "1"
    assert (submissions["cifar10-hidden"], participants["cifar10-hidden"]) == ("30", "30")
    for slug in ONE_MODEL_BENCHMARKS:
        assert (submissions[slug], participants[slug]) == ("1", "1"), slug
    v4, v6 = (np.load(data_dir / f"cifar10/cifar10.1_{v}_labels.npy").size for v in ("v4", "v6"))
    assert cards[CIFAR10].test_sets == (f"Test sets: cifar10-test ({truth.original.size:,}), "
                                        f"cifar10.1-v4 ({v4:,}), cifar10.1-v6 ({v6:,})")
    real = len(json.loads((data_dir / "imagenet/real.json").read_text()))
    assert cards["imagenet"].test_sets == f"Test set: imagenet-val ({real:,})"
    assert (cards["imdb"].kind.split(" · ")[0], cards["20news"].kind.split(" · ")[0],
            cards[CIFAR10].kind.split(" · ")[0]) == ("Text", "Text", "Image")


@pytest.mark.django_db
def test_it_names_the_best_model_the_largest_rank_shift_and_the_last_submission_of_cifar10(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    facts = home_cards(page_get(client, "/"))[CIFAR10].facts
    original = {model: scores["original"] for model, scores in truth.scores.items()}
    ranks = competition_ranks(original)
    (best,) = [model for model, rank in ranks.items() if rank == 1]
    # each model's move from its rank on the original labels to its rank on another label set
    # (among the models with a file for it); the largest either way, unique on this data
    moves = sorted(
        ((abs(ranks[m] - to), ranks[m], to, m, slug)
         for slug in ("corrected", "cifar10h", *NEW_TEST_SETS)
         for m, to in competition_ranks({m: s[slug] for m, s in truth.scores.items()
                                         if slug in s}).items()), reverse=True)
    assert moves[0][0] > moves[1][0]
    _, rank_from, rank_to, model, slug = moves[0]
    names = dict(LabelSet.objects.filter(benchmark__slug=CIFAR10).values_list("slug", "name"))
    last = Submission.objects.filter(benchmark__slug=CIFAR10, public=True,
                                     status=Submission.Status.SCORED).latest("created").created
    assert facts == {
        "Submissions": "31", "Participants": "1",
        "Last submission": timezone.localtime(last).date().isoformat(),
        f"Best on {names['original']}": f"{best} · {pct(*original[best])}",
        "Largest rank shift": f"{model} {shift_text(rank_from - rank_to)}: #{rank_from} on "
                              f"{names['original']}, #{rank_to} on {names[slug]}"}
    assert (best, model, slug, rank_from, rank_to) == (
        "shake_shake_26_2x64d_SSI_cutout16", "resnet_basic_32", "cifar10.1-v6", 25, 20)


@pytest.mark.django_db
def test_it_shows_every_cifar10_rows_accuracy_rank_and_shift_as_the_data_gives_them(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    page = page_get(client, f"/benchmarks/{CIFAR10}/")
    n = len(truth.scores)
    text = page_text(page)
    assert f"Rows 1–{n} of {n}" in text
    # no multi-label set on CIFAR-10: the legend says nothing of means over classes
    assert ("Each cell: top-1 accuracy, its 95% interval (Clopper-Pearson), the rank on that "
            "label set, and the rank shift against the original labels") in text
    _, rows = leaderboard_table(page)
    assert sorted(r.model for r in rows) == sorted(truth.scores)
    label_sets = ("original", "corrected", "cifar10h", *NEW_TEST_SETS)
    ranks = {slug: competition_ranks({m: s[slug] for m, s in truth.scores.items()
                                       if slug in s}) for slug in label_sets}
    for row in rows:
        for slug in label_sets:
            cell = row.cells[slug]
            if slug not in truth.scores[row.model]:
                # no file for that example set: the cell is a dash, no accuracy and no rank
                assert (cell.acc, cell.rank) == ("", ""), (row.model, slug)
                continue
            assert cell.acc == pct(*truth.scores[row.model][slug]), (row.model, slug)
            assert cell.rank == f"#{ranks[slug][row.model]}", (row.model, slug)
            if slug != "original":
                expected = shift_text(ranks["original"][row.model] - ranks[slug][row.model])
                assert cell.shift == expected, (row.model, slug)


def _fit(truth: Cifar10Truth, slug: str) -> tuple[float, float, list[str]]:
    """Least squares of new on original accuracy, in percent, over the models that have a
    file for the new test set (docs/metrics.md §8)."""
    models = [m for m, s in truth.scores.items() if slug in s]
    x = np.array([100 * truth.scores[m]["original"][0] / truth.scores[m]["original"][1]
                  for m in models])
    y = np.array([100 * truth.scores[m][slug][0] / truth.scores[m][slug][1] for m in models])
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), models


def _equation(slug: str, slope: float, intercept: float) -> str:
    sign = "−" if intercept < 0 else "+"
    return f"{slug} = {slope:.3f} × original {sign} {abs(intercept):.2f}"


def _swapped_pairs(a: dict[str, int], b: dict[str, int]) -> int:
    models = sorted(a)
    return sum((a[m] - a[k]) * (b[m] - b[k]) < 0
               for i, m in enumerate(models) for k in models[i + 1:])


@pytest.mark.django_db
@pytest.mark.parametrize("new", sorted(NEW_TEST_SETS))
def test_it_states_the_fits_n_and_the_rank_shake_up_of_the_plots_page(
    demo: None, client: Client, truth: Cifar10Truth, new: str,
) -> None:
    text = page_text(page_get(client, f"/benchmarks/{CIFAR10}/plots/?new={new}&labels=corrected"))
    slope, intercept, fitted = _fit(truth, new)
    assert len(fitted) == 30  # cleanlab's model has no CIFAR-10.1 predictions
    # the page said "the least-squares fit over 0 submissions" above a fit of n = 30
    assert f"the least-squares fit over {len(fitted)} submissions," in text
    assert f"{_equation(new, slope, intercept)} (accuracies in %, n = {len(fitted)})" in text
    original = competition_ranks({m: s["original"] for m, s in truth.scores.items()})
    corrected = competition_ranks({m: s["corrected"] for m, s in truth.scores.items()})
    shifts = [original[m] - corrected[m] for m in truth.scores]
    n = len(truth.scores)
    swapped = _swapped_pairs(original, corrected)
    assert (f"{swapped} swapped pair{'s' if swapped != 1 else ''} among {n} models · "
            f"{sum(s > 0 for s in shifts)} moved up · {sum(s < 0 for s in shifts)} moved down · "
            f"{sum(s == 0 for s in shifts)} kept their rank") in text
    assert f"Data table ({n} submissions)" in text
    # the noise-prevalence curves start from the share of C in the pruned set
    assert (f"grows from {pct(truth.correctable, truth.pruned)} to 100% (Northcutt et al. "
            f"2021, appendix E; |C| = {truth.correctable:,}, "
            f"|B| = {truth.pruned - truth.correctable:,})") in text


@pytest.mark.django_db
def test_it_gives_each_label_sets_size_and_the_number_of_submissions_on_the_about_page(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    page = page_get(client, f"/benchmarks/{CIFAR10}/about/")
    sizes = re.findall(r'<dd class="about-size">([^<]*)</dd>', page)
    model = truth.scores["alexnet_tf_ben"]  # has a file for every example set
    assert sizes == [f"{model[slug][1]:,} examples evaluated" for slug in
                     ("original", "corrected", "cifar10h", *NEW_TEST_SETS)]
    assert model["corrected"][1] == truth.pruned
    text = page_text(page)
    assert f"confused by the {len(truth.scores)} public scored submissions:" in text
    assert text.count("history (1 version)") == 5


@pytest.mark.django_db
def test_it_shows_each_submissions_counts_gaps_and_residuals_as_the_data_gives_them(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    fits = {slug: _fit(truth, slug) for slug in NEW_TEST_SETS}
    c_set = (truth.corrected != truth.original) & (truth.corrected >= 0)  # the set C
    assert int(c_set.sum()) == truth.correctable
    for submission in Submission.objects.filter(benchmark__slug=CIFAR10):
        model = submission.model_name
        scores = truth.scores[model]
        text = page_text(page_get(client, f"/submissions/{submission.pk}/"))

        def stated(label: str, c: int, n: int, text: str = text, model: str = model) -> None:
            assert f"{label} {pct(c, n)} {c:,} / {n:,} " in text, (model, label)

        stated("Top-1 accuracy", *scores["original"])
        stated("Top-1 accuracy on corrected labels (pruned set)", *scores["corrected"])
        top1 = truth.predictions[model]
        kept = truth.corrected >= 0
        stated("Original labels on the same pruned set",
               int((top1 == truth.original)[kept].sum()), truth.pruned)
        stated("Correctable set: Acc@1 (original labels)",
               int((top1 == truth.original)[c_set].sum()), truth.correctable)
        stated("Correctable set: cAcc@1 (corrected labels)",
               int((top1 == truth.corrected)[c_set].sum()), truth.correctable)
        stated("Plurality accuracy (human majority class)", *scores["cifar10h"])
        original = 100 * scores["original"][0] / scores["original"][1]
        for slug, (slope, intercept, _) in fits.items():
            if slug not in scores:
                assert slug not in text.split("Effective robustness")[-1], model
                continue
            stated("Top-1 accuracy", *scores[slug])
            new = 100 * scores[slug][0] / scores[slug][1]
            assert f"minus this one) {original - new:.2f} points" in text, (model, slug)
            predicted = slope * original + intercept
            assert (f"{slug} fit: {_equation(slug, slope, intercept)} (n = 30) "
                    f"{new - predicted:+.2f} {original:.2f}% {new:.2f}% {predicted:.2f}%") \
                in text, (model, slug)


@pytest.mark.django_db
def test_it_counts_the_examples_only_one_of_two_models_gets_right_on_the_compare_page(
    demo: None, client: Client, truth: Cifar10Truth, data_dir: Path,
) -> None:
    ids = dict(Submission.objects.filter(benchmark__slug=CIFAR10)
               .values_list("model_name", "pk"))
    first, second = "alexnet_tf_ben", "cudaconvnet"
    text = page_text(page_get(client, f"/submissions/{ids[first]}/compare/{ids[second]}/"))
    a, b = truth.predictions[first], truth.predictions[second]
    kept = truth.corrected >= 0
    only = {"original": ((a == truth.original) & (b != truth.original),
                         (b == truth.original) & (a != truth.original)),
            "corrected": (((a == truth.corrected) & (b != truth.corrected))[kept],
                          ((b == truth.corrected) & (a != truth.corrected))[kept])}
    for slug, v in NEW_TEST_SETS.items():
        labels = np.load(data_dir / f"cifar10/cifar10.1_{v}_labels.npy")
        pa, pb = (np.array(json.loads(
            (data_dir / PREDICTIONS / f"{v}_predictions" / f"{m}_predictions.json").read_text()))
            for m in (first, second))
        only[slug] = ((pa == labels) & (pb != labels), (pb == labels) & (pa != labels))
    for slug, (one, other) in only.items():
        ranks = competition_ranks({m: s[slug] for m, s in truth.scores.items() if slug in s})
        assert (f"{slug} v1 {pct(*truth.scores[first][slug])} #{ranks[first]} "
                f"{pct(*truth.scores[second][slug])} #{ranks[second]}") in text, slug
        assert f" {int(one.sum()):,} / {int(other.sum()):,} p " in text, slug
    one, other = only["original"]
    assert f"Examples of original exactly one gets right {int(one.sum() + other.sum()):,}" \
        in text


def _imagenet_real(data_dir: Path) -> tuple[int, int, int]:
    """(novel pairs, ReaL hits, included images) of cleanlab's ResNet-50 put into file-number
    order. docs/metrics.md §4: an image is included when real.json accepts a label for it; a
    top-1 is a hit when accepted, and novel when no rater judged it (neither accepted nor
    rated in real_scores.npz)."""
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    paths = json.loads((data_dir / "imagenet/cleanlab_index_to_filepath.json").read_text())
    top1 = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    rated = {(str(name), int(cls)) for name, cls in
             np.load(data_dir / "imagenet/real_scores.npz")["info"]}
    novel = hits = 0
    for path, cls in zip(paths, top1.tolist(), strict=True):
        name = path.rsplit("/", 1)[-1]
        accepted = real[int(name[len("ILSVRC2012_val_"):-len(".JPEG")]) - 1]
        hits += cls in accepted
        novel += bool(accepted) and cls not in accepted and (name, cls) not in rated
    return novel, hits, sum(1 for labels in real if labels)


@pytest.mark.django_db
def test_it_counts_the_open_review_items_of_each_benchmark(
    demo: None, client: Client, data_dir: Path,
) -> None:
    client.force_login(factories.host_create("maintainer"))
    page = page_get(client, "/review/")
    table = re.search(r"(?s)<table.*?</table>", page)
    assert table is not None
    counts = dict(re.findall(r"\(?([\w.-]+)\)? (\d[\d,]*)\b", page_text(table.group(0))))
    novel, hits, included = _imagenet_real(data_dir)
    expected = {"imagenet": f"{novel:,}"}
    for slug in ("20news", "caltech256", CIFAR10, "cifar100", "imdb", "mnist"):
        expected[slug] = "0"  # no `real` or `multilabel` set: nothing goes to review
    assert {slug: counts[slug] for slug in expected} == expected
    # a host of the site team reviews the site team's benchmarks only, not the demo lab's
    assert "cifar10-hidden" not in counts and "cifar10-hidden" in Benchmark.objects.filter(
        team__slug="demo-lab").values_list("slug", flat=True)

    # the demo's ImageNet submission says the same, with its ReaL accuracy
    imagenet = Submission.objects.get(benchmark__slug="imagenet").pk
    text = page_text(page_get(client, f"/submissions/{imagenet}/"))
    assert f"Predictions awaiting review: {novel:,} on real ." in text
    assert f"ReaL accuracy (top-1) {pct(hits, included)} {hits:,} / {included:,} " in text


@pytest.mark.django_db
def test_it_counts_what_the_mistake_gallery_shows_and_links_it_only_where_it_has_a_section(
    demo: None, client: Client, truth: Cifar10Truth,
) -> None:
    ids = dict(Submission.objects.filter(benchmark__slug=CIFAR10)
               .values_list("model_name", "pk"))
    c_set = (truth.corrected != truth.original) & (truth.corrected >= 0)
    for model in ("alexnet_tf_ben", "shake_drop", CLEANLAB_CIFAR10):
        detail = page_text(page_get(client, f"/submissions/{ids[model]}/"))
        assert ("Mistake gallery : its predictions on the examples whose label was "
                "corrected. About these label sets") in detail
        top1 = truth.predictions[model][c_set]
        on_original = int((top1 == truth.original[c_set]).sum())
        on_corrected = int((top1 == truth.corrected[c_set]).sum())
        gallery = page_text(page_get(client, f"/submissions/{ids[model]}/mistakes/"))
        assert (f"The prediction matches the original label on {on_original} , the corrected "
                f"label on {on_corrected} and neither on "
                f"{truth.correctable - on_original - on_corrected} of {truth.correctable} "
                "(Acc@1 and cAcc@1 on C).") in gallery, model
    # ImageNet's demo has no multi-label set, so no ImageNet-M misses to show; the hidden
    # demo has no corrected labels, so no gallery at all
    imagenet = Submission.objects.get(benchmark__slug="imagenet").pk
    detail = page_text(page_get(client, f"/submissions/{imagenet}/"))
    assert "Mistake gallery : its predictions on the examples whose label was corrected." \
        in detail and "ImageNet-M" not in detail
    hidden = Submission.objects.filter(benchmark__slug="cifar10-hidden").first()
    assert hidden is not None
    detail = page_text(page_get(client, f"/submissions/{hidden.pk}/"))
    assert "Mistake gallery" not in detail and "About these label sets" in detail


@pytest.mark.django_db
def test_it_shows_a_hidden_demo_rows_released_best_as_its_board_does_in_the_third_person(
    demo: None, client: Client, data_dir: Path,
) -> None:
    v6 = np.load(data_dir / "cifar10/cifar10.1_v6_labels.npy")
    _, rows = leaderboard_table(page_get(client, "/benchmarks/cifar10-hidden/"))
    assert len(rows) == 30  # one participant per published model
    for row in rows[:3]:
        cell = row.cells["cifar10.1-v6-hidden"].acc
        text = page_text(page_get(client, f"/submissions/{row.submission_id}/"))
        # the public half of CIFAR-10.1 v6 (split 50/50, docs/metrics.md §17)
        assert f"Its participant's released best: {cell} over the {v6.size // 2:,} " \
               "examples of the public part." in text, row.model
        assert "A new best for its participant: this figure is now their row on the board." \
            in text and "your" not in text.lower().split("hidden label sets")[-1], row.model


@pytest.mark.django_db
def test_it_says_what_the_plots_of_a_one_model_or_hidden_benchmark_show(
    demo: None, client: Client, data_dir: Path,
) -> None:
    text = page_text(page_get(client, "/benchmarks/imagenet/plots/"))
    # one demo model on ImageNet (leaderboard/demo/seeding.py)
    assert "0 swapped pairs among 1 model · 0 moved up · 0 moved down · 1 kept their rank" \
        in text
    assert "Data table (1 submission)" in text
    assert "Showing the one submission scored on corrected labels; choose others above." in text
    # a mean over classes is named only where a label set is one (tests/presentation/boards/
    # test_board_class_mean.py: ImageNet's multilabel); the demo has none
    assert "Bars are 95% Clopper-Pearson intervals." in text
    cifar = page_text(page_get(client, f"/benchmarks/{CIFAR10}/plots/"))
    assert "Bars are 95% Clopper-Pearson intervals." in cifar
    assert "mean over classes" not in cifar
    # cifar10-hidden: its original labels, and CIFAR-10.1 v6 hidden
    text = page_text(page_get(client, "/benchmarks/cifar10-hidden/plots/"))
    assert ("This benchmark's other label set is hidden, and a hidden label set is not "
            "plotted: nothing to compare yet.") in text
