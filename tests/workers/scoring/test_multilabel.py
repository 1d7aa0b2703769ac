"""Tests for workers.scoring.multilabel_annotations: the multi-label ImageNet set and ImageNet-M
(docs/metrics.md §5 and §6), from a small file written here in exactly the
human_accuracy_v3.0.0.json layout of MANIFEST.md, with real WordNet ids from class_info.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.support import compile_builtin, spec_collapse_pairs
from workers.scoring import datasets
from workers.scoring.bundles import BundleError
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.multilabel_annotations import (
    ORGANISM_CLASSES,
    build_multilabel_arrays,
    collapse_keys,
    collapse_pairs,
    organism_mask,
)

PREFIX = "ILSVRC2012_val_"
V2_NAME = "some_v2_image.jpeg"

def name(index: int) -> str:
    return f"{PREFIX}{index + 1:08d}.JPEG"


def index_of(file_name: str) -> int:
    return int(file_name[len(PREFIX):-len(".JPEG")]) - 1


def decode(keys: np.ndarray) -> set[tuple[int, int]]:
    return {(k // 1000, k % 1000) for k in keys.tolist()}


def problem(reason: str) -> dict[str, str]:
    return {"reason": reason, "reviewer": "ludwig", "server_username": "becca",
            "time_marked": "2019-03-29T22:48:36.956685+00:00",
            "time_reviewed": "2019-03-29T22:49:32.290916+00:00"}


@pytest.fixture(scope="module")
def wn(class_info: list[dict[str, Any]]) -> Any:
    return lambda cid: class_info[cid]["wnid"]


@pytest.fixture(scope="module")
def organism_example(canonical_imagenet_labels: list[int]) -> int:
    """The first image from 100 on whose original label is an animal (an organism class)."""
    return next(i for i in range(100, 49_999) if canonical_imagenet_labels[i] < 398)


@pytest.fixture(scope="module")
def object_example(canonical_imagenet_labels: list[int]) -> int:
    """The first image from 100 on whose original label is an artifact (an object class)."""
    return next(i for i in range(100, 49_999) if 398 <= canonical_imagenet_labels[i] <= 980)


@pytest.fixture(scope="module")
def raw(wn: Any, canonical_imagenet_labels: list[int], organism_example: int,
        object_example: int) -> dict[str, Any]:
    initial_annots: dict[str, Any] = {
        # the original label correct, two wrong ones
        name(0): {"wrong": [wn(1), wn(2)], "correct": [wn(canonical_imagenet_labels[0])]},
        name(1): {"correct": [wn(250)]},  # Siberian husky: Eskimo dog counts too
        name(2): {"correct": [wn(248)], "wrong": [wn(250)]},  # Eskimo dog: husky does not
        name(3): {"unclear": [wn(836)]},  # sunglass (unclear is accepted) -> sunglasses
        name(4): {"correct": [wn(837)]},  # sunglasses -> sunglass
        name(5): {"correct": [wn(357)], "unclear": [wn(359)]},  # the weasel group
        name(6): {},  # annotated, every list empty, so every key absent
        name(7): {"correct": [wn(100)], "wrong": [wn(101)]},  # problematic
        name(49_999): {"unclear": [wn(999)], "wrong": [wn(998)], "correct": [wn(0), wn(1)]},
        # an organism image annotated with object labels, and the other way round
        name(organism_example): {"correct": [wn(999)]},
        name(object_example): {"correct": [wn(0)]},
        V2_NAME: {"correct": [wn(3)], "wrong": [wn(4)]},  # ImageNetV2: skipped
    }
    return {
        "initial_annots": initial_annots,
        "problematic_images": {name(7): problem("marked as problematic in the review server"),
                               name(8): problem("wnid is marked wrong"),  # not annotated
                               V2_NAME: problem("marked as problematic in the review server")},
        "imagenet_m": [name(1), name(3), name(49_999), V2_NAME],
    }


@pytest.fixture(scope="module")
def multilabel_file(raw: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("multilabel") / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def expected(raw: dict[str, Any], class_info: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything the sets should hold, derived from the file with a plain loop."""
    cid = {c["wnid"]: c["cid"] for c in class_info}
    annotated: set[int] = set()
    accepted: set[tuple[int, int]] = set()
    wrong: set[tuple[int, int]] = set()
    for file_name, annots in raw["initial_annots"].items():
        if not file_name.startswith(PREFIX):
            continue
        i = index_of(file_name)
        annotated.add(i)
        for wnid in annots.get("correct", []) + annots.get("unclear", []):
            accepted.add((i, cid[wnid]))
        for wnid in annots.get("wrong", []):
            wrong.add((i, cid[wnid]))
    problematic = {index_of(n) for n in raw["problematic_images"] if n.startswith(PREFIX)}
    collapsed = set(accepted)
    for i, label in accepted:
        collapsed |= {(i, also) for source, also in spec_collapse_pairs() if source == label}
    return {"annotated": annotated, "problematic": problematic, "accepted": accepted,
            "wrong": wrong, "collapsed": collapsed,
            "imagenet_m": {index_of(n) for n in raw["imagenet_m"] if n.startswith(PREFIX)}}


