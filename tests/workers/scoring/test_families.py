"""The label-set families (workers/scoring/families): every registered family declares every
part, scores a small compiled set of its kind with headline hits that sum to its `correct`, and
the `balanced` family end to end on a tiny bundle, its figures worked out by hand."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from tests.workers.scoring.bundles.bundle_files import manifest, write_bundle
from tests.workers.scoring.support import compile_builtin
from workers.scoring.bundles import compile_bundle, read_bundle
from workers.scoring.families.base import (
    INTERVAL_METHODS,
    Citation,
    Fact,
    Family,
)
from workers.scoring.families.registry import (
    BUNDLE_KINDS,
    FAMILIES,
    UnknownFamilyError,
    family_for_bundle_kind,
    family_named,
    layouts_of,
)
from workers.scoring.label_set_builders import CompiledLabelSet, evaluated_mask
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import headline_hits, score_label_set, score_predictions

DATASET_WORDS = ("cifar", "imagenet", "mnist")
LABEL_KINDS = ("single", "multi", "soft")
FIGURE_KINDS = ("accuracy", "mean", "points")
FIGURE_UNITS = ("percent", "number")
GALLERIES = (None, "misses", "correctable")

# ---------------------------------------------------------------- every family, every part


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_it_declares_every_part_of_a_family(name: str) -> None:
    family = FAMILIES[name]
    assert isinstance(family, Family)
    assert family.name == name
    assert family_named(name) is family
    for text in (family.name, family.title, family.headline, family.headline_label,
                 family.about.what):
        assert isinstance(text, str) and text.strip(), text
    assert family.about.how and all(isinstance(p, str) and p.strip() for p in family.about.how)
    for citation in family.about.citations:  # () means the benchmark's own paper
        assert isinstance(citation, Citation), citation
        assert citation.key and citation.title and citation.authors and citation.url
        assert citation.short.strip()
    assert family.label_kind in LABEL_KINDS
    assert family.interval in INTERVAL_METHODS
    for part in (family.parse, family.build, family.score, family.headline_hits, family.facts,
                 family.about_values):
        assert callable(part)
    assert family.arrays and all(isinstance(a, str) and a for a in family.arrays)
    assert len(set(family.arrays)) == len(family.arrays)
    for figure in family.figures:
        assert isinstance(figure.path, tuple) and figure.path, figure
        assert all(isinstance(key, str) and key for key in figure.path), figure
        assert figure.label.strip() and figure.kind in FIGURE_KINDS
        assert figure.unit in FIGURE_UNITS
    assert family.gallery in GALLERIES
    assert family.reviewable == (family.apply_verdicts is not None)
    assert callable(family.apply_verdicts) or family.apply_verdicts is None
    if family.verdicts_need_annotation:
        assert family.reviewable
    if family.export_with is not None:
        assert family.export_with in FAMILIES
        assert family.export is not None
    for hook in (family.apply_ground_truth, family.export, family.upgrade):
        assert hook is None or callable(hook)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_it_gives_every_family_a_generic_name(name: str) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
    assert not any(word in name for word in DATASET_WORDS), name


def test_it_finds_each_family_by_its_kind_and_the_layout_that_tells_apart_a_shared_kind(
) -> None:
    kinds = [(family.bundle_kind, family.layout) for family in FAMILIES.values()]
    assert len(set(kinds)) == len(kinds), kinds
    assert BUNDLE_KINDS == tuple(sorted({kind for kind, _ in kinds}))
    for family in FAMILIES.values():
        assert family_for_bundle_kind(family.bundle_kind, family.layout) is family
        sharing = [f for f in FAMILIES.values() if f.bundle_kind == family.bundle_kind]
        if len(sharing) > 1:  # a shared kind: each family has its layout, none goes without
            assert family.layout in layouts_of(family.bundle_kind)
            with pytest.raises(UnknownFamilyError):
                family_for_bundle_kind(family.bundle_kind)
        else:
            assert family.layout is None and layouts_of(family.bundle_kind) == ()
    assert layouts_of("multi") == ("human_accuracy", "real")


def test_it_has_one_reference_family_and_distinct_plot_orders() -> None:
    assert [f.name for f in FAMILIES.values() if f.reference] == ["original"]
    orders = [f.plot_order for f in FAMILIES.values() if f.plot_order is not None]
    assert len(set(orders)) == len(orders)


# ---------------------------------------------------------------- a compiled set of each kind

BALANCED_LABEL_SET = {"slug": "balanced", "kind": "balanced", "name": "Balanced",
                      "labels": "labels.npy"}
# three annotators of the toy's six examples (its labels are 0 1 2 0 1 2)
ANNOTATOR_FILES = {"a1.npy": [0, 1, 2, 0, 1, 2], "a2.npy": [0, 2, 2, 1, 1, 0],
                   "a3.npy": [1, 1, 0, 0, 2, 2]}
ANNOTATORS_LABEL_SET = {"slug": "annotators", "kind": "annotators", "name": "Annotators",
                        "annotators": list(ANNOTATOR_FILES)}


def _wnids(data_dir: Path) -> list[str]:
    return [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]


def _file_name(index: int) -> str:
    return f"ILSVRC2012_val_{index + 1:08d}.JPEG"


@pytest.fixture(scope="module")
def samples(data_dir: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, tuple[CompiledLabelSet, dict[str, Any]]]:
    """family name -> (a small compiled set of it, its label set's params): the toy bundle
    (tests/workers/scoring/bundles/bundle_files.py) with a balanced label set added, and the
    ImageNet bundle's multi-label sets from a small file (their layout needs ImageNet)."""
    folder = tmp_path_factory.mktemp("families")
    document = manifest()
    document["label_sets"] += [dict(BALANCED_LABEL_SET), dict(ANNOTATORS_LABEL_SET)]
    path = write_bundle(folder / "toy", document)
    for name, labels in ANNOTATOR_FILES.items():
        np.save(path.parent / name, np.array(labels, dtype=np.int64))
    bundle = read_bundle(path)
    out = {}
    for slug, compiled in compile_bundle(bundle, data_dir=folder).items():
        params = bundle.label_set(slug).fields.params()  # as its catalog row keeps them
        out.setdefault(compiled.family, (compiled, params))
    wnids = _wnids(data_dir)
    annots = {_file_name(i): {"correct": [wnids[i]], "wrong": [wnids[i + 1]]} for i in range(12)}
    path = folder / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({"initial_annots": annots,
                                "problematic_images": {_file_name(4): {}},
                                "imagenet_m": [_file_name(i) for i in (1, 2, 3, 7)]}))
    for slug in ("multilabel", "imagenet-m"):
        compiled = compile_builtin("imagenet", slug, data_dir=data_dir, multilabel_file=path)
        out[compiled.family] = (compiled, {})
    return out


