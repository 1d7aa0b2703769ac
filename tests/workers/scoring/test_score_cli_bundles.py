"""`python -m workers.score --benchmark SLUG` on the new built-in benchmarks and `--bundle PATH`
on a benchmark that is not built in, run as a real subprocess (docs/bundles.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.bundles.bundle_files import zip_bytes


def _scores(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["scores"]


# ------------------------------------------------------------ the new built-in benchmarks


def _corrected_by_hand(preds: np.ndarray, labels: np.ndarray, votes: list[dict[str, Any]],
                       threshold: int) -> tuple[int, int]:
    """(correct, |P|) read straight from the vote file: a majority for the given label keeps
    it, `threshold` votes for the guessed label replace it, anything else leaves the example
    out (docs/metrics.md §3.1)."""
    corrected = {int(i): int(label) for i, label in enumerate(labels)}
    for record in votes:
        mturk, index = record["mturk"], int(record["id"])
        if mturk.get("given", 0) >= 3:
            continue
        if mturk.get("guessed", 0) >= threshold:
            corrected[index] = int(record["our_guessed_label"])
        else:
            del corrected[index]
    correct = sum(int(preds[i]) == label for i, label in corrected.items())
    return correct, len(corrected)


@pytest.mark.parametrize(("benchmark", "example_set", "pruned_size"), [
    ("cifar100", "cifar100-test", 9_733),  # |P| at t = 3: docs/bundles.md §9
    ("20news", "20news-test", 7_472),
])
def test_it_scores_the_cleanlab_predictions_of_a_new_benchmark_exactly(
        run_score, data_dir: Path, benchmark: str, example_set: str, pruned_size: int) -> None:
    folder = data_dir / benchmark
    preds_file = folder / "cleanlab_cv_predicted_labels.npy"
    preds, labels = np.load(preds_file), np.load(folder / "original_labels.npy")
    votes = json.loads((folder / "cleanlab_mturk.json").read_text())
    # MANIFEST.md: predictions and labels are both in test order; a misaligned order would
    # score about 1/classes, the cross-validated model scores far above it.
    assert preds.shape == labels.shape and np.mean(preds == labels) > 0.6

    out = run_score("--benchmark", benchmark, "--json", str(preds_file))
    scores = _scores(out)
    assert json.loads(out.stdout)["image_sets"] == [example_set]
    assert list(scores) == ["original", "corrected", "corrected-t4", "corrected-t5"]
    original = scores["original"]
    assert (original["correct"], original["total"]) == (int(np.sum(preds == labels)),
                                                        labels.size)
    assert original["accuracy"] == float(np.mean(preds == labels))
    for slug, threshold in (("corrected", 3), ("corrected-t4", 4), ("corrected-t5", 5)):
        correct, total = _corrected_by_hand(preds, labels, votes, threshold)
        assert (scores[slug]["correct"], scores[slug]["total"]) == (correct, total), slug
        assert scores[slug]["accuracy"] == correct / total
    assert scores["corrected"]["total"] == pruned_size


def test_it_scores_20news_probabilities_as_their_top_1(run_score, data_dir: Path) -> None:
    folder = data_dir / "20news"
    probabilities = np.load(folder / "cleanlab_cv_probabilities.npy")
    labels = np.load(folder / "original_labels.npy")
    scores = _scores(run_score("--benchmark", "20news", "--json",
                               str(folder / "cleanlab_cv_probabilities.npy")))
    top1 = probabilities.argmax(axis=1)  # the first of equal scores: the lower class id
    assert scores["original"]["correct"] == int(np.sum(top1 == labels))
    # docs/metrics.md §1: equal scores are ranked by ascending class id (a stable sort)
    top5 = np.argsort(-probabilities, axis=1, kind="stable")[:, :5]
    assert scores["original"]["top5"]["correct"] == int(sum(
        label in row for row, label in zip(top5.tolist(), labels.tolist(), strict=True)))


def test_it_names_imagenet_m_misses_by_file_and_class_as_the_bundle_does(
        run_score, tmp_path: Path, class_info: list, canonical_imagenet_labels: list[int]) -> None:
    """ImageNet's examples keep their file names (ILSVRC2012_val_00000001.JPEG is example 0)
    and its classes the first name of their synset in class_info.json."""
    labels = canonical_imagenet_labels
    wnid = [c["wnid"] for c in class_info]
    listed = [10, 20, 30, 40]
    top1 = np.array(labels, dtype=np.int64)
    top1[20] = (labels[20] + 1) % 1000
    top1[40] = (labels[40] + 7) % 1000
    annots = {f"ILSVRC2012_val_{i + 1:08d}.JPEG": {"correct": [wnid[labels[i]]]} for i in listed}
    multilabel = tmp_path / "human_accuracy_v3.0.0.json"
    multilabel.write_text(json.dumps({"initial_annots": annots, "problematic_images": {},
                                      "imagenet_m": list(annots)}))
    preds = tmp_path / "top1.npy"
    np.save(preds, top1)
    scores = _scores(run_score("--benchmark", "imagenet", "--json", "--multilabel-file",
                               str(multilabel), str(preds)))
    synset = {c["cid"]: c["synset"][0] for c in class_info}
    assert scores["imagenet-m"]["misses"] == [
        {"index": i, "file": f"ILSVRC2012_val_{i + 1:08d}.JPEG", "predicted": int(top1[i]),
         "predicted_name": synset[int(top1[i])]} for i in (20, 40)]
    assert (scores["imagenet-m"]["correct"], scores["imagenet-m"]["total"]) == (2, 4)


# ------------------------------------------------------------ a bundle that is not built in

MANIFEST = """\
schema = 1
slug = "pets"
name = "Pets"
modality = "image"
files = "bundle"

