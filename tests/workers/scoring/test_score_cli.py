"""Tests for the local command `python -m workers.score`, run as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from workers.scoring import datasets
from workers.scoring.bundles import builtin_bundle, compile_bundle
from workers.scoring.predictions import parse_predictions
from workers.scoring.scorer import score_predictions

REPO_ROOT = PROJECT_ROOT
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
PREDICTIONS_DIR = DATA_DIR / "cifar10" / "model_predictions"
MODEL = "resnet_basic_32"


def _model_file(folder: str) -> Path:
    return PREDICTIONS_DIR / f"{folder}_predictions" / f"{MODEL}_predictions.json"


def _accuracy(folder: str, label_file: str) -> float:
    preds = np.array(json.loads(_model_file(folder).read_text()))
    return float(np.mean(preds == np.load(DATA_DIR / "cifar10" / label_file)))


CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")


def _in_process(files: dict[str, Path], data_dir: Path, cache_dir: Path) -> dict:
    bundle = builtin_bundle("cifar10")
    preds = {slug: parse_predictions(path, num_examples=bundle.example_set(slug).size,
                                     num_classes=10, keep_scores=True)
             for slug, path in files.items()}
    sets = compile_bundle(bundle, data_dir=data_dir, cache_dir=cache_dir).values()
    return score_predictions(preds, sets, class_names=CIFAR10_CLASSES).records


def _rows(stdout: str) -> list[list[str]]:
    """The table's rows split on runs of two or more spaces (cells have single spaces)."""
    return [re.split(r" {2,}", line.strip()) for line in stdout.splitlines()[1:]]


def test_it_prints_the_same_scores_as_the_in_process_scorer_as_json(
        run_score, data_dir: Path, cache_dir: Path) -> None:
    result = run_score("--benchmark", "cifar10", "--json", str(_model_file("original")))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["benchmark"] == "cifar10"
    assert out["image_sets"] == ["cifar10-test"]
    expected = _in_process({"cifar10-test": _model_file("original")}, data_dir, cache_dir)
    assert out["scores"] == expected
    assert list(out["scores"]) == ["original", "corrected", "cifar10h"]
    assert out["scores"]["original"]["accuracy"] == _accuracy("original", "original_labels.npy")


def test_it_prints_a_table_row_for_each_label_set(run_score) -> None:
    result = run_score("--benchmark", "cifar10", str(_model_file("original")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["label", "set", "metric", "value", "%", "count", "95%", "CI"]
    rows = _rows(result.stdout)
    assert {row[0] for row in rows} == {"original", "corrected", "cifar10h"}
    top1 = {row[0]: row for row in rows if row[1] in ("top-1", "plurality top-1")}
    accuracy = _accuracy("original", "original_labels.npy")
    correct = round(accuracy * 10_000)
    assert top1["original"][2:4] == [f"{100 * accuracy:.2f}", f"{correct}/10000"]
    assert top1["cifar10h"][1] == "plurality top-1"
    assert [row[1] for row in rows if row[0] == "corrected"] == [
        "top-1", "correctable Acc@1", "correctable cAcc@1"]


def test_it_scores_several_example_sets_and_gives_the_new_test_set_gap(run_score) -> None:
    result = run_score("--benchmark", "cifar10",
                       f"cifar10-test={_model_file('original')}",
                       f"cifar10.1-v6={_model_file('v6')}")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert {row[0] for row in rows} == {"original", "corrected", "cifar10h", "cifar10.1-v6"}
    original = _accuracy("original", "original_labels.npy")
    v6 = _accuracy("v6", "cifar10.1_v6_labels.npy")
    assert ["cifar10.1-v6", "gap to original", f"{100 * (original - v6):.2f}"] in rows
    v6_top1 = next(r for r in rows if r[0] == "cifar10.1-v6" and r[1] == "top-1")
    assert v6_top1[2:4] == [f"{100 * v6:.2f}", f"{round(v6 * 2000)}/2000"]


def test_it_gives_the_gap_in_json_for_slug_equals_file(run_score) -> None:
    result = run_score("--benchmark", "cifar10", "--json",
                       f"cifar10-test={_model_file('original')}",
                       f"cifar10.1-v6={_model_file('v6')}")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)["scores"]
    v6 = _accuracy("v6", "cifar10.1_v6_labels.npy")
    assert scores["cifar10.1-v6"]["accuracy"] == v6
    assert scores["cifar10.1-v6"]["gap"] == _accuracy("original", "original_labels.npy") - v6


def test_it_scores_a_plain_file_for_the_example_set_option(run_score) -> None:
    result = run_score("--benchmark", "cifar10", "--example-set", "cifar10.1-v4", "--json",
                       str(_model_file("v4")))
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)["scores"]
    assert list(scores) == ["cifar10.1-v4"]
    assert scores["cifar10.1-v4"]["accuracy"] == _accuracy("v4", "cifar10.1_v4_labels.npy")
    assert scores["cifar10.1-v4"]["gap"] is None  # no original predictions given


