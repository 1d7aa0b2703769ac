"""Tests for revisions against from-scratch builds, and export (docs/metrics.md §11)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.support import (
    apply_verdicts,
    compile_builtin,
    decode,
    export,
    real_set,
)
from workers.scoring import datasets, label_set_builders
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.predictions import Predictions
from workers.scoring.revisions import Verdict
from workers.scoring.scorer import score_label_set

PREFIX = "ILSVRC2012_val_"
V2_NAME = "some_v2_image.jpeg"


def name(index: int) -> str:
    return f"{PREFIX}{index + 1:08d}.JPEG"


# ---------------------------------------------------------------- from a file: builder,
# revision against a from-scratch build, export


@pytest.fixture(scope="module")
def wnids(data_dir: Path) -> tuple[str, ...]:
    return datasets.imagenet_wnids(data_dir)


def problem(reason: str) -> dict[str, str]:
    return {"reason": reason, "reviewer": "ludwig", "server_username": "becca"}


@pytest.fixture(scope="module")
def raw(wnids: tuple[str, ...]) -> dict[str, Any]:
    """A small file in exactly the human_accuracy_v3.0.0.json layout (unsorted lists)."""
    return {
        "initial_annots": {
            name(0): {"wrong": [wnids[2], wnids[1]], "correct": [wnids[65]]},
            name(1): {"correct": [wnids[250]]},
            name(2): {"unclear": [wnids[836]], "wrong": [wnids[5]]},
            name(3): {},
            name(4): {"correct": [wnids[100]]},
            name(49_999): {"correct": [wnids[1], wnids[0]], "unclear": [wnids[999]],
                           "wrong": [wnids[998]]},
            V2_NAME: {"correct": [wnids[3]], "wrong": [wnids[4]]},
        },
        "problematic_images": {name(4): problem("marked as problematic in the review server"),
                               V2_NAME: problem("marked as problematic in the review server")},
        "imagenet_m": [name(49_999), name(1), V2_NAME],
    }


Build = Callable[[dict[str, Any]], dict[str, CompiledLabelSet]]


@pytest.fixture(scope="module")
def build(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Build:
    """build(raw): the multilabel and imagenet-m sets compiled from a file holding `raw`."""
    folder = tmp_path_factory.mktemp("revisions")
    count = iter(range(1_000_000))

    def run(content: dict[str, Any]) -> dict[str, CompiledLabelSet]:
        path = folder / f"human_accuracy_{next(count)}.json"
        path.write_text(json.dumps(content, indent=1), encoding="utf-8")
        return {slug: compile_builtin("imagenet", slug, data_dir=data_dir, multilabel_file=path)
                for slug in ("multilabel", "imagenet-m")}

    return run


def with_verdicts(raw: dict[str, Any], verdicts: list[Verdict],
                  wnids: tuple[str, ...]) -> dict[str, Any]:
    """The file as it would read with the verdicts already in it (plain dict edits)."""
    out = copy.deepcopy(raw)
    for v in verdicts:
        entry = out["initial_annots"].setdefault(name(v.example), {})
        wnid = wnids[v.class_id]
        for judgement in ("correct", "wrong", "unclear"):
            if wnid in entry.get(judgement, []):
                entry[judgement].remove(wnid)
                if not entry[judgement]:
                    del entry[judgement]
        entry.setdefault(v.verdict, []).append(wnid)
        if v.problematic:
            out["problematic_images"][name(v.example)] = problem("flagged in review")
    return out


def normalised(raw: dict[str, Any]) -> dict[str, Any]:
    """The file minus ImageNetV2 entries, lists sorted, problematic reasons dropped."""
    val = [n for n in raw["initial_annots"] if n.startswith(PREFIX)]
    return {
        "initial_annots": {n: {j: sorted(v) for j, v in raw["initial_annots"][n].items()}
                           for n in val},
        "problematic_images": {n: {} for n in raw["problematic_images"] if n.startswith(PREFIX)},
        "imagenet_m": sorted(n for n in raw["imagenet_m"] if n.startswith(PREFIX)),
    }


@pytest.fixture(scope="module")
def built(build: Build, raw: dict[str, Any]) -> dict[str, CompiledLabelSet]:
    return build(raw)


def test_it_builds_correct_unclear_annotated_and_original_label_arrays(
    built: dict[str, CompiledLabelSet], canonical_imagenet_labels: list[int]
) -> None:
    for slug, labelset in built.items():
        a = labelset.arrays
        # ImageNet-M keeps only its listed images' (1 and 49,999) judgements
        listed = (lambda i: i in (1, 49_999)) if slug == "imagenet-m" else (lambda i: True)
        assert decode(a["correct_keys"]) == {p for p in {
            (0, 65), (1, 250), (4, 100), (49_999, 0), (49_999, 1)} if listed(p[0])}, slug
        assert decode(a["unclear_keys"]) == {p for p in {(2, 836), (49_999, 999)}
                                             if listed(p[0])}
        assert decode(a["wrong_keys"]) == {p for p in {(0, 1), (0, 2), (2, 5), (49_999, 998)}
                                           if listed(p[0])}
        assert a["accepted_keys"].tolist() == \
            np.union1d(a["correct_keys"], a["unclear_keys"]).tolist()
    annotated = built["multilabel"].arrays["annotated"]
    assert annotated.dtype == np.bool_
    assert np.flatnonzero(annotated).tolist() == [0, 1, 2, 3, 4, 49_999]
    assert "annotated" not in built["imagenet-m"].arrays
    # every image's original label, the class the class-mean accuracy groups it under
    original = built["multilabel"].arrays["original_labels"]
    assert original.dtype == np.int16
    assert original.tolist() == canonical_imagenet_labels
    assert "original_labels" not in built["imagenet-m"].arrays
    assert label_set_builders.BUILDER_VERSION == 4


SCENARIOS = {
    "correct on a novel pair": [Verdict(1, 248, "correct")],
    "wrong on an accepted pair": [Verdict(1, 250, "wrong")],
    "unclear on a wrong pair": [Verdict(0, 1, "unclear")],
    "wrong replacing correct on an unclear pair": [Verdict(2, 836, "correct"),
                                                   Verdict(2, 836, "wrong")],
    "problematic": [Verdict(49_999, 7, "wrong", problematic=True)],
    "an unannotated image": [Verdict(10, 10, "correct")],
    "a problematic image stays out": [Verdict(4, 100, "wrong")],
    "several images": [Verdict(3, 600, "unclear"), Verdict(0, 65, "wrong"),
                       Verdict(0, 64, "correct", problematic=True)],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_it_gives_a_revision_the_hash_and_scores_of_a_build_from_scratch(
    build: Build, built: dict[str, CompiledLabelSet], raw: dict[str, Any],
    wnids: tuple[str, ...], scenario: str
) -> None:
    verdicts = SCENARIOS[scenario]
    original = built
    scratch = build(with_verdicts(raw, verdicts, wnids))
    top1 = np.zeros((50_000, 1), dtype=np.int32)
    top1[[0, 1, 2, 3, 4, 10, 49_999], 0] = [1, 248, 836, 600, 100, 10, 7]
    for slug in ("multilabel", "imagenet-m"):
        revised = apply_verdicts(original[slug], verdicts)
        assert revised.content_hash != original[slug].content_hash or slug == "imagenet-m"
        assert revised.content_hash == scratch[slug].content_hash, slug
        assert sorted(revised.arrays) == sorted(scratch[slug].arrays)
        for array_name, array in scratch[slug].arrays.items():
            assert revised.arrays[array_name].dtype == array.dtype, array_name
            assert revised.arrays[array_name].tolist() == array.tolist(), array_name
        assert {k: v for k, v in revised.meta.items() if k != "revision"} == scratch[slug].meta
        preds = Predictions(top1, None, None, None)
        record, novel = score_label_set(revised, preds)
        record_scratch, novel_scratch = score_label_set(scratch[slug], preds)
        assert record == record_scratch
        if novel is not None and novel_scratch is not None:
            assert novel.examples.tolist() == novel_scratch.examples.tolist()
            assert novel.classes.tolist() == novel_scratch.classes.tolist()
        # and the export of the revision is the file with the verdicts in it
    exported = export(apply_verdicts(original["multilabel"], verdicts),
                      apply_verdicts(original["imagenet-m"], verdicts), wnids)
    assert exported == normalised(with_verdicts(raw, verdicts, wnids))


def test_it_exports_the_multilabel_file_it_was_built_from(
    build: Build, built: dict[str, CompiledLabelSet], raw: dict[str, Any],
    wnids: tuple[str, ...]
) -> None:
    exported = export(built["multilabel"], built["imagenet-m"], wnids)
    assert exported == normalised(raw)
    assert exported["initial_annots"][name(0)] == {"correct": [wnids[65]],
                                                   "wrong": sorted([wnids[1], wnids[2]])}
    assert exported["initial_annots"][name(3)] == {}  # annotated, every key absent
    assert exported["problematic_images"] == {name(4): {}}
    assert exported["imagenet_m"] == [name(1), name(49_999)]
    # the export builds the same label sets again
    rebuilt = build(exported)
    for slug in ("multilabel", "imagenet-m"):
        assert rebuilt[slug].content_hash == built[slug].content_hash
    without_m = export(built["multilabel"], None, wnids)
    assert without_m == {k: v for k, v in exported.items() if k != "imagenet_m"}


def test_it_refuses_to_export_a_judgement_only_imagenet_m_has(
    built: dict[str, CompiledLabelSet], wnids: tuple[str, ...]
) -> None:
    revised_m = apply_verdicts(built["imagenet-m"], [Verdict(1, 248, "correct")])
    with pytest.raises(ValueError) as excinfo:
        export(built["multilabel"], revised_m, wnids)
    assert str(excinfo.value) == ("label set 'imagenet-m' has a judgement that 'multilabel' "
                                  "lacks on ILSVRC2012_val_00000002.JPEG (correct_keys)")
    moved_m = apply_verdicts(built["imagenet-m"], [Verdict(49_999, 998, "unclear")])
    with pytest.raises(ValueError) as excinfo:
        export(built["multilabel"], moved_m, wnids)
    assert str(excinfo.value) == ("label set 'imagenet-m' has a judgement that 'multilabel' "
                                  "lacks on ILSVRC2012_val_00050000.JPEG (unclear_keys)")
    # review revises multilabel only: its newer verdicts on ImageNet-M images are exported
    revised_ml = apply_verdicts(built["multilabel"], [Verdict(1, 248, "correct")])
    exported = export(revised_ml, built["imagenet-m"], wnids)
    assert exported["initial_annots"][name(1)] == {"correct": sorted([wnids[248], wnids[250]])}
    assert exported["imagenet_m"] == [name(1), name(49_999)]
    with pytest.raises(ValueError) as excinfo:
        export(built["multilabel"], None, wnids[:999])
    assert str(excinfo.value) == "export_multilabel needs 1000 wnids, got 999"


def test_it_exports_the_real_labels_as_real_json(
    compiled: Callable[[str, str], CompiledLabelSet], real_lists: list[list[int]]
) -> None:
    exported = export(compiled("imagenet", "real"))
    assert len(exported) == 50_000
    assert exported == [sorted(labels) for labels in real_lists]


def test_it_exports_an_empty_list_where_real_excludes_an_example() -> None:
    assert export(real_set()) == [[1], [2, 3], [], [4], []]
    revised = apply_verdicts(real_set(), [Verdict(1, 0, "correct", problematic=True),
                                          Verdict(4, 9, "unclear")])
    assert export(revised) == [[1], [], [], [4], []]
