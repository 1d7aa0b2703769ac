"""The multi-label accuracy as a mean over classes (docs/metrics.md §5.1, §5.3), on the real
original labels and the real cross-validated ResNet-50 of cleanlab, against a multi-label file
written here in the human_accuracy_v3.0.0.json layout (the real one is not available offline,
MANIFEST.md). Every expected figure comes from a plain loop over the images grouped by their
original label; the interval from the formula with SciPy's normal quantile.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from tests.workers.scoring.support import assert_counts, compile_builtin, spec_collapse_pairs
from workers.scoring import datasets
from workers.scoring.families.registry import family_named, missing_arrays
from workers.scoring.label_set_builders import CompiledLabelSet, content_hash
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import headline_hits, score_label_set
from workers.scoring.upgrades import compiled_upgrade

# docs/metrics.md §5.3, transcribed: the 410 organism classes
ORGANISM = set(range(398)) | {981, 982, 983, 985, 986} | set(range(991, 998))
# Classes no image of which is annotated (an animal and two objects), and one whose annotated
# images are all problematic: four classes without an evaluated image.
UNANNOTATED_CLASSES = {7, 450, 990}
ALL_PROBLEMATIC_CLASS = 3


def name(index: int) -> str:
    return f"ILSVRC2012_val_{index + 1:08d}.JPEG"


@pytest.fixture(scope="module")
def raw(canonical_imagenet_labels: list[int], class_info: list[dict[str, Any]]) -> dict[str, Any]:
    """Every 7th image annotated (bar the classes above): its original label correct 80% of the
    time (else wrong, with the next class correct), often an unclear extra label, and some
    problematic images."""
    wnid = [c["wnid"] for c in class_info]
    rng = random.Random(13)
    annots: dict[str, Any] = {}
    problematic: dict[str, Any] = {}
    for i in range(0, 50_000, 7):
        label = canonical_imagenet_labels[i]
        if label in UNANNOTATED_CLASSES:
            continue
        entry: dict[str, list[str]] = {}
        if rng.random() < 0.8:
            entry["correct"] = [wnid[label]]
        else:
            entry["wrong"] = [wnid[label]]
            entry["correct"] = [wnid[(label + 1) % 1000]]
        if rng.random() < 0.3:
            entry["unclear"] = [wnid[(label + 2) % 1000]]
        annots[name(i)] = entry
        if label == ALL_PROBLEMATIC_CLASS or rng.random() < 0.02:
            problematic[name(i)] = {"reason": "marked as problematic in the review server"}
    return {"initial_annots": annots, "problematic_images": problematic, "imagenet_m": []}


@pytest.fixture(scope="module")
def multilabel(raw: dict[str, Any], data_dir: Path,
               tmp_path_factory: pytest.TempPathFactory) -> CompiledLabelSet:
    path = tmp_path_factory.mktemp("class-mean") / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return compile_builtin("imagenet", "multilabel", data_dir=data_dir, multilabel_file=path)


@pytest.fixture(scope="module")
def resnet50(data_dir: Path, imagenet_paths: list[str]) -> list[int]:
    """The real cross-validated ResNet-50's top-1 in file-number order, by a plain loop."""
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy").tolist()
    top1 = [-1] * 50_000
    for i, path in enumerate(imagenet_paths):
        top1[int(path.rsplit("_", 1)[-1][:-len(".JPEG")]) - 1] = cleanlab[i]
    return top1


def _predictions(top1: list[int]) -> Predictions:
    return Predictions(np.array(top1, dtype=np.int32).reshape(-1, 1), None, None, None)


def _expected(raw: dict[str, Any], labels: list[int], top1: list[int],
              class_info: list[dict[str, Any]], *, collapsed: bool = False,
              among: set[int] | None = None) -> dict[str, Any]:
    """The record's figures, from a loop over the annotated, unproblematic images."""
    cid = {c["wnid"]: c["cid"] for c in class_info}
    among = set(range(1000)) if among is None else among
    per_class: dict[int, list[int]] = {}
    for file_name, entry in raw["initial_annots"].items():
        if file_name in raw["problematic_images"]:
            continue
        i = int(file_name[len("ILSVRC2012_val_"):-len(".JPEG")]) - 1
        if labels[i] not in among:
            continue
        accepted = {cid[w] for w in entry.get("correct", []) + entry.get("unclear", [])}
        if collapsed:
            accepted |= {also for source, also in spec_collapse_pairs() if source in accepted}
        counts = per_class.setdefault(labels[i], [0, 0])
        counts[0] += top1[i] in accepted
        counts[1] += 1
    accuracies = [(c / n, n) for c, n in per_class.values()]
    mean = math.fsum(p for p, _ in accuracies) / len(accuracies)
    half = (float(scipy_stats.norm.ppf(0.975))
            * math.sqrt(math.fsum(p * (1 - p) / n for p, n in accuracies)) / len(accuracies))
    return {"accuracy": mean, "ci_low": max(0.0, mean - half), "ci_high": min(1.0, mean + half),
            "correct": sum(c for c, _ in per_class.values()),
            "total": sum(n for _, n in per_class.values()),
            "classes_evaluated": len(per_class),
            "classes_without_images": len(among) - len(per_class)}


