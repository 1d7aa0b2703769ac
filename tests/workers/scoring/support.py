"""Plain helpers and constants shared by several scoring test modules (fixtures: conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workers.scoring.bundles import BundleData, builtin_bundle, compile_bundle_label_set
from workers.scoring.datasets import MturkRecord
from workers.scoring.families.registry import family_named
from workers.scoring.label_set_builders import CompiledLabelSet, build_corrected, make_compiled
from workers.scoring.predictions import Predictions
from workers.scoring.revisions import Verdict
from workers.scoring.stats import clopper_pearson

# ---------------------------------------------------------------- real data files


def load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


# ---------------------------------------------------------------- prediction files


def write_file(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def save_npy(tmp_path: Path, array: np.ndarray, name: str = "preds.npy") -> Path:
    path = tmp_path / name
    np.save(path, array)
    return path


IDS_4x3 = np.array([[3, 1, 2], [0, 9, 5], [7, 0, 1], [2, 3, 4]])


# ---------------------------------------------------------------- scores


def ids(top1: np.ndarray | list[int]) -> Predictions:
    return Predictions(np.asarray(top1, dtype=np.int32).reshape(-1, 1), None, None, None)


def assert_counts(record: dict, correct: int, total: int) -> None:
    assert (record["correct"], record["total"]) == (correct, total)
    assert record["accuracy"] == correct / total
    assert (record["ci_low"], record["ci_high"]) == clopper_pearson(correct, total)


# ---------------------------------------------------------------- label sets

Compiled = Callable[[str, str], CompiledLabelSet]


def compile_builtin(benchmark: str, slug: str, *, data_dir: Path, cache_dir: Path | None = None,
                    multilabel_file: Path | None = None) -> CompiledLabelSet:
    """A built-in bundle's label set (benchmarks/<benchmark>.toml) compiled from the bundle;
    `multilabel_file` is the setting the multi-label sets of ImageNet read."""
    data = BundleData(builtin_bundle(benchmark), data_dir=data_dir,
                      sources={"multilabel_file": multilabel_file})
    return compile_bundle_label_set(data, slug, cache_dir=cache_dir)

SIZES = {"imagenet": 50_000, "cifar10": 10_000, "mnist": 10_000}

Pairs = set[tuple[int, int]]


def keys(pairs: Pairs | list[tuple[int, int]], num_classes: int = 1000) -> np.ndarray:
    return np.array(sorted({e * num_classes + c for e, c in pairs}), dtype=np.int64)


def decode(array: np.ndarray, num_classes: int = 1000) -> Pairs:
    return {(k // num_classes, k % num_classes) for k in array.tolist()}


def fields(family: str, size: int, num_classes: int, kind: str = "multi",
           slug: str | None = None) -> dict[str, Any]:
    return {"slug": slug or family.replace("_", "-"), "benchmark": "imagenet",
            "example_set": "imagenet-val", "kind": kind, "family": family,
            "num_classes": num_classes, "size": size}


def snapshot(ls: CompiledLabelSet) -> dict[str, Any]:
    return {"arrays": {n: a.tolist() for n, a in ls.arrays.items()},
            "meta": json.loads(json.dumps(ls.meta)), "hash": ls.content_hash}


def real_set() -> CompiledLabelSet:
    """5 examples, 10 classes; the lists of examples 2 and 4 are empty."""
    arrays = {"mask": np.array([True, True, False, True, False]),
              "accepted_keys": keys({(0, 1), (1, 2), (1, 3), (3, 4)}, 10),
              "wrong_keys": keys({(0, 2)}, 10)}
    meta = {"included": 3, "excluded": 2, "rated_images": 2, "accepted_pairs": 4,
            "wrong_pairs": 1}
    return make_compiled(fields("real", 5, 10), arrays, meta)


def corrected_set(threshold: int) -> CompiledLabelSet:
    """6 examples, labels 0..5; example 1 is correctable (to 7), example 3 multi-label."""
    records = [MturkRecord(1, 1, 7, {"guessed": 5}), MturkRecord(3, 3, 8, {"both": 5})]
    arrays, meta = build_corrected(np.arange(6, dtype=np.int16), records, threshold)
    return make_compiled(fields("corrected", 6, 10, "single"), arrays, meta)


def apply_verdicts(parent: CompiledLabelSet, verdicts: list[Verdict]) -> CompiledLabelSet:
    """The next version after settled verdicts, through the parent's family."""
    apply = family_named(parent.family).apply_verdicts
    assert apply is not None, f"family {parent.family!r} is not reviewable"
    return apply(parent, verdicts)


def export(labels: CompiledLabelSet, partner: CompiledLabelSet | None = None,
           class_keys: Sequence[str] = ()) -> Any:
    """A version in its source file's layout, through its family (`partner`: the current set
    of the family its `export_with` names)."""
    write = family_named(labels.family).export
    assert write is not None, f"family {labels.family!r} has no export"
    return write(labels, partner, class_keys)


# docs/metrics.md §5.2, transcribed: (accepted label, prediction also correct)
SPEC_ONE_WAY = [(250, 248), (249, 248), (385, 101), (386, 101), (504, 968), (482, 848),
                (435, 876)]
SPEC_BOTH_WAYS = [(836, 837), (638, 639), (657, 744), (620, 681), (664, 782)]
SPEC_GROUP = [356, 357, 358, 359]


def spec_collapse_pairs() -> set[tuple[int, int]]:
    pairs = set(SPEC_ONE_WAY)
    for a, b in SPEC_BOTH_WAYS:
        pairs |= {(a, b), (b, a)}
    pairs |= {(a, b) for a in SPEC_GROUP for b in SPEC_GROUP if a != b}
    return pairs


def mturk_records(path: Path, *, one_based: bool) -> list[MturkRecord]:
    """A cleanlab human-validation file read directly (not through a bundle's vote reader), for
    checks independent of the server's reading; `id` is a 1-based file number for ImageNet."""
    return [MturkRecord(int(entry["id"]) - (1 if one_based else 0),
                        int(entry["given_original_label"]), int(entry["our_guessed_label"]),
                        {key: int(value) for key, value in entry["mturk"].items()})
            for entry in json.loads(Path(path).read_text())]

