"""One hidden labelling, one release mechanism (security issue 37, item 6;
docs/hosts/hidden-test-sets.md): a bundle whose hidden label sets share their labels under
different mechanisms is refused (`hidden_labels_shared`), naming both label sets, both
mechanisms and why, and nothing is written: declared twice in one bundle, one's scored labels
within the other's, or added later beside a loaded one. Built from the real CIFAR-10 and
CIFAR-10.1 label files, as a host would bundle them (docs/bundles.md §5.7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings

from leaderboard.catalog.bundle_loading import benchmark_bundle_add
from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet, LabelSetVersion
from tests.workers.scoring.bundles.bundle_files import toml_dumps
from workers.scoring.bundles import BundleError

pytestmark = pytest.mark.django_db

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck"]
VOCABULARY = {"given": "original", "guessed": "guessed", "both": "both", "neither": "neither"}


def _document(*hidden: dict[str, Any]) -> dict[str, Any]:
    """CIFAR-10's test set with CIFAR-10H public (the headline) and CIFAR-10.1 v6 beside it;
    `hidden`: the hidden label sets."""
    return {
        "schema": 1, "slug": "cifar10-held", "name": "CIFAR-10, held out", "modality": "image",
        "files": "bundle", "headline": "humans",
        "classes": {"count": 10, "source": "inline", "names": CLASSES},
        "example_sets": [{"slug": "held-test", "name": "CIFAR-10 test", "size": 10_000},
                         {"slug": "held-v6", "name": "CIFAR-10.1 v6", "size": 2_000}],
        "label_sets": [{"slug": "humans", "kind": "soft", "name": "CIFAR-10H",
                        "probabilities": "cifar10h_probs.npy"}, *hidden],
    }


def _v6(slug: str, **release: Any) -> dict[str, Any]:
    return {"slug": slug, "kind": "single", "example_set": "held-v6", "name": slug,
            "labels": "v6.npy", "hidden": True, **release}


def _write(folder: Path, data_dir: Path, document: dict[str, Any]) -> Path:
    """The bundle in `folder`: the real label files, and the CIFAR-10 vote records that
    correct nothing (fewer than 3 of 5 votes for the suggested label), so that a validated
    set's scored labels are the original labels on its pruned set."""
    folder.mkdir(parents=True)
    for name, source in {"v6.npy": "cifar10.1_v6_labels.npy",
                         "original.npy": "original_labels.npy",
                         "cifar10h_probs.npy": "cifar10h_probs.npy"}.items():
        shutil.copyfile(data_dir / "cifar10" / source, folder / name)
    votes = json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text())
    (folder / "votes.json").write_text(json.dumps([v for v in votes if v["mturk"]["guessed"] < 3]))
    path = folder / "held.toml"
    path.write_text(toml_dumps(document))
    return path


def _catalog() -> tuple[int, int, int, int, list[str]]:
    stored = default_storage.listdir("labelsets")[1] if default_storage.exists("labelsets") else []
    return (Benchmark.objects.count(), ExampleSet.objects.count(), LabelSet.objects.count(),
            LabelSetVersion.objects.count(), sorted(stored))


def _refused(path: Path, **options: Any) -> BundleError:
    with pytest.raises(BundleError) as caught:
        benchmark_bundle_add(path=path, **options)
    return caught.value


WHY = ("a participant could tune a submission on the numbers one mechanism releases and have "
       "the other release it, which undoes the protection of the stricter one "
       "(docs/hosts/hidden-test-sets.md). Release both by one mechanism, or keep one of them")


@pytest.mark.parametrize(("first", "second", "mechanisms"), [
    ({"release": "exact"}, {"release": "ladder"}, ("exact", "ladder (step 3/sqrt(n))")),
    ({"release": "ladder", "step": 0.02}, {"release": "ladder"},
     ("ladder (step 0.02)", "ladder (step 3/sqrt(n))")),
    ({"release": "parameter_free"}, {"release": "exact"}, ("parameter_free", "exact")),
], ids=["exact-and-ladder", "two-ladder-steps", "parameter-free-and-exact"])
def test_it_refuses_one_hidden_labelling_declared_under_two_mechanisms(
    catalog_settings: Settings, data_dir: Path, tmp_path: Path, first: dict[str, Any],
    second: dict[str, Any], mechanisms: tuple[str, str],
) -> None:
    path = _write(tmp_path / "b", data_dir, _document(_v6("v6-a", **first), _v6("v6-b", **second)))
    error = _refused(path)
    assert (error.code, error.file, error.field, error.message) == (
        "hidden_labels_shared", "held.toml", "label_sets.v6-b.release",
        f"the hidden label sets 'v6-a' (release {mechanisms[0]}) and 'v6-b' (release "
        f"{mechanisms[1]}) score the same labels on the same examples: {WHY}")
    assert _catalog() == (0, 0, 0, 0, [])


