"""Label-set builders and the compiled, hashed form every metric reads.

A compiled label set is a handful of NumPy arrays plus a little JSON metadata. Multi-label
sets store (example, class) pairs as sorted int64 keys `example * num_classes + class`, so
membership for 50,000 predictions is one `searchsorted`. The content hash covers exactly
what scoring reads, so equal hashes mean equal scores; compiled sets are cached on disk as
.npz (never pickled) under a fingerprint of their source files.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import datasets
from .compact import SeekableReader

# The generation of the builders' output that upgrades.py names (4: multilabel keeps each
# image's original label). The compile cache does not read it: its key hashes the builders'
# code (bundles/compiler.py).
BUILDER_VERSION = 4

# Two families were renamed from the datasets that first had them to what they are (2026-11):
# a compiled set stores its family's current name, but its content hash keeps the name it
# was first hashed under, so versions stored before (and their scores) keep their hashes,
# and a compiled file written before reads back under the new name.
FAMILY_RENAMES = {"cifar10h": "soft", "imagenet_m": "subset"}
_HASHED_AS = {new: old for old, new in FAMILY_RENAMES.items()}

# Meta keys that say how a version came about rather than what it holds (revisions.py puts
# the settled verdicts of a revision there). They are left out of the content hash, so a
# revision hashes like a from-scratch build of the same labels, and like its parent when
# the verdicts changed nothing.
UNHASHED_META_KEYS = frozenset({"revision"})

VOTE_CATEGORIES = ("non_error", "correctable", "multi_label", "neither", "non_agreement")


@dataclass(frozen=True)
class CompiledLabelSet:
    slug: str
    benchmark: str
    example_set: str
    kind: str
    family: str
    num_classes: int
    size: int
    arrays: Mapping[str, np.ndarray]
    meta: Mapping[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    @property
    def summary(self) -> dict[str, Any]:
        """JSON-able facts for people: sizes and counts (the meta plus the evaluated count)."""
        out = dict(self.meta)
        out["evaluated"] = int(evaluated_mask(self).sum())
        return out


def content_hash(
    *,
    family: str,
    kind: str,
    num_classes: int,
    size: int,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
) -> str:
    digest = hashlib.sha256()
    header = {
        "family": _HASHED_AS.get(family, family),
        "kind": kind,
        "num_classes": num_classes,
        "size": size,
        "meta": {k: v for k, v in meta.items() if k not in UNHASHED_META_KEYS},
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"\0{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def make_compiled(
    fields: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
) -> CompiledLabelSet:
    """Freeze arrays (read-only) and compute the content hash. `fields`: slug, benchmark,
    example_set, kind, family, num_classes, size."""
    fields = dict(fields)
    fields["family"] = FAMILY_RENAMES.get(fields["family"], fields["family"])
    frozen = {}
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        array.setflags(write=False)
        frozen[name] = array
    meta = json.loads(json.dumps(meta))  # a deep, JSON-clean copy
    digest = content_hash(
        family=fields["family"],
        kind=fields["kind"],
        num_classes=fields["num_classes"],
        size=fields["size"],
        arrays=frozen,
        meta=meta,
    )
    return CompiledLabelSet(arrays=frozen, meta=meta, content_hash=digest, **fields)


# ---------------------------------------------------------------- builders


def corrected_categories(votes: Mapping[str, int], threshold: int) -> str:
    """docs/metrics.md §3: the category of one flagged example from its 5 votes (missing key
    = 0)."""
    if votes.get("given", 0) >= 3:
        return "non_error"
    if votes.get("guessed", 0) >= threshold:
        return "correctable"
    if votes.get("both", 0) >= threshold:
        return "multi_label"
    if votes.get("neither", 0) >= threshold:
        return "neither"
    return "non_agreement"


def build_corrected(
    original: np.ndarray, records: list[datasets.MturkRecord], threshold: int
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    if not 3 <= threshold <= 5:
        raise ValueError(f"agreement threshold must be 3, 4 or 5, got {threshold}")
    corrected = original.copy()
    correctable = np.zeros(original.shape[0], dtype=bool)
    unknown = np.zeros(original.shape[0], dtype=bool)
    counts = dict.fromkeys(VOTE_CATEGORIES, 0)
    for record in records:
        if record.given != original[record.index]:
            raise datasets.DataError(
                f"vote file disagrees with the original label of example {record.index}: "
                f"{record.given} vs {original[record.index]} (misaligned order?)"
            )
        category = corrected_categories(record.votes, threshold)
        counts[category] += 1
        if category == "correctable":
            correctable[record.index] = True
            corrected[record.index] = record.guessed
        elif category != "non_error":
            unknown[record.index] = True
    arrays = {
        "labels": original,
        "corrected_labels": corrected,
        "pruned": ~unknown,
        "correctable": correctable,
    }
    meta = {
        "threshold": threshold,
        "flagged": len(records),
        "counts": counts,
        "pruned_size": int((~unknown).sum()),
        "correctable_size": int(correctable.sum()),
    }
    return arrays, meta


def pair_keys(examples: np.ndarray, classes: np.ndarray, num_classes: int) -> np.ndarray:
    """Sorted, unique int64 keys of (example, class) pairs."""
    keys = np.asarray(examples, dtype=np.int64) * num_classes + np.asarray(classes, dtype=np.int64)
    return np.unique(keys)


def real_arrays(*, accepted: np.ndarray, rated: np.ndarray, rated_examples: np.ndarray,
                original: np.ndarray, num_classes: int
                ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A ReaL-layout label set from its accepted and rated (example, class) pair keys
    (docs/metrics.md §4); shared by the built-in ImageNet builder and bundles."""
    n, c = len(original), num_classes
    lengths = np.bincount(accepted // c, minlength=n)
    # A rated pair the raters did not accept was judged wrong. Unrated images had only
    # their original label judged; it is accepted for all of them, so adds nothing wrong.
    unrated = np.ones(n, dtype=bool)
    unrated[rated_examples] = False
    judged_original = pair_keys(np.flatnonzero(unrated), original[unrated], c)
    judged = np.union1d(rated, judged_original)
    wrong = np.setdiff1d(judged, accepted, assume_unique=True)
    arrays = {"mask": lengths > 0, "accepted_keys": accepted, "wrong_keys": wrong}
    meta = {
        "included": int((lengths > 0).sum()),
        "excluded": int((lengths == 0).sum()),
        "rated_images": int((~unrated).sum()),
        "accepted_pairs": int(accepted.size),
        "wrong_pairs": int(wrong.size),
    }
    return arrays, meta


# ---------------------------------------------------------------- files


def compiled_bytes(compiled: CompiledLabelSet) -> bytes:
    """The set as an uncompressed .npz; metadata goes in as JSON bytes, not pickles."""
    header = {
        "slug": compiled.slug,
        "benchmark": compiled.benchmark,
        # "image_set": the header's key since the first compiled files (kept: files on disk
        # and published versions carry it)
        "image_set": compiled.example_set,
        "kind": compiled.kind,
        "family": compiled.family,
        "num_classes": compiled.num_classes,
        "size": compiled.size,
        "meta": compiled.meta,
        "content_hash": compiled.content_hash,
    }
    payload = dict(compiled.arrays)
    payload["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **payload)  # type: ignore[arg-type]
    return buffer.getvalue()


def save_compiled(compiled: CompiledLabelSet, path: Path) -> None:
    """Write atomically (a reader never sees half a file) as `compiled_bytes`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(compiled_bytes(compiled))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_compiled(source: Path | SeekableReader, *, verify: bool = False) -> CompiledLabelSet:
    """Read a set written by `compiled_bytes`, from a path or an open binary file."""
    with np.load(source, allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files if name != "__header__"}
        header = json.loads(z["__header__"].tobytes())
    stored_hash = header.pop("content_hash")
    meta = header.pop("meta")
    header["example_set"] = header.pop("image_set")  # its key in the file (compiled_bytes)
    header["family"] = FAMILY_RENAMES.get(header["family"], header["family"])
    if verify:
        compiled = make_compiled(header, arrays, meta)
        if compiled.content_hash != stored_hash:
            shown = source if isinstance(source, Path) else getattr(source, "name", source)
            raise datasets.DataError(f"{shown}: content does not match its hash")
        return compiled
    for array in arrays.values():
        array.setflags(write=False)
    return CompiledLabelSet(arrays=arrays, meta=meta, content_hash=stored_hash, **header)


def evaluated_mask(compiled: CompiledLabelSet) -> np.ndarray:
    """Which examples a label set scores (all, pruned set P, or its inclusion mask)."""
    arrays = compiled.arrays
    if "pruned" in arrays:
        return arrays["pruned"]
    if "mask" in arrays:
        return arrays["mask"]
    return np.ones(compiled.size, dtype=bool)