@pytest.fixture(scope="module")
def multilabel(data_dir: Path, multilabel_file: Path,
               tmp_path_factory: pytest.TempPathFactory) -> CompiledLabelSet:
    return compile_builtin("imagenet", "multilabel", data_dir=data_dir,
                           cache_dir=tmp_path_factory.mktemp("ml-cache"),
                           multilabel_file=multilabel_file)


@pytest.fixture(scope="module")
def imagenet_m(data_dir: Path, multilabel_file: Path) -> CompiledLabelSet:
    return compile_builtin("imagenet", "imagenet-m", data_dir=data_dir,
                           multilabel_file=multilabel_file)


# ---------------------------------------------------------------- multilabel (docs/metrics.md §5)


def test_it_includes_the_annotated_images_minus_the_problematic_ones(
    multilabel: CompiledLabelSet, expected: dict[str, Any], organism_example: int,
    object_example: int
) -> None:
    included = set(np.flatnonzero(multilabel.arrays["mask"]).tolist())
    assert included == expected["annotated"] - expected["problematic"]
    assert included == {0, 1, 2, 3, 4, 5, 6, 49_999, organism_example, object_example}
    assert multilabel.arrays["mask"].shape == (50_000,)


def test_it_accepts_correct_and_unclear_labels(
    multilabel: CompiledLabelSet, expected: dict[str, Any]
) -> None:
    keys = multilabel.arrays["accepted_keys"]
    assert keys.tolist() == sorted(set(keys.tolist()))
    assert decode(keys) == expected["accepted"]
    assert {(3, 836), (5, 357), (5, 359), (49_999, 999), (49_999, 0), (49_999, 1)} <= \
        decode(keys)


def test_it_keeps_the_wrong_labels(multilabel: CompiledLabelSet,
                                   expected: dict[str, Any]) -> None:
    keys = multilabel.arrays["wrong_keys"]
    assert keys.tolist() == sorted(set(keys.tolist()))
    assert decode(keys) == expected["wrong"]
    assert decode(keys) == {(0, 1), (0, 2), (2, 250), (7, 101), (49_999, 998)}


def test_it_skips_imagenet_v2_entries(multilabel: CompiledLabelSet,
                                      imagenet_m: CompiledLabelSet) -> None:
    # the V2 image's labels 3 and 4 appear for no validation image
    for labelset in (multilabel, imagenet_m):
        pairs = decode(labelset.arrays["accepted_keys"]) | decode(labelset.arrays["wrong_keys"])
        assert {label for _, label in pairs} & {3, 4} == set()


def test_it_skips_unknown_wordnet_ids_of_imagenet_v2_entries(
    data_dir: Path, class_info: list[dict[str, Any]]
) -> None:
    raw = {"initial_annots": {V2_NAME: {"correct": ["n99999999"]},
                              name(0): {"correct": [class_info[5]["wnid"]]}}}
    arrays, meta = build_multilabel_arrays(
        raw, original=np.zeros(50_000, dtype=np.int16),
        wnids=[c["wnid"] for c in class_info], imagenet_m=False)
    assert decode(arrays["accepted_keys"]) == {(0, 5)}
    assert meta["annotated"] == 1