def test_it_refuses_a_hidden_set_whose_scored_labels_lie_within_another_released_otherwise(
    catalog_settings: Settings, data_dir: Path, tmp_path: Path,
) -> None:
    original = {"slug": "original", "kind": "single", "example_set": "held-test",
                "name": "Original", "labels": "original.npy", "hidden": True, "release": "exact"}
    corrected = {"slug": "corrected", "kind": "validated", "example_set": "held-test",
                 "name": "Corrected", "hidden": True, "release": "ladder",
                 "votes": {"file": "votes.json", "vocabulary": VOCABULARY}}
    path = _write(tmp_path / "b", data_dir, _document(original, corrected))
    error = _refused(path)
    assert (error.code, error.field, error.message) == (
        "hidden_labels_shared", "label_sets.corrected.release",
        "the hidden label sets 'original' (release exact) and 'corrected' (release ladder "
        "(step 3/sqrt(n))) share labels: every example 'corrected' scores is scored by "
        f"'original' against the same label: {WHY}")
    assert _catalog() == (0, 0, 0, 0, [])

    # the same two under one mechanism are loaded; the validated set scores every example but
    # those of its records with fewer than 3 votes for the given label (docs/metrics.md §3.1)
    corrected["release"] = "exact"
    benchmark_bundle_add(path=_write(tmp_path / "one", data_dir, _document(original, corrected)))
    kept = json.loads((tmp_path / "one/votes.json").read_text())
    unsure = sum(1 for record in kept if record["mturk"]["given"] < 3)
    evaluated = LabelSetVersion.objects.get(label_set__slug="corrected").summary["evaluated"]
    assert (len(kept), unsure, evaluated) == (257, 36, 10_000 - 36)


def test_it_refuses_a_labelling_added_later_beside_a_loaded_one_released_otherwise(
    catalog_settings: Settings, data_dir: Path, tmp_path: Path,
) -> None:
    benchmark_bundle_add(path=_write(tmp_path / "first", data_dir,
                                     _document(_v6("v6-exact", release="exact"))))
    before = _catalog()
    # an update that adds the same labels under the Ladder, without declaring the loaded set
    update = _write(tmp_path / "second", data_dir, _document(_v6("v6-ladder")))
    error = _refused(update, update=True)
    assert (error.code, error.field, error.message) == (
        "hidden_labels_shared", "label_sets.v6-ladder.release",
        "the hidden label sets 'v6-exact' (loaded, release exact) and 'v6-ladder' (release "
        f"ladder (step 3/sqrt(n))) score the same labels on the same examples: {WHY}")
    assert _catalog() == before

    # other labels under another mechanism are added
    other = _v6("v4-ladder") | {"labels": "v4.npy", "example_set": "held-v4"}
    document = _document(other)
    document["example_sets"].append({"slug": "held-v4", "name": "CIFAR-10.1 v4", "size": 2_021})
    path = _write(tmp_path / "third", data_dir, document)
    shutil.copyfile(data_dir / "cifar10/cifar10.1_v4_labels.npy", path.parent / "v4.npy")
    benchmark_bundle_add(path=path, update=True)
    assert sorted(LabelSet.objects.filter(labels_hidden=True).values_list("slug", "release")) \
        == [("v4-ladder", "ladder"), ("v6-exact", "exact")]


def test_it_refuses_the_same_soft_labels_hidden_under_two_mechanisms(
    catalog_settings: Settings, data_dir: Path, tmp_path: Path,
) -> None:
    # a kind of several labels per example: compared by all its arrays
    soft = [{"slug": slug, "kind": "soft", "example_set": "held-test", "name": slug,
             "probabilities": "cifar10h_probs.npy", "hidden": True, "release": release}
            for slug, release in (("h-exact", "exact"), ("h-free", "parameter_free"))]
    error = _refused(_write(tmp_path / "b", data_dir, _document(*soft)))
    assert (error.code, error.field, error.message) == (
        "hidden_labels_shared", "label_sets.h-free.release",
        "the hidden label sets 'h-exact' (release exact) and 'h-free' (release parameter_free) "
        f"hold the same labels: {WHY}")
    assert _catalog() == (0, 0, 0, 0, [])
