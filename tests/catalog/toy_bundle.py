"""A small synthetic benchmark bundle for the upload tests: three classes, one example set of
twelve examples, its original labels and labels corrected from a vote file (threshold 3),
zipped under one top folder, as a maintainer would upload it (docs/bundles.md §10), and
`process`, the worker's task that adds an uploaded bundle, run in the test's process.

Its scores are computed in the tests by hand from LABELS and VOTES' outcome, written out
below as CORRECTED and UNKNOWN (docs/metrics.md §3.1-3.2), not by the scoring core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.workers.scoring.bundles.bundle_files import npy_bytes, toml_dumps, zip_bytes

SLUG = "toy3"
EXAMPLE_SET = "toy3-test"
CLASSES = ["ant", "bee", "cow"]
LABELS = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
VOTES = [  # ids are example indices; five answers each
    {"id": 1, "given_original_label": 1, "our_guessed_label": 2,
     "mturk": {"given": 0, "guessed": 4, "both": 0, "neither": 1}},   # correctable -> 2
    {"id": 4, "given_original_label": 1, "our_guessed_label": 0,
     "mturk": {"given": 1, "guessed": 0, "both": 3, "neither": 1}},   # multi-label
    {"id": 6, "given_original_label": 0, "our_guessed_label": 2,
     "mturk": {"given": 3, "guessed": 2, "both": 0, "neither": 0}},   # non-error
    {"id": 8, "given_original_label": 2, "our_guessed_label": 1,
     "mturk": {"given": 1, "guessed": 2, "both": 1, "neither": 1}},   # non-agreement
    {"id": 10, "given_original_label": 1, "our_guessed_label": 0,
     "mturk": {"given": 0, "guessed": 5, "both": 0, "neither": 0}},   # correctable -> 0
]
# What the votes say, by hand: the corrected label of each correctable example, and the
# examples with no single right label (multi-label, non-agreement), left out of P.
CORRECTED = {1: 2, 10: 0}
UNKNOWN = {4, 8}

MANIFEST: dict[str, Any] = {
    "schema": 1,
    "slug": SLUG,
    "name": "Toy three",
    "description": "Twelve examples of three classes, two labels corrected by five votes.",
    "modality": "text",
    "files": "bundle",
    "classes": {"count": 3, "source": "inline", "names": CLASSES},
    "example_sets": [{"slug": EXAMPLE_SET, "name": "Toy three test", "size": 12}],
    "label_sets": [
        {"slug": "original", "kind": "single", "name": "Original labels",
         "labels": "labels.npy"},
        {"slug": "corrected", "kind": "validated", "name": "Corrected labels",
         "thresholds": [3],
         "votes": {"file": "votes.json",
                   "vocabulary": {"given": "original", "guessed": "guessed", "both": "both",
                                  "neither": "neither"}}},
    ],
}


def toy_files(**replaced: bytes) -> dict[str, bytes]:
    """The bundle's files by name (inside its folder); `replaced` swaps some contents."""
    files = {"toy3.toml": toml_dumps(MANIFEST).encode(),
             "labels.npy": npy_bytes(np.array(LABELS, dtype=np.int64)),
             "votes.json": json.dumps(VOTES).encode()}
    files.update(replaced)
    return files


def toy_zip(folder: Path, name: str = "toy3.zip", *, extra: dict[str, bytes] | None = None,
            **replaced: bytes) -> Path:
    """The bundle written as files in `folder`/toy3, then zipped (entries under `toy3/`,
    plus `extra` entries named as given) into `folder`/`name`."""
    source = folder / "toy3"
    source.mkdir(parents=True, exist_ok=True)
    for file_name, content in toy_files(**replaced).items():
        (source / file_name).write_bytes(content)
    entries = {f"toy3/{p.name}": p.read_bytes() for p in sorted(source.iterdir())}
    entries.update(extra or {})
    path = folder / name
    path.write_bytes(zip_bytes(entries))
    return path


def process(upload_id: int) -> str:
    """The worker's task, run in this process (eagerly, with a task id)."""
    from leaderboard.tasks.cpu import add_bundle_upload

    outcome: str = add_bundle_upload.apply(args=(upload_id,)).get()
    return outcome