def _assert_record(record: dict[str, Any], expected: dict[str, Any]) -> None:
    assert record["accuracy"] == pytest.approx(expected["accuracy"], rel=1e-13)
    assert record["ci_low"] == pytest.approx(expected["ci_low"], rel=1e-12)
    assert record["ci_high"] == pytest.approx(expected["ci_high"], rel=1e-12)
    for key in ("correct", "total", "classes_evaluated", "classes_without_images"):
        assert record[key] == expected[key], key
    assert record["ci_method"] == "normal"
    assert_counts(record["pooled_accuracy"], expected["correct"], expected["total"])


def test_it_reports_the_mean_of_the_class_accuracies_of_a_real_model(
    multilabel: CompiledLabelSet, raw: dict[str, Any], canonical_imagenet_labels: list[int],
    resnet50: list[int], class_info: list[dict[str, Any]],
) -> None:
    record, _ = score_label_set(multilabel, _predictions(resnet50))
    expected = _expected(raw, canonical_imagenet_labels, resnet50, class_info)
    _assert_record(record, expected)
    # the four classes set up without an evaluated image are left out, and counted
    assert expected["classes_without_images"] == 4
    # the per-example hits are those the counts count: the paired tests stay on images
    assert int(headline_hits(multilabel, _predictions(resnet50)).sum()) == record["correct"]
    # a real difference: the class mean is not the pooled share of images
    assert abs(record["accuracy"] - record["correct"] / record["total"]) > 1e-4


def test_it_averages_the_collapsed_hits_over_the_same_classes(
    multilabel: CompiledLabelSet, raw: dict[str, Any], canonical_imagenet_labels: list[int],
    class_info: list[dict[str, Any]],
) -> None:
    # husky, malamute and the weasel group predicted where their partner class is accepted
    top1 = list(canonical_imagenet_labels)
    for i, label in enumerate(canonical_imagenet_labels):
        swap = {250: 248, 249: 248, 356: 357, 836: 837, 504: 968}.get(label)
        if swap is not None:
            top1[i] = swap
    record, _ = score_label_set(multilabel, _predictions(top1))
    _assert_record(record["collapsed"], _expected(raw, canonical_imagenet_labels, top1,
                                                  class_info, collapsed=True))
    _assert_record(record, _expected(raw, canonical_imagenet_labels, top1, class_info))
    assert record["collapsed"]["accuracy"] > record["accuracy"]


def test_it_averages_the_organism_and_object_figures_over_their_410_and_590_classes(
    multilabel: CompiledLabelSet, raw: dict[str, Any], canonical_imagenet_labels: list[int],
    resnet50: list[int], class_info: list[dict[str, Any]],
) -> None:
    assert len(ORGANISM) == 410
    record, _ = score_label_set(multilabel, _predictions(resnet50))
    organism = _expected(raw, canonical_imagenet_labels, resnet50, class_info, among=ORGANISM)
    objects = _expected(raw, canonical_imagenet_labels, resnet50, class_info,
                        among=set(range(1000)) - ORGANISM)
    _assert_record(record["organism"], organism)
    _assert_record(record["object"], objects)
    # animal 7 and the all-problematic class 3 lack images among organisms; 450 and 990 among
    # objects
    assert (organism["classes_without_images"], objects["classes_without_images"]) == (2, 2)
    assert organism["classes_evaluated"] + objects["classes_evaluated"] == \
        record["classes_evaluated"]


def test_it_upgrades_a_set_built_without_original_labels_to_the_fresh_build(
    multilabel: CompiledLabelSet, data_dir: Path, resnet50: list[int],
) -> None:
    old_arrays = {k: v for k, v in multilabel.arrays.items() if k != "original_labels"}
    old = CompiledLabelSet(
        slug=multilabel.slug, benchmark=multilabel.benchmark, example_set=multilabel.example_set,
        kind=multilabel.kind, family=multilabel.family, num_classes=multilabel.num_classes,
        size=multilabel.size, arrays=old_arrays, meta=multilabel.meta,
        content_hash=content_hash(family=multilabel.family, kind=multilabel.kind,
                                  num_classes=1000, size=50_000, arrays=old_arrays,
                                  meta=multilabel.meta))
    assert missing_arrays(old) == ["original_labels"]
    with pytest.raises(ValueError, match="lacks 'original_labels'"):
        score_label_set(old, _predictions(resnet50))
    original = datasets.imagenet_original_labels(data_dir)
    assert family_named("multilabel").upgrade is compiled_upgrade  # the family's upgrade
    upgraded = compiled_upgrade(old, original)
    # exactly what the current builder makes of the same file: same hash, same scores
    assert upgraded.content_hash == multilabel.content_hash != old.content_hash
    assert missing_arrays(upgraded) == []
    assert upgraded.meta["revision"] == {"added_arrays": ["original_labels"]}
    assert score_label_set(upgraded, _predictions(resnet50))[0] == \
        score_label_set(multilabel, _predictions(resnet50))[0]
    # labels in another order do not match the set's organism flags
    with pytest.raises(ValueError, match="do not match its organism flags"):
        compiled_upgrade(old, original_labels=np.roll(original, 1))
    with pytest.raises(ValueError, match="needs no upgrade"):
        compiled_upgrade(upgraded, original_labels=original)