[classes]
count = 3
source = "inline"
names = ["cat", "dog", "bird"]

[[example_sets]]
slug = "pets-test"
name = "Pets test"
size = 8
naming = "file"
names = "names.json"

[[label_sets]]
slug = "original"
kind = "single"
name = "Original labels"
labels = "labels.npy"

[[label_sets]]
slug = "corrected"
kind = "validated"
name = "Corrected"
votes.file = "votes.json"
votes.ids = "name"
votes.labels = "name"
votes.vocabulary = { given = "original", guessed = "guessed", unsure = "none" }

[[label_sets]]
slug = "annotators"
kind = "soft"
name = "Annotator votes"
counts = "counts.npy"
"""
LABELS = [0, 1, 2, 0, 1, 2, 0, 1]
VOTES = [
    # p1: 4 of 5 for the guessed cat: correctable, its corrected label is cat (0)
    {"id": "p1.jpg", "given_original_label": "dog", "our_guessed_label": "cat",
     "mturk": {"given": 1, "guessed": 4}},
    # p2: 3 for the given bird: not an error
    {"id": "p2.jpg", "given_original_label": "bird", "our_guessed_label": "dog",
     "mturk": {"given": 3, "guessed": 2}},
    # p4: 1 / 2 / 2 unsure: no agreement, left out of the corrected set
    {"id": "p4.jpg", "given_original_label": "dog", "our_guessed_label": "bird",
     "mturk": {"given": 1, "guessed": 2, "unsure": 2}},
]
COUNTS = [[3, 1, 1], [2, 2, 1], [0, 1, 4], [4, 1, 0], [1, 1, 3], [0, 0, 5], [2, 3, 0],
          [1, 0, 4]]
PREDICTIONS = [0, 0, 2, 1, 2, 2, 0, 0]


def _write_bundle(folder: Path, *, manifest: str = MANIFEST, labels: list[int] = LABELS,
                  votes: list[dict[str, Any]] = VOTES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pets.toml").write_text(manifest)
    (folder / "names.json").write_text(json.dumps([f"p{i}.jpg" for i in range(8)]))
    np.save(folder / "labels.npy", np.array(labels, dtype=np.int64))
    (folder / "votes.json").write_text(json.dumps(votes))
    np.save(folder / "counts.npy", np.array(COUNTS, dtype=np.int64))
    return folder / "pets.toml"


def _zip(folder: Path, archive: Path, extra: dict[str, bytes] | None = None) -> Path:
    entries = {f"pets/{path.name}": path.read_bytes() for path in sorted(folder.iterdir())}
    archive.write_bytes(zip_bytes(entries | (extra or {})))
    return archive


def _assert_pets_scores(scores: dict[str, Any]) -> None:
    # worked by hand from LABELS, VOTES, COUNTS and PREDICTIONS above
    assert list(scores) == ["original", "corrected", "annotators"]
    # original: examples 0, 2, 5, 6 right
    assert (scores["original"]["correct"], scores["original"]["total"]) == (4, 8)
    assert scores["original"]["accuracy"] == 0.5
    # corrected labels [0, 0, 2, 0, -, 2, 0, 1] without p4: 0, 1, 2, 5, 6 right
    corrected = scores["corrected"]
    assert (corrected["correct"], corrected["total"]) == (5, 7)
    assert corrected["accuracy"] == 5 / 7
    # C = {p1}: the prediction cat is wrong on the original dog, right on the corrected cat
    assert (corrected["correctable"]["acc1"]["correct"],
            corrected["correctable"]["acc1"]["total"]) == (0, 1)
    assert (corrected["correctable"]["cacc1"]["correct"],
            corrected["correctable"]["cacc1"]["total"]) == (1, 1)
    # plurality (a tie counts): rows 0, 1, 2, 4, 5; agreement: (3+2+4+1+3+5+2+1) / 5 / 8
    soft = scores["annotators"]
    assert (soft["correct"], soft["total"]) == (5, 8)
    assert soft["human_agreement"]["value"] == pytest.approx(21 / 40, abs=1e-12)


def test_it_scores_a_bundle_that_is_not_built_in(run_score, tmp_path: Path) -> None:
    manifest = _write_bundle(tmp_path / "pets")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    result = run_score("--bundle", str(manifest), "--json", str(preds))
    assert json.loads(result.stdout)["benchmark"] == "pets"
    _assert_pets_scores(_scores(result))


def test_it_scores_a_zip_bundle_like_its_manifest(run_score, tmp_path: Path) -> None:
    archive = _zip(_write_bundle(tmp_path / "pets").parent, tmp_path / "pets.zip")
    preds = tmp_path / "preds.npy"
    np.save(preds, np.array(PREDICTIONS, dtype=np.int64))
    _assert_pets_scores(_scores(run_score("--bundle", str(archive), "--json",
                                          f"pets-test={preds}")))
    table = run_score("--bundle", str(archive), str(preds))
    assert table.returncode == 0, table.stderr
    rows = [re.split(r" {2,}", line.strip()) for line in table.stdout.splitlines()[1:]]
    # the rows in the order of the JSON scores: original top-1, then corrected top-1
    assert rows[1][:4] == ["corrected", "top-1", f"{100 * 5 / 7:.2f}", "5/7"]


def test_it_needs_no_data_directory_for_a_bundle_with_its_own_files(
        run_score, tmp_path: Path) -> None:
    manifest = _write_bundle(tmp_path / "pets")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    result = run_score("--bundle", str(manifest), "--json", "--data-dir",
                       str(tmp_path / "no-such-data"), str(preds))
    _assert_pets_scores(_scores(result))


BAD_LABELS = [0, 1, 2, 0, 1, 3, 0, 1]
BAD_VOTES = [{**VOTES[0], "mturk": {"given": 1, "guessed": 3, "maybe": 1}}, *VOTES[1:]]


@pytest.mark.parametrize(("change", "expected"), [
    ({"labels": BAD_LABELS},
     "labels.npy: label_sets.original.labels: label 3 of example 5 is outside 0..2 "
     "[label_out_of_range]"),
    ({"votes": BAD_VOTES},
     "votes.json: label_sets.corrected.votes.vocabulary: record 0 has the vote key 'maybe', "
     "which the vocabulary does not map (it maps 'given', 'guessed', 'unsure') "
     "[unknown_vote_key]"),
    ({"manifest": MANIFEST.replace('modality = "image"', 'modality = "image"\ncolour = "red"')},
     "pets.toml: colour: unknown field 'colour' (see docs/bundles.md) [unknown_field]"),
    ({"manifest": MANIFEST.replace('labels = "labels.npy"', 'labels = "../labels.npy"')},
     "pets.toml: label_sets.original.labels: '../labels.npy' is not a relative path inside "
     "the bundle's folder (absolute, `..`, `.`, `\\` or an empty part) [path_escapes]"),
])
def test_it_refuses_a_malformed_bundle_naming_file_field_and_problem(
        run_score, tmp_path: Path, change: dict[str, Any], expected: str) -> None:
    manifest = _write_bundle(tmp_path / "pets", **change)
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    result = run_score("--bundle", str(manifest), str(preds))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {expected}\n"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("entry", "expected"), [
    ("../escape.txt", "../escape.txt: entry '../escape.txt': a `..` part leads out of the "
                      "bundle [zip_unsafe_entry]"),
    ("other/second.toml", "pets.zip: the archive must hold exactly one manifest (*.toml), "
                          "it holds 2 [zip_manifest]"),
])
def test_it_refuses_an_unsafe_zip_bundle(run_score, tmp_path: Path, entry: str,
                                        expected: str) -> None:
    archive = _zip(_write_bundle(tmp_path / "pets").parent, tmp_path / "pets.zip",
                   extra={entry: b"schema = 1\n"})
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    result = run_score("--bundle", str(archive), str(preds))
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_it_refuses_a_manifest_that_does_not_exist(run_score, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    result = run_score("--bundle", str(missing), str(tmp_path / "preds.json"))
    assert result.returncode == 2
    assert f"{missing}: cannot read the manifest" in result.stderr
    assert "[missing_file]" in result.stderr


def test_it_takes_either_a_benchmark_or_a_bundle(run_score, tmp_path: Path) -> None:
    manifest = _write_bundle(tmp_path / "pets")
    both = run_score("--benchmark", "cifar100", "--bundle", str(manifest), "preds.json")
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr
    neither = run_score("preds.json")
    assert neither.returncode == 2
    assert "one of the arguments --benchmark --bundle is required" in neither.stderr
    unknown = run_score("--benchmark", "cifar1000", "preds.json")
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[-1] == (
        "python -m workers.score: error: argument --benchmark: invalid choice: 'cifar1000' "
        "(choose from '20news', 'caltech256', 'cifar10', 'cifar100', 'imagenet', 'imdb', "
        "'mnist')")
