"""A small synthetic bundle in a folder, and a TOML writer, for the bundle tests.

The bundle (files = "bundle") has three classes, a main example set of six named
`toy_001.png` ... and a new test set of four; its label sets cover every kind except the
ImageNet-only human_accuracy layout: original, validated (thresholds 3 and 4, ids by file
number, a vote key meaning no label), ReaL layout, soft (counts) and a new test set.
"""

from __future__ import annotations

import copy
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

LABELS = [0, 1, 2, 0, 1, 2]
VOTES = [  # ids are file numbers (example index + 1)
    {"id": 2, "given_original_label": 1, "our_guessed_label": 2,
     "mturk": {"given": 0, "guessed": 4, "both": 0, "neither": 0, "skip": 1}},  # correctable
    {"id": 4, "given_original_label": 0, "our_guessed_label": 1,
     "mturk": {"given": 1, "guessed": 0, "both": 3, "neither": 0, "skip": 1}},  # multi-label
    {"id": 5, "given_original_label": 1, "our_guessed_label": 0,
     "mturk": {"given": 3, "guessed": 2, "both": 0, "neither": 0, "skip": 0}},  # non-error
]
MANIFEST: dict[str, Any] = {
    "schema": 1,
    "slug": "toy",
    "name": "Toy benchmark",
    "description": "Six examples, three classes.",
    "modality": "image",
    "files": "bundle",
    "cites": ["toy2024"],
    "headline": "original",
    "reviewable": ["real"],
    "citations": {"toy2024": "Someone. A toy benchmark. 2024."},
    "classes": {"count": 3, "source": "inline", "names": ["cat", "dog", "fox"]},
    "example_sets": [
        {"slug": "toy-test", "name": "Toy test", "size": 6, "naming": "pattern",
         "pattern": "toy_{number:03d}.png", "first_number": 1},
        {"slug": "toy-new", "name": "Toy new", "size": 4},
    ],
    "label_sets": [
        {"slug": "original", "kind": "single", "name": "Original", "labels": "labels.npy"},
        {"slug": "corrected", "kind": "validated", "name": "Corrected (t={threshold})",
         "thresholds": [3, 4], "citation": "toy2024",
         "votes": {"file": "votes.json", "ids": "number",
                   "vocabulary": {"given": "original", "guessed": "guessed", "both": "both",
                                  "neither": "neither", "skip": "none"}}},
        {"slug": "real", "kind": "multi", "layout": "real", "name": "ReaL-like",
         "accepted": "real.json", "judged": "judged.npz"},
        {"slug": "humans", "kind": "soft", "name": "Human votes", "counts": "counts.npy"},
        {"slug": "new", "kind": "new_test_set", "example_set": "toy-new", "name": "New",
         "labels": "new_labels.npy"},
    ],
}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_value(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_dumps(document: dict[str, Any]) -> str:
    """TOML for a document of TOML values (every table inline, every key quoted)."""
    return "".join(f"{toml_value(str(k))} = {toml_value(v)}\n" for k, v in document.items())


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def data_files() -> dict[str, bytes]:
    judged = io.BytesIO()
    # (name, class) pairs the raters judged, for examples 0 and 1; 2..5 were never rated
    np.savez(judged, info=np.array([["toy_001.png", "0"], ["toy_001.png", "1"],
                                    ["toy_002.png", "2"]]))
    counts = np.array([[5, 0, 0], [1, 4, 0], [0, 0, 5], [3, 2, 0], [0, 5, 0], [1, 1, 3]])
    return {
        "labels.npy": npy_bytes(np.array(LABELS, dtype=np.uint16)),
        "votes.json": json.dumps(VOTES).encode(),
        "real.json": json.dumps([[0], [2], [], [0], [1], [2, 1]]).encode(),
        "judged.npz": judged.getvalue(),
        "counts.npy": npy_bytes(counts),
        "new_labels.npy": npy_bytes(np.array([2, 1, 0, 0], dtype=np.int64)),
    }


def manifest() -> dict[str, Any]:
    return copy.deepcopy(MANIFEST)


def hidden_split_bundle(secret: list[int], private: list[int]
                        ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The toy manifest and files with one more label set, `secret`: hidden, released exactly,
    its labels `secret` and its private part the examples `private` (docs/bundles.md, hidden
    label sets)."""
    document = manifest()
    document["label_sets"].append({"slug": "secret", "kind": "single", "name": "Secret",
                                   "labels": "secret.npy", "hidden": True, "release": "exact",
                                   "split": {"private": "private.json"}})
    files = {**data_files(), "secret.npy": npy_bytes(np.array(secret, dtype=np.int64)),
             "private.json": json.dumps(private).encode()}
    return document, files


def write_bundle(folder: Path, document: dict[str, Any] | None = None,
                 files: dict[str, bytes] | None = None) -> Path:
    """The bundle written into `folder`; returns the manifest's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in (data_files() if files is None else files).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content)
    path = folder / "toy.toml"
    path.write_text(toml_dumps(manifest() if document is None else document))
    return path


def zip_bytes(entries: dict[str, bytes], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, content in entries.items():
            archive.writestr(zipfile.ZipInfo(name), content, compress_type=compression)
    return buffer.getvalue()


def bundle_entries(document: dict[str, Any] | None = None) -> dict[str, bytes]:
    """The bundle's files as zip entries, under one top folder."""
    entries = {f"toy/{n}": c for n, c in data_files().items()}
    entries["toy/toy.toml"] = toml_dumps(manifest() if document is None else document).encode()
    return entries
