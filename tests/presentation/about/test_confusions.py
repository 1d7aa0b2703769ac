"""The about page's most confused classes: the pairs the expert panel's model confused
(imagenet/mistakes/class_confusion_wnids.json) and those most common among our public scored
submissions on the corrected labels, counted here with plain loops (collections.Counter)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.presentation.about.confusions import TOP_CONFUSIONS, benchmark_confusions
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_visibility_set
from tests.scored_models import predictions, score_in_process, submit_model

pytestmark = pytest.mark.django_db


def _expected(data_dir: Path, models: list[str]) -> Counter[tuple[int, int]]:
    """Unordered {corrected label, top-1} pairs over the pruned set, summed over models."""
    version = (LabelSetVersion.objects.filter(label_set__benchmark__slug="cifar10",
                                              label_set__slug="corrected")
               .order_by("-number").first())
    assert version is not None
    arrays = compiled_for_version(version).arrays
    labels, pruned = arrays["corrected_labels"].tolist(), arrays["pruned"].tolist()
    counts: Counter[tuple[int, int]] = Counter()
    for model in models:
        for label, guess, kept in zip(labels, predictions(data_dir, model, "cifar10-test")
                                      .tolist(), pruned, strict=True):
            if kept and label != guess:
                counts[(min(label, guess), max(label, guess))] += 1
    return counts


def _top(counts: Counter[tuple[int, int]]) -> list[tuple[int, int, int]]:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(a, b, n) for (a, b), n in ranked[:TOP_CONFUSIONS]]


def _ours(benchmark: Benchmark) -> list[tuple[int, int, int]]:
    confusions = benchmark_confusions(benchmark=benchmark)
    assert confusions is not None
    return [(c.first.class_id, c.second.class_id, c.count) for c in confusions.ours]


def test_it_counts_our_submissions_confusions_on_the_corrected_labels(
    scored_models: dict[str, Submission], data_dir: Path
) -> None:
    cifar10 = Benchmark.objects.get(slug="cifar10")
    models = list(scored_models)
    assert len(_expected(data_dir, models)) > TOP_CONFUSIONS  # more pairs than are shown
    assert _ours(cifar10) == _top(_expected(data_dir, models))
    confusions = benchmark_confusions(benchmark=cifar10)
    assert confusions is not None and (confusions.submissions, confusions.panel) == (3, [])
    (a, b), n = max(_expected(data_dir, models).items(), key=lambda kv: (kv[1], [-x for x in
                                                                                  kv[0]]))
    first = confusions.ours[0]
    assert first.submissions == sum(  # submissions that confuse the top pair at least once
        1 for m in models if _expected(data_dir, [m])[(a, b)] > 0)

    # a fourth submission is added to the kept sums; one made private leaves them
    fourth = submit_model(data_dir, "densenet_BC_100_12")
    assert score_in_process(fourth) == "scored"
    assert _ours(cifar10) == _top(_expected(data_dir, [*models, "densenet_BC_100_12"]))
    submission_visibility_set(submission=scored_models[models[0]], public=False)
    assert _ours(cifar10) == _top(_expected(data_dir, [*models[1:], "densenet_BC_100_12"]))

    page = Client().get("/benchmarks/cifar10/about/").content.decode()
    section = page.split('id="confusions"', 1)[1]
    shown = re.findall(r'<tr data-pair="(\d+)-(\d+)">.*?<td class="num">([\d,]+)</td>', section)
    assert [(int(a), int(b), int(n.replace(",", ""))) for a, b, n in shown] == _top(
        _expected(data_dir, [*models[1:], "densenet_BC_100_12"]))


def test_it_lists_the_panels_confused_pairs_on_the_imagenet_page(
    loaded: Settings, data_dir: Path
) -> None:
    info = json.loads((data_dir / "imagenet/class_info.json").read_text())
    cid = {c["wnid"]: c["cid"] for c in info}
    raw = json.loads((data_dir / "imagenet/mistakes/class_confusion_wnids.json").read_text())
    pairs = sorted(((min(cid[a], cid[b]), max(cid[a], cid[b]), n) for a, b, n in raw),
                   key=lambda p: (-p[2], p[0], p[1]))[:TOP_CONFUSIONS]
    imagenet = Benchmark.objects.get(slug="imagenet")
    confusions = benchmark_confusions(benchmark=imagenet)
    assert confusions is not None
    assert [(c.first.class_id, c.second.class_id, c.count) for c in confusions.panel] == pairs
    assert (confusions.panel_pairs, confusions.submissions, confusions.ours) == (len(raw), 0, [])
    page = Client().get("/benchmarks/imagenet/about/").content.decode()
    panel = page.split('class="plain confusions-panel"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr data-pair="(\d+)-(\d+)"><td>(.*?)</td><td class="num">(\d+)</td>',
                      panel)
    assert [(int(a), int(b), int(n)) for a, b, _, n in rows] == pairs
    a, b, _ = pairs[0]
    assert info[a]["synset"][0] in rows[0][2] and info[b]["synset"][0] in rows[0][2]


def test_it_reads_no_stored_file_when_nothing_changed(
    scored_models: dict[str, Submission], monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    from leaderboard.presentation.about import confusions
    cifar10 = Benchmark.objects.get(slug="cifar10")
    benchmark_confusions(benchmark=cifar10)
    read: list[Any] = []
    original = confusions._submission_pairs

    def counted(*args: Any) -> np.ndarray:
        read.append(args[0])
        return original(*args)

    monkeypatch.setattr(confusions, "_submission_pairs", counted)
    benchmark_confusions(benchmark=cifar10)
    assert read == []
    fourth = submit_model(data_dir, "densenet_BC_100_12")
    assert score_in_process(fourth) == "scored"
    benchmark_confusions(benchmark=cifar10)
    assert read == [fourth.files.get(example_set__slug="cifar10-test").compact.name]