def test_it_exits_2_naming_the_error_code_and_row_of_a_bad_file(run_score,
                                                                  tmp_path: Path) -> None:
    preds = json.loads(_model_file("original").read_text())
    preds[1234] = 10
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(preds))
    result = run_score("--benchmark", "cifar10", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "[class_out_of_range]" in result.stderr
    assert "row 1234" in result.stderr
    assert str(bad) in result.stderr


def test_it_exits_2_for_a_file_that_does_not_exist(run_score, tmp_path: Path) -> None:
    result = run_score("--benchmark", "cifar10", str(tmp_path / "missing.json"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr


def test_it_refuses_an_unknown_example_set_naming_it(run_score) -> None:
    result = run_score("--benchmark", "cifar10", f"cifar10.2={_model_file('v6')}")
    assert result.returncode != 0
    assert "'cifar10.2' is not an example set of cifar10" in result.stderr


def test_it_exits_3_for_a_missing_data_directory(run_score, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data"
    result = run_score("--benchmark", "cifar10", "--data-dir", str(missing),
                       str(_model_file("original")))
    assert result.returncode == 3
    assert str(missing) in result.stderr


def test_it_exits_3_for_a_data_directory_without_the_label_files(run_score,
                                                                  tmp_path: Path) -> None:
    empty = tmp_path / "empty-data"
    empty.mkdir()
    result = run_score("--benchmark", "cifar10", "--data-dir", str(empty),
                       str(_model_file("original")))
    assert result.returncode == 3
    assert "cifar10/original_labels.npy" in result.stderr


def test_it_exits_3_naming_a_multilabel_file_that_does_not_exist(run_score,
                                                                  tmp_path: Path) -> None:
    predictions = tmp_path / "top1.npy"
    np.save(predictions, np.zeros(50_000, dtype=np.int64))
    missing = tmp_path / "no-such-multilabel.json"
    result = run_score("--benchmark", "imagenet", "--multilabel-file", str(missing),
                       str(predictions))
    assert result.returncode == 3
    assert result.stderr == (f"error: {missing}: label_sets.multilabel: label set "
                             f"'multilabel' lacks: {missing} [missing_file]\n")


def test_it_scores_imagenet_without_importing_scipy(run_score, data_dir: Path,
                                                    tmp_path: Path) -> None:
    """The light path: the accuracies' intervals need no SciPy (its import alone takes
    several times the scoring), so an ImageNet run never imports it."""
    top1 = datasets.imagenet_cleanlab_to_canonical(
        data_dir, np.load(data_dir / "imagenet" / "cleanlab_cv_predicted_labels.npy"))
    path = tmp_path / "top1.npy"
    np.save(path, top1.astype(np.int64))
    done = run_score("--benchmark", "imagenet", "--json", str(path))
    assert done.returncode == 0, done.stderr
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "workers.score", "--benchmark", "imagenet",
         str(path)], cwd=REPO_ROOT, env={**os.environ, "EVALSERVER_CACHE_DIR":
                                         str(tmp_path / "cache"),
                                         "EVALSERVER_DATA_DIR": str(data_dir)},
        capture_output=True, text=True, timeout=120)
    assert traced.returncode == 0, traced.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines()
                if line.startswith("import time:")}
    assert "numpy" in imported  # the trace is real
    assert not {name for name in imported if name.split(".")[0] == "scipy"}
    # the same accuracy as a direct count on ReaL's own file
    real = json.loads((data_dir / "imagenet" / "real.json").read_text())
    hits = [int(p) in labels for p, labels in zip(top1.tolist(), real, strict=True) if labels]
    assert json.loads(done.stdout)["scores"]["real"]["accuracy"] == pytest.approx(
        sum(hits) / len(hits), abs=1e-15)


def test_it_prints_the_multilabel_class_mean_and_the_pooled_share_without_scipy(
        run_score, data_dir: Path, tmp_path: Path, class_info: list,
        canonical_imagenet_labels: list[int]) -> None:
    """docs/metrics.md §5.1: the headline is the mean of the class accuracies (classes keyed
    by the original label); the pooled share of images is printed beside it."""
    labels = canonical_imagenet_labels
    wnid = [c["wnid"] for c in class_info]
    top1 = datasets.imagenet_cleanlab_to_canonical(
        data_dir, np.load(data_dir / "imagenet" / "cleanlab_cv_predicted_labels.npy")).tolist()
    # every 9th image annotated: its original label correct, except every 4th of them
    annotated = list(range(0, 50_000, 9))
    annots = {datasets.imagenet_file_name(i): ({"correct": [wnid[labels[i]]]} if n % 4
                                               else {"wrong": [wnid[labels[i]]]})
              for n, i in enumerate(annotated)}
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({"initial_annots": annots, "problematic_images": {},
                                "imagenet_m": []}))
    preds = tmp_path / "top1.npy"
    np.save(preds, np.array(top1, dtype=np.int64))
    per_class: dict[int, list[int]] = {}
    for n, i in enumerate(annotated):
        counts = per_class.setdefault(labels[i], [0, 0])
        counts[0] += bool(n % 4) and top1[i] == labels[i]
        counts[1] += 1
    mean = sum(c / t for c, t in per_class.values()) / len(per_class)
    correct = sum(c for c, _ in per_class.values())
    result = run_score("--benchmark", "imagenet", "--multilabel-file", str(path), str(preds))
    assert result.returncode == 0, result.stderr
    rows = {row[1]: row for row in _rows(result.stdout) if row[0] == "multilabel"}
    assert rows["top-1, mean over classes"][2:4] == [f"{100 * mean:.2f}",
                                                     f"{len(per_class)} classes"]
    assert rows["top-1, pooled over images"][2:4] == [
        f"{100 * correct / len(annotated):.2f}", f"{correct}/{len(annotated)}"]
    assert f"{100 * mean:.2f}" != f"{100 * correct / len(annotated):.2f}"
    assert [name for name in rows if "mean over classes" in name] == [
        "top-1, mean over classes", "collapsed, mean over classes",
        "organism, mean over classes", "object, mean over classes"]
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "workers.score", "--benchmark", "imagenet",
         "--multilabel-file", str(path), str(preds)], cwd=REPO_ROOT,
        env={**os.environ, "EVALSERVER_CACHE_DIR": str(tmp_path / "cache"),
             "EVALSERVER_DATA_DIR": str(data_dir)},
        capture_output=True, text=True, timeout=120)
    assert traced.returncode == 0, traced.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines()
                if line.startswith("import time:")}
    assert "numpy" in imported
    assert not {name for name in imported if name.split(".")[0] == "scipy"}
