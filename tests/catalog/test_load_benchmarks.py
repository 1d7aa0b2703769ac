"""`manage.py load_benchmarks` on the real data directory (and on broken copies of it)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.bundle_loading import benchmark_catalog_load
from leaderboard.catalog.models import (
    Benchmark,
    ExampleSet,
    ExampleSetNames,
    LabelSet,
    LabelSetVersion,
)
from leaderboard.catalog.services import label_set_version_create
from tests.helpers import PROJECT_ROOT, builtin_label_set_sync, make_partial_data_dir
from tests.workers.scoring.bundles.test_builtin import CONTENT_HASHES
from workers.scoring.bundles import (
    builtin_bundle,
    builtin_slugs,
    compile_bundle,
    label_set_identity,
)
from workers.scoring.bundles.builders import optional_source

# Every built-in bundle (benchmarks/*.toml).
BENCHMARKS = {slug: builtin_bundle(slug) for slug in builtin_slugs()}
# The three whose label sets the old hard-coded catalog declared: their hashes are also
# checked against the constants recorded when the catalog compiled them
# (tests/workers/scoring/bundles/test_builtin.py), not only against the bundle reader.
SPEC_COMPILED = {"imagenet", "cifar10", "mnist"}

pytestmark = pytest.mark.django_db

Runner = Callable[..., tuple[str, str]]

# Without a multi-label file, every label set but the optional ones is loaded.
EXPECTED_LABEL_SETS = {
    (bundle.slug, ls.slug)
    for bundle in BENCHMARKS.values()
    for ls in bundle.label_sets
    if optional_source(bundle, ls) is None
}
EXPECTED_EXAMPLE_SETS = {
    example_set.slug: example_set.size
    for bundle in BENCHMARKS.values()
    for example_set in bundle.example_sets
}
NOT_CONFIGURED = "skipped: not configured (set EVALSERVER_MULTILABEL_FILE)"




# Each built-in benchmark's vote vocabulary as its manifest declares it (benchmarks/*.toml).
_STUDY = [["given", "original"], ["guessed", "guessed"], ["both", "both"], ["neither", "neither"]]
VOTE_ANSWERS = {
    **dict.fromkeys(("imagenet", "cifar10", "cifar100", "caltech256", "20news"), _STUDY),
    "mnist": [["given", "original"], ["guessed", "guessed"], ["neither", "neither"]],
    "imdb": [["given", "original"], ["guessed", "guessed"], ["neutral", "none"],
             ["off-topic", "none"]],
}

def label_set_slugs(benchmark: str) -> list[str]:
    return sorted(
        LabelSet.objects.filter(benchmark__slug=benchmark).values_list("slug", flat=True)
    )


def catalog_state() -> dict[str, Any]:
    return {
        "benchmarks": sorted(Benchmark.objects.values_list("id", "slug")),
        "example_sets": sorted(ExampleSet.objects.values_list("id", "slug", "size")),
        "label_sets": sorted(LabelSet.objects.values_list("id", "benchmark__slug", "slug")),
        "versions": sorted(
            LabelSetVersion.objects.values_list(
                "id", "label_set__benchmark__slug", "label_set__slug", "number", "content_hash"
            )
        ),
    }


def test_it_loads_exactly_the_builtin_bundles_from_the_real_data(
    run_load_benchmarks: Runner, data_dir: Path, compile_cache_dir: Path
) -> None:
    out, err = run_load_benchmarks()

    assert err == ""
    assert sorted(Benchmark.objects.values_list("slug", flat=True)) == [
        "20news", "caltech256", "cifar10", "cifar100", "imagenet", "imdb", "mnist",
    ]
    assert sorted(BENCHMARKS) == sorted(Benchmark.objects.values_list("slug", flat=True))
    assert dict(ExampleSet.objects.values_list("slug", "size")) == EXPECTED_EXAMPLE_SETS
    assert sorted(LabelSet.objects.values_list("benchmark__slug", "slug")) == sorted(
        EXPECTED_LABEL_SETS
    )
    # The public names listed in docs/metrics.md §15.
    assert label_set_slugs("cifar10") == [
        "cifar10.1-v4", "cifar10.1-v6", "cifar10h", "corrected", "original",
    ]
    assert label_set_slugs("mnist") == ["corrected", "original"]
    assert label_set_slugs("imagenet") == [
        "corrected", "corrected-t4", "corrected-t5", "original", "real",
    ]
    for slug in ("cifar100", "caltech256", "20news", "imdb"):
        assert label_set_slugs(slug) == ["corrected", "corrected-t4", "corrected-t5", "original"]
    assert EXPECTED_EXAMPLE_SETS == {
        "imagenet-val": 50_000, "cifar10-test": 10_000, "cifar10.1-v4": 2_021,
        "cifar10.1-v6": 2_000, "mnist-test": 10_000, "cifar100-test": 10_000,
        "caltech256": 29_780, "20news-test": 7_532, "imdb-test": 25_000,
    }
    for label_set in LabelSet.objects.select_related("benchmark", "example_set__benchmark"):
        bundle = BENCHMARKS[label_set.benchmark.slug]
        ls = bundle.label_set(label_set.slug)
        identity = label_set_identity(bundle, ls)  # as its compiled set has them
        assert label_set.example_set.slug == ls.example_set
        assert label_set.example_set.benchmark == label_set.benchmark
        assert (label_set.kind, label_set.family) == (identity["kind"], identity["family"])
        # its family's plain params (a corrected set's threshold), plus, for a corrected set,
        # its vote file's answers and their meanings
        plain = {key: value for key, value in ls.fields.params().items()
                 if isinstance(value, int | float | str | bool)}
        answers = {"answers": VOTE_ANSWERS[label_set.benchmark.slug]} if (
            label_set.family == "corrected") else {}
        assert label_set.params == {**plain, **answers}
    # Each label set has exactly version 1, holding the hash its files compile to.
    assert LabelSetVersion.objects.count() == len(EXPECTED_LABEL_SETS)
    from_bundles = {
        slug: compile_bundle(builtin_bundle(slug), data_dir=data_dir, cache_dir=compile_cache_dir)
        for slug in BENCHMARKS
    }
    for version in LabelSetVersion.objects.select_related("label_set__benchmark"):
        assert (version.number, version.parent_id, version.author_id) == (1, None, None)
        benchmark, slug = version.label_set.benchmark.slug, version.label_set.slug
        compiled = from_bundles[benchmark][slug]
        if benchmark in SPEC_COMPILED:
            assert version.content_hash == CONTENT_HASHES[benchmark, slug]
        assert version.content_hash == compiled.content_hash
        assert version.summary == json.loads(json.dumps(compiled.summary))
    assert f"imagenet/multilabel: {NOT_CONFIGURED}" in out
    assert f"imagenet/imagenet-m: {NOT_CONFIGURED}" in out
    assert (
        f"Created {len(BENCHMARKS)} benchmarks, {len(EXPECTED_EXAMPLE_SETS)} example sets, "
        f"{len(EXPECTED_LABEL_SETS)} label sets, {len(EXPECTED_LABEL_SETS)} label-set versions."
    ) in out


def test_it_is_idempotent(run_load_benchmarks: Runner) -> None:
    run_load_benchmarks()
    before = catalog_state()

    out, err = run_load_benchmarks()

    assert err == ""
    assert catalog_state() == before
    assert "Nothing to create: the database already has everything available" in out
    assert "Created" not in out
    assert out.count("up to date (version 1") == len(EXPECTED_LABEL_SETS)


def test_it_names_missing_files_and_skips_only_that_label_set(
    run_load_benchmarks: Runner, data_dir: Path, tmp_path: Path
) -> None:
    partial = make_partial_data_dir(
        data_dir, tmp_path / "data", leave_out={"cifar10/cifar10h_probs.npy"}
    )

    out, err = run_load_benchmarks("--data-dir", str(partial), "--benchmark", "cifar10")

    assert err == ""
    assert f"cifar10/cifar10h: skipped: missing in {partial}: cifar10/cifar10h_probs.npy" in out
    assert label_set_slugs("cifar10") == ["cifar10.1-v4", "cifar10.1-v6", "corrected", "original"]
    assert list(Benchmark.objects.values_list("slug", flat=True)) == ["cifar10"]


def test_it_skips_a_benchmark_with_no_available_label_set(
    run_load_benchmarks: Runner, data_dir: Path, tmp_path: Path
) -> None:
    partial = make_partial_data_dir(
        data_dir, tmp_path / "data", leave_out={"mnist/original_labels.npy"}
    )

    out, err = run_load_benchmarks(
        "--data-dir", str(partial), "--benchmark", "mnist", "--benchmark", "cifar10"
    )

    assert err == ""
    assert f"mnist/original: skipped: missing in {partial}: mnist/original_labels.npy" in out
    assert "mnist: skipped: none of its label sets is available" in out
    assert list(Benchmark.objects.values_list("slug", flat=True)) == ["cifar10"]
    assert not ExampleSet.objects.filter(slug="mnist-test").exists()


def test_it_fails_clearly_when_the_data_dir_is_missing(
    run_load_benchmarks: Runner, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir"

    with pytest.raises(CommandError) as error:
        run_load_benchmarks("--data-dir", str(missing))

    message = str(error.value)
    assert f"The data directory {missing} does not exist" in message
    assert "EVALSERVER_DATA_DIR" in message
    for source in ("cleanlab/label-errors", "google-research/reassessed-imagenet",
                   "modestyachts/ImageNetV2", "jcpeterson/cifar-10h", "modestyachts/CIFAR-10.1",
                   "MNIST"):
        assert source in message
    assert Benchmark.objects.count() == 0


def test_it_exits_non_zero_when_the_data_dir_setting_points_nowhere(tmp_path: Path) -> None:
    env = {**os.environ, "EVALSERVER_DATA_DIR": str(tmp_path / "no-such-dir")}

    result = subprocess.run(
        [sys.executable, "manage.py", "load_benchmarks"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )

    assert result.returncode == 1
    assert f"The data directory {tmp_path / 'no-such-dir'} does not exist" in result.stderr
    assert "set EVALSERVER_DATA_DIR" in result.stderr


def test_it_fails_when_the_configured_multilabel_file_is_missing(
    run_load_benchmarks: Runner, catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_MULTILABEL_FILE = tmp_path / "human_accuracy_v3.0.0.json"

    with pytest.raises(CommandError, match="EVALSERVER_MULTILABEL_FILE is set to .* not a file"):
        run_load_benchmarks()

    assert Benchmark.objects.count() == 0


def test_it_loads_the_multilabel_sets_when_a_file_is_configured(
    run_load_benchmarks: Runner, catalog_settings: Settings, data_dir: Path,
    tmp_path: Path,
) -> None:
    classes = json.loads((data_dir / "imagenet/class_info.json").read_text())
    wnid = [entry["wnid"] for entry in classes]
    multilabel_file = tmp_path / "human_accuracy_v3.0.0.json"
    multilabel_file.write_text(json.dumps({  # the human_accuracy_v3.0.0.json layout
        "initial_annots": {
            "ILSVRC2012_val_00000001.JPEG": {"correct": [wnid[65]]},
            "ILSVRC2012_val_00000002.JPEG": {
                "correct": [wnid[970]], "wrong": [wnid[1]], "unclear": [wnid[2]],
            },
            "ILSVRC2012_val_00000003.JPEG": {"wrong": [wnid[3]]},
            "ILSVRC2012_val_00000004.JPEG": {"correct": [wnid[4]]},
            "ImageNetV2_some_image.jpeg": {"correct": [wnid[0]]},
        },
        "problematic_images": {"ILSVRC2012_val_00000004.JPEG": {}},
        "imagenet_m": ["ILSVRC2012_val_00000002.JPEG", "ILSVRC2012_val_00000003.JPEG"],
    }))
    catalog_settings.EVALSERVER_MULTILABEL_FILE = multilabel_file

    out, err = run_load_benchmarks("--benchmark", "imagenet")

    assert err == ""
    assert NOT_CONFIGURED not in out
    assert label_set_slugs("imagenet") == [
        "corrected", "corrected-t4", "corrected-t5", "imagenet-m", "multilabel", "original",
        "real",
    ]
    included = dict(
        LabelSetVersion.objects.filter(
            label_set__slug__in=["multilabel", "imagenet-m"], number=1
        ).values_list("label_set__slug", "summary__included")
    )
    # annotated validation images minus the problematic one; the two ImageNet-M images
    assert included == {"multilabel": 3, "imagenet-m": 2}


def test_it_warns_and_keeps_versions_when_the_data_compiles_to_another_hash(
    run_load_benchmarks: Runner,
) -> None:
    label_set = builtin_label_set_sync("mnist", "original")
    old = label_set_version_create(label_set=label_set, content_hash="0" * 64, summary={})

    out, err = run_load_benchmarks("--benchmark", "mnist")

    assert err == ""
    assert "mnist/original: the data files now compile to sha256 " in out
    assert (
        "but version 1 has 000000000000; no version created "
        "(later versions come from maintainer review)"
    ) in out
    assert list(label_set.versions.values_list("id", "content_hash")) == [(old.id, "0" * 64)]
    assert LabelSetVersion.objects.filter(label_set__slug="corrected").count() == 1


def test_it_rejects_an_unknown_benchmark(run_load_benchmarks: Runner) -> None:
    with pytest.raises(CommandError, match="unknown benchmark"):
        run_load_benchmarks("--benchmark", "svhn")


def test_it_is_thin_over_the_service(catalog_settings: Settings) -> None:
    """The command and the service agree: the service alone loads the same rows."""
    report = benchmark_catalog_load(
        data_dir=catalog_settings.EVALSERVER_DATA_DIR,
        cache_dir=catalog_settings.EVALSERVER_CACHE_DIR,
        benchmark_slugs=["mnist"],
    )

    assert report.errors == 0
    assert report.created == {
        "benchmarks": 1, "example sets": 1, "label sets": 2, "label-set versions": 2,
    }
    assert label_set_slugs("mnist") == ["corrected", "original"]
    call_command("load_benchmarks", "--benchmark", "mnist", stdout=io.StringIO())
    assert LabelSetVersion.objects.count() == 2


def test_it_stores_the_definition_each_bundle_gives(
    run_load_benchmarks: Runner, data_dir: Path
) -> None:
    run_load_benchmarks()

    imagenet = Benchmark.objects.get(slug="imagenet")
    manifest = tomllib.loads((PROJECT_ROOT / "benchmarks/imagenet.toml").read_text())
    class_info = json.loads((data_dir / "imagenet/class_info.json").read_text())
    assert (imagenet.modality, imagenet.headline, imagenet.hidden, imagenet.source) == (
        "image", "original", False, "builtin:imagenet.toml")
    assert imagenet.description == manifest["description"]
    assert imagenet.citations == [manifest["citations"]["russakovsky2015"]]
    assert imagenet.class_keys == [entry["wnid"] for entry in class_info]
    # docs/bundles.md §3: a `records` name that is a list of synonyms names the class by its
    # first item.
    assert imagenet.class_names == [entry["synset"][0] for entry in class_info]
    assert imagenet.class_names[0] == "tench"
    assert imagenet.class_names.count("crane") == 2  # two classes share a name, not a key
    assert Benchmark.objects.get(slug="cifar10").class_names == [
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
        "truck"]
    assert Benchmark.objects.get(slug="cifar10").class_keys is None
    assert Benchmark.objects.get(slug="20news").modality == "text"
    # 20news names its classes in its vote file: each record names its given and guessed class.
    votes = json.loads((data_dir / "20news/cleanlab_mturk.json").read_text())
    newsgroups = {record[side]: record[f"{side}_name"] for record in votes
                  for side in ("given_original_label", "our_guessed_label")}
    assert sorted(newsgroups) == list(range(20))
    assert Benchmark.objects.get(slug="20news").class_names == [
        newsgroups[class_id] for class_id in range(20)]

    naming = {row[0]: row[1:] for row in ExampleSet.objects.values_list(
        "slug", "naming", "name_pattern", "first_number")}
    assert naming["imagenet-val"] == ("pattern", "ILSVRC2012_val_{number:08d}.JPEG", 1)
    assert naming["cifar10-test"] == ("index", "", 1)
    imdb_names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    caltech_names = json.loads(
        (data_dir / "caltech256/cleanlab_index_to_filename.json").read_text())
    assert naming["imdb-test"] == ("file", "", 1)
    assert naming["caltech256"] == ("file", "", 1)
    # in rows of their own, which no other example set has (the others are not named by file)
    assert dict(ExampleSetNames.objects.values_list("example_set__slug", "names")) == {
        "imdb-test": imdb_names, "caltech256": caltech_names}

    # ImageNet's multilabel (reviewable too) is not loaded without its file.
    assert list(LabelSet.objects.filter(reviewable=True).values_list(
        "benchmark__slug", "slug")) == [("imagenet", "real")]
    kinds = dict(LabelSet.objects.filter(benchmark__slug="cifar10").values_list(
        "slug", "bundle_kind"))
    assert kinds == {"original": "single", "corrected": "validated", "cifar10h": "soft",
                     "cifar10.1-v4": "new_test_set", "cifar10.1-v6": "new_test_set"}


def test_it_rewrites_the_descriptive_fields_of_existing_rows(
    run_load_benchmarks: Runner,
) -> None:
    run_load_benchmarks("--benchmark", "mnist", "--benchmark", "imagenet")
    # As rows from before the bundles were: no description, classes or naming.
    Benchmark.objects.filter(slug="mnist").update(description="", class_names=[], source="")
    ExampleSet.objects.filter(slug="imagenet-val").update(naming="index", name_pattern="")
    LabelSet.objects.filter(slug="real").update(reviewable=False)
    versions = sorted(LabelSetVersion.objects.values_list("id", "content_hash"))

    out, err = run_load_benchmarks("--benchmark", "mnist", "--benchmark", "imagenet")

    assert err == ""
    assert "  mnist: benchmark details updated" in out
    assert "  imagenet-val: example set details updated" in out
    assert "  imagenet/real: label set details updated" in out
    mnist = Benchmark.objects.get(slug="mnist")
    assert (mnist.class_names, mnist.source) == (
        ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"], "builtin:mnist.toml")
    assert mnist.description.startswith("The 10,000")
    assert ExampleSet.objects.get(slug="imagenet-val").naming == "pattern"
    assert LabelSet.objects.get(slug="real").reviewable is True
    assert sorted(LabelSetVersion.objects.values_list("id", "content_hash")) == versions
