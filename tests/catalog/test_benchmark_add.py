"""`manage.py benchmark_add PATH [--update]`: a benchmark from a bundle in a folder or a .zip,
checked whole before anything is written (docs/bundles.md)."""

from __future__ import annotations

import io
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.bundle_loading import BundleConflictError, benchmark_bundle_add
from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet, LabelSetVersion
from tests.workers.scoring.bundles.bundle_files import (
    bundle_entries,
    data_files,
    manifest,
    npy_bytes,
    write_bundle,
    zip_bytes,
)

pytestmark = pytest.mark.django_db

Runner = Callable[..., str]


@pytest.fixture
def run_benchmark_add(catalog_settings: Settings) -> Runner:
    """Run `manage.py benchmark_add` in-process; returns its stdout."""

    def run(*args: str) -> str:
        out = io.StringIO()
        call_command("benchmark_add", *args, stdout=out, stderr=io.StringIO(), no_color=True)
        return out.getvalue()

    return run


def row_counts() -> tuple[int, int, int, int]:
    return (Benchmark.objects.count(), ExampleSet.objects.count(), LabelSet.objects.count(),
            LabelSetVersion.objects.count())


def catalog_state() -> list[Any]:
    return [
        sorted(Benchmark.objects.values_list("id", "slug", "name", "description")),
        sorted(ExampleSet.objects.values_list("id", "slug", "size")),
        sorted(LabelSet.objects.values_list("id", "slug", "family", "reviewable")),
        sorted(LabelSetVersion.objects.values_list("id", "label_set_id", "number",
                                                   "content_hash")),
    ]


def without_label_set(document: dict[str, Any], slug: str) -> dict[str, Any]:
    document["label_sets"] = [ls for ls in document["label_sets"] if ls["slug"] != slug]
    return document


def assert_toy_loaded() -> None:
    """The rows of tests/workers/scoring/bundles/bundle_files.py's toy bundle, read off its manifest
    and files by hand."""
    toy = Benchmark.objects.get(slug="toy")
    assert (toy.name, toy.description, toy.modality, toy.headline, toy.source) == (
        "Toy benchmark", "Six examples, three classes.", "image", "original", "upload")
    assert (toy.num_classes, toy.main_example_set, toy.hidden) == (3, "toy-test", False)
    assert toy.citations == ["Someone. A toy benchmark. 2024."]
    assert (toy.class_names, toy.class_keys) == (["cat", "dog", "fox"], None)
    assert sorted(ExampleSet.objects.values_list(
        "slug", "size", "naming", "name_pattern", "first_number")) == [
        ("toy-new", 4, "index", "", 1), ("toy-test", 6, "pattern", "toy_{number:03d}.png", 1)]
    assert sorted(LabelSet.objects.values_list(
        "slug", "example_set__slug", "kind", "family", "bundle_kind", "reviewable")) == [
        ("corrected", "toy-test", "single", "corrected", "validated", False),
        ("corrected-t4", "toy-test", "single", "corrected", "validated", False),
        ("humans", "toy-test", "soft", "soft", "soft", False),
        ("new", "toy-new", "single", "new_test_set", "new_test_set", False),
        ("original", "toy-test", "single", "original", "single", False),
        ("real", "toy-test", "multi", "real", "multi", True),
    ]
    assert LabelSetVersion.objects.filter(number=1, published__isnull=False).count() == 6
    assert LabelSetVersion.objects.count() == 6
    # Threshold 3: example 1 has 4 votes for its guessed label 2 (corrected), example 3 has 3
    # votes for both labels (multi-label: pruned), example 4 has 3 for its given label.
    corrected = compiled_for_version(LabelSetVersion.objects.get(label_set__slug="corrected"))
    assert corrected.arrays["corrected_labels"].tolist() == [0, 2, 2, 0, 1, 2]
    assert corrected.arrays["pruned"].tolist() == [True, True, True, False, True, True]
    original = compiled_for_version(LabelSetVersion.objects.get(label_set__slug="original"))
    assert original.arrays["labels"].tolist() == [0, 1, 2, 0, 1, 2]


def test_it_adds_a_benchmark_from_a_manifest_and_its_files(
    run_benchmark_add: Runner, tmp_path: Path
) -> None:
    path = write_bundle(tmp_path / "toy")

    out = run_benchmark_add(str(path))

    assert_toy_loaded()
    assert "  toy/corrected-t4: version 1 created" in out
    assert ("Created 1 benchmarks, 2 example sets, 6 label sets, 6 label-set versions. "
            "The database now has 1 benchmarks") in out


def test_it_changes_nothing_when_run_again(run_benchmark_add: Runner, tmp_path: Path) -> None:
    path = write_bundle(tmp_path / "toy")
    run_benchmark_add(str(path))
    before = catalog_state()

    out = run_benchmark_add(str(path))

    assert catalog_state() == before
    assert "Nothing to create: the database already has everything available" in out
    assert out.count("up to date (version 1") == 6


def test_it_adds_label_sets_with_update_only(run_benchmark_add: Runner, tmp_path: Path) -> None:
    run_benchmark_add(str(write_bundle(tmp_path / "first",
                                       without_label_set(manifest(), "humans"))))
    before = catalog_state()
    full = write_bundle(tmp_path / "full")

    with pytest.raises(CommandError, match="benchmark 'toy' is already loaded and this bundle "
                       r"would change it \(1 label sets created, 1 label-set versions created"):
        run_benchmark_add(str(full))
    assert catalog_state() == before

    out = run_benchmark_add(str(full), "--update")

    assert "  toy/humans: version 1 created" in out
    assert_toy_loaded()
    after = catalog_state()
    assert [row for row in after[3] if row in before[3]] == before[3]  # versions kept