def test_it_flags_organisms_by_the_original_label(
    multilabel: CompiledLabelSet, canonical_imagenet_labels: list[int], organism_example: int,
    object_example: int
) -> None:
    organism_set = set(ORGANISM_CLASSES.tolist())
    flags = multilabel.arrays["organism"]
    assert flags.shape == (50_000,)
    assert flags.tolist() == [label in organism_set for label in canonical_imagenet_labels]
    # annotated with an object class only, still an organism image; and the other way round
    assert bool(flags[organism_example]) is True
    assert bool(flags[object_example]) is False


def test_it_splits_410_organism_classes_from_590_object_classes(
    class_info: list[dict[str, Any]]
) -> None:
    classes = ORGANISM_CLASSES.tolist()
    assert len(classes) == 410
    assert len(set(classes)) == 410
    assert organism_mask().tolist() == [c in set(classes) for c in range(1000)]
    assert int((~organism_mask()).sum()) == 590
    # animals 0..397; people; two plants; the fungi. Seeds, fruits and artifacts are objects.
    names = {c: class_info[c]["synset"][0] for c in classes if c >= 398}
    assert names == {981: "ballplayer", 982: "groom", 983: "scuba diver", 985: "daisy",
                     986: "yellow lady's slipper", 991: "coral fungus", 992: "agaric",
                     993: "gyromitra", 994: "stinkhorn", 995: "earthstar",
                     996: "hen-of-the-woods", 997: "bolete"}
    assert set(range(398)) <= set(classes)
    assert {398, 984, 987, 988, 989, 990, 998, 999} & set(classes) == set()


def test_it_counts_the_multilabel_set(
    multilabel: CompiledLabelSet, expected: dict[str, Any],
    canonical_imagenet_labels: list[int]
) -> None:
    included = expected["annotated"] - expected["problematic"]
    organism_set = set(ORGANISM_CLASSES.tolist())
    assert multilabel.meta == {
        "annotated": len(expected["annotated"]),
        "problematic": len(expected["annotated"] & expected["problematic"]),
        "included": len(included),
        "organism_included": sum(1 for i in included
                                 if canonical_imagenet_labels[i] in organism_set),
    }
    assert (multilabel.meta["annotated"], multilabel.meta["problematic"]) == (11, 1)
    assert multilabel.summary["evaluated"] == len(included)


# ---------------------------------------------------------------- class collapse


def test_it_widens_the_accepted_set_by_the_collapse_mapping(
    multilabel: CompiledLabelSet, expected: dict[str, Any]
) -> None:
    collapsed = decode(multilabel.arrays["collapsed_keys"])
    assert collapsed == expected["collapsed"]
    assert (1, 248) in collapsed  # husky accepted: Eskimo dog also correct
    assert (2, 250) not in collapsed  # Eskimo dog accepted: husky is not
    assert (2, 249) not in collapsed
    assert (3, 837) in collapsed  # sunglass (unclear) -> sunglasses
    assert (4, 836) in collapsed  # sunglasses -> sunglass
    assert {(5, c) for c in (356, 357, 358, 359)} <= collapsed
    assert decode(multilabel.arrays["accepted_keys"]) <= collapsed


def test_it_has_exactly_the_collapse_pairs_of_the_spec() -> None:
    assert set(collapse_pairs()) == spec_collapse_pairs()
    assert len(collapse_pairs()) == 7 + 2 * 5 + 12


@pytest.mark.parametrize(
    ("accepted", "also_correct"),
    [
        (250, {248}), (249, {248}), (248, set()),
        (836, {837}), (837, {836}),
        (356, {357, 358, 359}), (357, {356, 358, 359}), (358, {356, 357, 359}),
        (359, {356, 357, 358}),
        (385, {101}), (386, {101}), (101, set()),
        (504, {968}), (968, set()), (482, {848}), (848, set()), (435, {876}), (876, set()),
        (638, {639}), (639, {638}), (657, {744}), (744, {657}), (620, {681}), (681, {620}),
        (664, {782}), (782, {664}), (0, set()),
    ],
)
def test_it_collapses_one_accepted_label(accepted: int, also_correct: set[int]) -> None:
    keys = collapse_keys(np.array([7 * 1000 + accepted], dtype=np.int64))
    assert decode(keys) == {(7, accepted)} | {(7, c) for c in also_correct}


# ---------------------------------------------------------------- ImageNet-M (docs/metrics.md §6)


