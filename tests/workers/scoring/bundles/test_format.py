"""A bundle of every kind (tests/workers/scoring/bundles/bundle_files.py), from a folder and from a
.zip: the manifest's facts, and label sets equal to values worked out by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.bundles.bundle_files import (
    bundle_entries,
    manifest,
    write_bundle,
    zip_bytes,
)
from workers.scoring.bundles import (
    BundleData,
    compile_bundle,
    label_set_files,
    open_bundle,
    read_bundle,
)
from workers.scoring.bundles.model import ImagesDef, TextsDef

NOWHERE = Path("/nonexistent-data-dir")  # files = "bundle": the data directory is not read


def test_it_reads_the_manifest_facts(tmp_path: Path) -> None:
    bundle = read_bundle(write_bundle(tmp_path))
    assert (bundle.slug, bundle.name, bundle.modality, bundle.files) == \
        ("toy", "Toy benchmark", "image", "bundle")
    assert bundle.cites == ("toy2024",) and bundle.citation("toy2024") == \
        "Someone. A toy benchmark. 2024."
    assert (bundle.main_example_set, bundle.headline, bundle.reviewable) == \
        ("toy-test", "original", ("real",))
    assert [ls.slug for ls in bundle.label_sets] == \
        ["original", "corrected", "corrected-t4", "real", "humans", "new"]
    assert [(ls.name, ls.fields.params()["threshold"]) for ls in bundle.label_sets[1:3]] == \
        [("Corrected (t=3)", 3), ("Corrected (t=4)", 4)]
    assert [ls.example_set for ls in bundle.label_sets] == ["toy-test"] * 5 + ["toy-new"]
    assert bundle.root(NOWHERE) == tmp_path


def test_it_reads_example_images_from_a_path_or_a_setting(tmp_path: Path) -> None:
    document = manifest()
    document["example_sets"][0]["images"] = {"format": "idx", "path": "images.idx.gz"}
    document["example_sets"][1]["images"] = {"setting": "EVALSERVER_TOY_IMAGE_DIR"}
    bundle = read_bundle(write_bundle(tmp_path, document))
    assert [s.images for s in bundle.example_sets] == [
        ImagesDef(format="idx", path="images.idx.gz"),
        ImagesDef(format="folder", setting="EVALSERVER_TOY_IMAGE_DIR")]


def test_it_reads_example_texts_from_a_path_or_a_setting(tmp_path: Path) -> None:
    document = manifest()
    document["example_sets"][0]["texts"] = {"format": "folder", "path": "toy/texts"}
    document["example_sets"][1]["texts"] = {"setting": "EVALSERVER_TOY_TEXT_DIR"}
    bundle = read_bundle(write_bundle(tmp_path, document))
    assert [(s.texts, s.images) for s in bundle.example_sets] == [
        (TextsDef(format="folder", path="toy/texts"), None),
        (TextsDef(format="folder", setting="EVALSERVER_TOY_TEXT_DIR"), None)]


def test_it_names_examples_by_pattern_and_by_index(tmp_path: Path) -> None:
    data = BundleData(read_bundle(write_bundle(tmp_path)), data_dir=NOWHERE)
    test, new = data.names("toy-test"), data.names("toy-new")
    assert [test.name(i) for i in (0, 5)] == ["toy_001.png", "toy_006.png"]
    assert [test.index_of_name(n) for n in ("toy_003.png", "a/b/toy_006.png", "toy_007.png",
                                            "xtoy_001.png", "toy_01.png")] == [2, 5, None, None,
                                                                               None]
    assert [test.index_of_number(n) for n in (0, 1, 6, 7)] == [None, 0, 5, None]
    assert new.name(3) == "toy-new[3]"


def test_it_compiles_every_kind_to_the_values_worked_out_by_hand(tmp_path: Path) -> None:
    compiled = compile_bundle(read_bundle(write_bundle(tmp_path)), data_dir=NOWHERE)
    arrays = {slug: {name: a.tolist() for name, a in c.arrays.items()}
              for slug, c in compiled.items()}
    assert arrays["original"] == {"labels": [0, 1, 2, 0, 1, 2]}
    # example 1: 4 of 5 for the guessed label 2; example 3: 3 for "both" (multi-label at
    # t=3, non-agreement at t=4: the "skip" vote names no label); example 4: 3 for given.
    for slug, threshold, counts in (("corrected", 3, (1, 1, 1, 0, 0)),
                                    ("corrected-t4", 4, (1, 1, 0, 0, 1))):
        assert arrays[slug] == {"labels": [0, 1, 2, 0, 1, 2],
                                "corrected_labels": [0, 2, 2, 0, 1, 2],
                                "pruned": [True, True, True, False, True, True],
                                "correctable": [False, True, False, False, False, False]}
        meta = compiled[slug].meta
        assert (meta["threshold"], meta["flagged"], meta["pruned_size"]) == (threshold, 3, 5)
        assert tuple(meta["counts"].values()) == counts
    # accepted (example, class): (0,0) (1,2) (3,0) (4,1) (5,2) (5,1) as e*3+c; judged wrong:
    # the rated (0,1), and example 2's original label 2, never rated and not accepted.
    assert arrays["real"] == {"mask": [True, True, False, True, True, True],
                              "accepted_keys": [0, 5, 9, 13, 16, 17], "wrong_keys": [1, 8]}
    assert arrays["humans"]["probs"] == [[1, 0, 0], [0.2, 0.8, 0], [0, 0, 1], [0.6, 0.4, 0],
                                         [0, 1, 0], [0.2, 0.2, 0.6]]
    assert arrays["new"] == {"labels": [2, 1, 0, 0]}
    assert compiled["new"].size == 4 and compiled["new"].family == "new_test_set"


def test_it_opens_a_zip_bundle_to_the_same_label_sets_as_its_folder(tmp_path: Path) -> None:
    folder = compile_bundle(read_bundle(write_bundle(tmp_path / "folder")), data_dir=NOWHERE)
    archive = tmp_path / "toy.zip"
    archive.write_bytes(zip_bytes(bundle_entries()))
    with open_bundle(archive) as bundle:
        assert bundle.manifest.name == "toy.toml" and bundle.manifest.parent.name == "toy"
        zipped = compile_bundle(bundle, data_dir=NOWHERE)
        extracted = bundle.manifest.parent
    assert not extracted.exists()  # the temporary folder is gone after the block
    assert {s: c.content_hash for s, c in zipped.items()} == \
        {s: c.content_hash for s, c in folder.items()}


@pytest.mark.parametrize("slug", ["original", "corrected-t4", "real", "humans", "new"])
def test_it_lists_the_files_each_label_set_reads(tmp_path: Path, slug: str) -> None:
    bundle = read_bundle(write_bundle(tmp_path))
    files = {"original": ("labels.npy",), "corrected-t4": ("labels.npy", "votes.json"),
             "real": ("labels.npy", "real.json", "judged.npz"), "humans": ("counts.npy",),
             "new": ("new_labels.npy",)}
    assert label_set_files(bundle, bundle.label_set(slug)) == files[slug]


def test_it_compiles_the_example_of_docs_bundles(tmp_path: Path) -> None:
    """docs/bundles.md §10, with files of the shapes its comments give."""
    text = (PROJECT_ROOT / "docs/bundles.md").read_text()
    example = re.search(r"## 10\. Example.*?```toml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "reviews.toml").write_text(example)
    names = [f"r{i:04d}.txt" for i in range(1, 2001)]
    labels = np.arange(2000) % 3
    (tmp_path / "test_files.json").write_text(json.dumps(names))
    np.save(tmp_path / "labels.npy", labels)
    np.save(tmp_path / "votes_per_class.npy", np.ones((2000, 3), dtype=np.int64))
    classes = ["negative", "neutral", "positive"]
    (tmp_path / "votes.json").write_text(json.dumps([  # example 6 (label 0): 4 say positive
        {"id": "r0007", "given_original_label": "negative", "our_guessed_label": "positive",
         "mturk": {"given": 1, "guessed": 4, "unsure": 0}},
        {"id": "r0009", "given_original_label": classes[8 % 3], "our_guessed_label": "neutral",
         "mturk": {"given": 1, "guessed": 1, "unsure": 3}}]))
    compiled = compile_bundle(read_bundle(tmp_path / "reviews.toml"), data_dir=NOWHERE)
    assert list(compiled) == ["original", "corrected", "corrected-t4", "corrected-t5",
                              "annotators"]
    assert [compiled[s].meta["counts"]["correctable"] for s in
            ("corrected", "corrected-t4", "corrected-t5")] == [1, 1, 0]
    assert compiled["corrected"].arrays["corrected_labels"][6] == 2
    assert compiled["corrected"].meta["counts"]["non_agreement"] == 1