def test_it_adds_a_zip_bundle(run_benchmark_add: Runner, tmp_path: Path) -> None:
    archive = tmp_path / "toy.zip"
    archive.write_bytes(zip_bytes(bundle_entries()))

    run_benchmark_add(str(archive))

    assert_toy_loaded()


def _labels(values: list[int]) -> bytes:
    return npy_bytes(np.array(values, dtype=np.int64))


def _votes_with_key(key: str) -> bytes:
    votes = json.loads(data_files()["votes.json"])
    votes[0]["mturk"][key] = votes[0]["mturk"].pop("skip")
    return json.dumps(votes).encode()


def _manifest_with(**changes: Any) -> dict[str, Any]:
    document = manifest()
    if "classes" in changes:
        document["classes"] = changes["classes"]
    if "original_labels" in changes:
        document["label_sets"][0]["labels"] = changes["original_labels"]
    return document


# each case: the manifest (None: the toy's own), the files replaced, and the whole refusal:
# "file: field: problem [code]" (docs/bundles.md §8)
MALFORMED = {
    "label out of range": (
        None, {"labels.npy": _labels([0, 1, 3, 0, 1, 2])},
        "labels.npy: label_sets.original.labels: label 3 of example 2 is outside 0..2 "
        "[label_out_of_range]"),
    "length mismatch": (
        None, {"labels.npy": _labels([0, 1, 2, 0, 1])},
        "labels.npy: label_sets.original.labels: 5 labels for an example set of 6 "
        "[length_mismatch]"),
    "unknown vote key": (
        None, {"votes.json": _votes_with_key("maybe")},
        "votes.json: label_sets.corrected.votes.vocabulary: record 0 has the vote key 'maybe', "
        "which the vocabulary does not map (it maps 'given', 'guessed', 'both', 'neither', "
        "'skip') [unknown_vote_key]"),
    "duplicate class name": (
        _manifest_with(classes={"count": 3, "source": "inline",
                                "names": ["cat", "dog", "cat"]}), {},
        "toy.toml: classes.names[2]: the class name 'cat' appears twice [duplicate_class]"),
    "path escaping the bundle": (
        _manifest_with(original_labels="../labels.npy"), {},
        "toy.toml: label_sets.original.labels: '../labels.npy' is not a relative path inside "
        "the bundle's folder (absolute, `..`, `.`, `\\` or an empty part) [path_escapes]"),
    "pickle": (
        _manifest_with(original_labels="labels.pkl"),
        {"labels.pkl": pickle.dumps([0, 1, 2, 0, 1, 2])},
        "labels.pkl: label_sets.original.labels: a pickle: pickles are never loaded (they can "
        "run code); store labels as an integer .npy array or as JSON [pickle]"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_it_refuses_a_malformed_bundle_by_name_and_writes_nothing(
    run_benchmark_add: Runner, tmp_path: Path, case: str
) -> None:
    document, replaced, expected = MALFORMED[case]
    path = write_bundle(tmp_path / "toy", document, {**data_files(), **replaced})
    (tmp_path / "labels.npy").write_bytes(data_files()["labels.npy"])  # what ../ would reach
    before = row_counts()

    with pytest.raises(CommandError) as error:
        run_benchmark_add(str(path))

    assert str(error.value) == expected
    assert row_counts() == before == (0, 0, 0, 0)


def test_it_refuses_a_zip_whose_manifest_is_nested_too_deeply(
    run_benchmark_add: Runner, tmp_path: Path
) -> None:
    # 200,000 nested arrays (a small zip) would overflow tomllib's recursion: refused by the
    # manifest's limits as bad TOML
    archive = tmp_path / "toy.zip"
    deep = b"x = " + b"[\n" * 200_000 + b"]\n" * 200_000
    archive.write_bytes(zip_bytes({"toy/toy.toml": deep}))

    with pytest.raises(CommandError) as error:
        run_benchmark_add(str(archive))

    assert str(error.value) == ("toy.toml: line 33: arrays and inline tables nested more than 32 "
                                "deep, the most a manifest may nest them [bad_toml]")
    assert row_counts() == (0, 0, 0, 0)


def test_it_leaves_nothing_when_a_conflict_is_found_while_writing(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    benchmark_bundle_add(path=write_bundle(tmp_path / "toy"))
    before = catalog_state()
    document = manifest()
    document["slug"] = "toy2"  # a new benchmark whose second example set's slug is taken
    document["example_sets"][0]["slug"] = "toy2-test"

    with pytest.raises(BundleConflictError) as error:
        benchmark_bundle_add(path=write_bundle(tmp_path / "toy2", document))

    assert str(error.value) == "example set 'toy-new' already exists in benchmark 'toy'"
    assert catalog_state() == before


def test_it_refuses_a_bundle_whose_version_1_would_change(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    benchmark_bundle_add(path=write_bundle(tmp_path / "toy"))
    before = catalog_state()
    files = {**data_files(), "new_labels.npy": _labels([0, 0, 0, 0])}

    with pytest.raises(BundleConflictError) as error:
        benchmark_bundle_add(path=write_bundle(tmp_path / "changed", files=files),
                             update=True)

    assert error.value.code == "version_conflict"
    assert str(error.value).startswith("toy/new: the data files now compile to sha256 ")
    assert catalog_state() == before