def test_it_includes_exactly_the_listed_imagenet_m_images(
    imagenet_m: CompiledLabelSet, expected: dict[str, Any]
) -> None:
    included = set(np.flatnonzero(imagenet_m.arrays["mask"]).tolist())
    assert included == expected["imagenet_m"]
    assert included == {1, 3, 49_999}
    assert imagenet_m.meta == {"included": 3}
    # only the listed images' judgements: a change elsewhere leaves the version alone
    listed = expected["imagenet_m"]
    assert decode(imagenet_m.arrays["accepted_keys"]) == {
        (i, c) for i, c in expected["accepted"] if i in listed}
    assert decode(imagenet_m.arrays["wrong_keys"]) == {
        (i, c) for i, c in expected["wrong"] if i in listed}
    assert decode(imagenet_m.arrays["wrong_keys"]) == {(49_999, 998)}
    assert sorted(imagenet_m.arrays) == ["accepted_keys", "correct_keys", "mask",
                                         "unclear_keys", "wrong_keys"]
    assert (imagenet_m.family, imagenet_m.kind) == ("subset", "multi")


def test_it_keeps_the_imagenet_m_version_when_the_file_changes_elsewhere(
    data_dir: Path, raw: dict[str, Any], tmp_path: Path, wn: Any,
    imagenet_m: CompiledLabelSet, multilabel: CompiledLabelSet,
) -> None:
    changed = json.loads(json.dumps(raw))
    changed["initial_annots"][name(0)]["wrong"].append(wn(7))  # image 0 is not listed
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps(changed))

    def again(slug: str) -> CompiledLabelSet:
        return compile_builtin("imagenet", slug, data_dir=data_dir, multilabel_file=path)

    assert again("imagenet-m").content_hash == imagenet_m.content_hash
    assert again("multilabel").content_hash != multilabel.content_hash


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("judgement", ["correct", "wrong", "unclear"])
def test_it_names_an_unknown_wordnet_id(
    data_dir: Path, tmp_path: Path, class_info: list[dict[str, Any]], judgement: str
) -> None:
    raw = {"initial_annots": {name(0): {"correct": [class_info[0]["wnid"]]},
                              name(41): {judgement: ["n99999999"]}},
           "problematic_images": {}, "imagenet_m": []}
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BundleError) as excinfo:
        compile_builtin("imagenet", "multilabel", data_dir=data_dir, multilabel_file=path)
    assert (excinfo.value.code, excinfo.value.field, excinfo.value.message) == (
        "bad_file", "label_sets.multilabel.annotations",
        "not in the human_accuracy layout: multi-label file: unknown WordNet id 'n99999999' "
        "for ILSVRC2012_val_00000042.JPEG")


@pytest.mark.parametrize(
    "raw",
    [
        {"problematic_images": {}, "imagenet_m": []},
        {"initial_annotations": {}},
        [{"initial_annots": {}}],
    ],
)
@pytest.mark.parametrize("slug", ["multilabel", "imagenet-m"])
def test_it_rejects_a_file_without_initial_annots(
    data_dir: Path, tmp_path: Path, raw: Any, slug: str
) -> None:
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BundleError) as excinfo:
        compile_builtin("imagenet", slug, data_dir=data_dir, multilabel_file=path)
    # ImageNet-M reads the file of the multi-label set it is a subset of
    assert (excinfo.value.code, excinfo.value.field, excinfo.value.message) == (
        "bad_file", "label_sets.multilabel.annotations",
        "not in the human_accuracy layout: "
        "multi-label file has no 'initial_annots' (human_accuracy_v3.0.0 layout)")


def test_it_refuses_a_missing_multilabel_file(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(BundleError) as excinfo:
        compile_builtin("imagenet", "multilabel", data_dir=data_dir, multilabel_file=path)
    assert (excinfo.value.code, excinfo.value.file, excinfo.value.field) == (
        "missing_file", str(path), "label_sets.multilabel")
    assert excinfo.value.message == f"label set 'multilabel' lacks: {path}"


def test_it_reads_the_wnids_from_class_info(data_dir: Path,
                                            class_info: list[dict[str, Any]]) -> None:
    assert datasets.imagenet_wnids(data_dir) == tuple(c["wnid"] for c in class_info)