def _predictions(ls: CompiledLabelSet) -> Predictions:
    """Distinct class ids per example, (2i + j) mod C for the j-th (up to five): on the toy
    bundle right on some examples of every label set and wrong on others; on ImageNet the
    right class (class i for image i, as the file above says) for the even of the first
    twelve images."""
    k = min(5, ls.num_classes)
    topk = (2 * np.arange(ls.size)[:, None] + np.arange(k)[None, :]) % ls.num_classes
    if ls.benchmark == "imagenet":
        for i in range(0, 12, 2):
            topk[i] = (i + np.arange(k)) % ls.num_classes
    return Predictions(topk.astype(np.int32), None, None, None)


def _at(record: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = record
    for key in path:
        assert isinstance(value, dict) and key in value, path
        value = value[key]
    return value


def test_it_has_a_sample_set_of_every_family(
        samples: dict[str, tuple[CompiledLabelSet, dict[str, Any]]]) -> None:
    assert sorted(samples) == sorted(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_it_counts_headline_hits_that_sum_to_the_records_correct(
        name: str, samples: dict[str, tuple[CompiledLabelSet, dict[str, Any]]]) -> None:
    ls, params = samples[name]
    family = FAMILIES[name]
    assert (ls.family, ls.kind) == (name, family.label_kind)
    assert set(family.arrays) <= set(ls.arrays)
    preds = _predictions(ls)
    record, _ = score_label_set(ls, preds)
    hits = headline_hits(ls, preds)
    assert hits.dtype == bool
    assert hits.shape == (record["total"],) == (int(evaluated_mask(ls).sum()),)
    assert int(hits.sum()) == record["correct"]
    assert 0 < record["correct"] < record["total"], "a sample that tells hits from misses"
    for key in ("accuracy", "ci_low", "ci_high"):
        assert key in record
    if family.interval != "clopper_pearson":
        assert record["ci_method"] == family.interval
    for figure in family.figures:
        if family.gap_to_reference and figure.path == ("gap",):
            continue  # set by score_predictions, beside the reference's record
        _at(record, figure.path)
    # the about page's paragraphs come out with every placeholder filled
    for paragraph in family.about_how(ls.summary, params):
        assert "{" not in paragraph and "}" not in paragraph, paragraph
    assert all(isinstance(fact, Fact) for fact in family.facts(ls.summary))


# ---------------------------------------------------------------- balanced accuracy

FARM_MANIFEST = """\
schema = 1
slug = "farm"
name = "Farm"
modality = "image"
files = "bundle"

[classes]
count = 3
source = "inline"
names = ["ant", "bee", "cow"]

[[example_sets]]
slug = "farm-test"
name = "Farm test"
size = 10

[[label_sets]]
slug = "original"
kind = "single"
name = "Original labels"
labels = "labels.npy"

[[label_sets]]
slug = "balanced"
kind = "balanced"
name = "Balanced accuracy"
labels = "labels.npy"
"""
# ant 5 examples (0, 2, 4, 6, 9), bee 3 (1, 5, 8), cow 2 (3, 7)
FARM_LABELS = [0, 1, 0, 2, 0, 1, 0, 2, 1, 0]
# ant: 4 of 5 right (9 is called a bee); bee: 1 of 3 (5 is called an ant, 8 a cow); cow: 2 of 2
FARM_PREDICTIONS = [0, 1, 0, 2, 0, 0, 0, 2, 2, 1]


def _farm(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "farm.toml").write_text(FARM_MANIFEST)
    np.save(folder / "labels.npy", np.array(FARM_LABELS, dtype=np.int64))
    return folder / "farm.toml"


def _farm_expected() -> dict[str, Any]:
    """Worked by hand: per-class accuracies 4/5, 1/3 and 2/2; their mean; the normal
    interval with per-class binomial variances, sqrt(sum p(1-p)/n) / C; 7 of 10 pooled,
    with its Clopper-Pearson interval from the beta quantiles."""
    p = [4 / 5, 1 / 3, 2 / 2]
    n = [5, 3, 2]
    mean = (p[0] + p[1] + p[2]) / 3
    z = NormalDist().inv_cdf(0.975)
    half = z * (p[0] * (1 - p[0]) / n[0] + p[1] * (1 - p[1]) / n[1]
                + p[2] * (1 - p[2]) / n[2]) ** 0.5 / 3
    return {
        "accuracy": mean, "ci_low": max(0.0, mean - half), "ci_high": min(1.0, mean + half),
        "correct": 7, "total": 10,
        "pooled": {"accuracy": 0.7, "correct": 7, "total": 10,
                   "ci_low": float(scipy_stats.beta.ppf(0.025, 7, 4)),
                   "ci_high": float(scipy_stats.beta.ppf(0.975, 8, 3))},
    }


def test_it_compiles_and_scores_a_balanced_label_set_by_hand(tmp_path: Path) -> None:
    sets = compile_bundle(read_bundle(_farm(tmp_path / "farm")), data_dir=tmp_path,
                          cache_dir=tmp_path / "cache")
    balanced = sets["balanced"]
    assert (balanced.family, balanced.kind, balanced.size, balanced.num_classes) == (
        "balanced", "single", 10, 3)
    assert balanced.arrays["labels"].tolist() == FARM_LABELS
    # the same labels as the original set, scored another way: a hash of its own
    assert balanced.content_hash != sets["original"].content_hash

    preds = Predictions(np.array(FARM_PREDICTIONS, dtype=np.int32).reshape(-1, 1), None, None,
                        None)
    scores = score_predictions({"farm-test": preds}, sets.values())
    record = scores.records["balanced"]
    expected = _farm_expected()
    assert record["family"] == "balanced"
    assert (record["correct"], record["total"]) == (expected["correct"], expected["total"])
    assert record["accuracy"] == pytest.approx(expected["accuracy"], rel=1e-12)
    assert record["accuracy"] == pytest.approx(0.7111111111111111, rel=1e-12)
    assert record["ci_low"] == pytest.approx(expected["ci_low"], rel=1e-12)
    assert record["ci_high"] == pytest.approx(expected["ci_high"], rel=1e-12)
    assert record["ci_method"] == "normal"
    assert (record["classes_evaluated"], record["classes_without_images"]) == (3, 0)
    pooled = record["pooled_accuracy"]
    assert (pooled["correct"], pooled["total"]) == (7, 10)
    assert pooled["accuracy"] == expected["pooled"]["accuracy"]
    assert pooled["ci_low"] == pytest.approx(expected["pooled"]["ci_low"], rel=1e-9)
    assert pooled["ci_high"] == pytest.approx(expected["pooled"]["ci_high"], rel=1e-9)
    # pooled over examples, it is the plain accuracy of the original labels
    original = scores.records["original"]
    assert (original["accuracy"], original["correct"], original["total"]) == (0.7, 7, 10)
    assert (original["ci_low"], original["ci_high"]) == (pooled["ci_low"], pooled["ci_high"])
    # headline hits: every example, in order, as correct
    assert scores.hits["balanced"].tolist() == [
        p == y for p, y in zip(FARM_PREDICTIONS, FARM_LABELS, strict=True)]
    assert int(scores.hits["balanced"].sum()) == record["correct"]


def test_it_prints_the_balanced_headline_in_the_score_command(
        run_score: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    bundle = _farm(tmp_path / "farm")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(FARM_PREDICTIONS))
    expected = _farm_expected()

    result = run_score("--bundle", str(bundle), "--json", str(preds))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)["scores"]["balanced"]
    assert (record["correct"], record["total"]) == (7, 10)
    assert record["accuracy"] == pytest.approx(expected["accuracy"], rel=1e-12)
    assert record["ci_low"] == pytest.approx(expected["ci_low"], rel=1e-12)
    assert record["ci_high"] == pytest.approx(expected["ci_high"], rel=1e-12)

    table = run_score("--bundle", str(bundle), str(preds))
    assert table.returncode == 0, table.stderr
    rows = [re.split(r" {2,}", line.strip()) for line in table.stdout.splitlines()[1:]]
    balanced = [row for row in rows if row[0] == "balanced"]

    def pct(value: float) -> str:
        return f"{100 * value:.2f}"

    pooled = expected["pooled"]
    assert balanced[0] == ["balanced", "top-1, mean over classes", pct(expected["accuracy"]),
                           "3 classes",
                           f"[{pct(expected['ci_low'])}, {pct(expected['ci_high'])}]"]
    assert balanced[0][2:5] == ["71.11", "3 classes", "[49.83, 92.39]"]
    assert balanced[1] == ["balanced", "top-1, pooled over images", "70.00", "7/10",
                           f"[{pct(pooled['ci_low'])}, {pct(pooled['ci_high'])}]"]
