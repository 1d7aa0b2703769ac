"""Compiled label sets made by an older builder, brought up to what scoring reads now.

A stored version is immutable and named by its content hash, so an upgrade is a new version:
the parent's labels unchanged, plus the arrays the current builder adds. Its hash is exactly
that of a from-scratch build of the same labels (the meta's `revision` is not hashed), so
importing the same source file later finds it unchanged.

The one upgrade so far: multi-label sets built before BUILDER_VERSION 4 lack
`original_labels`, the class each image is grouped under in the class-mean accuracy
(docs/metrics.md §5.1). The labels come from the data directory (the caller reads them); the
set's own `organism` flags, derived from the same labels when it was built, must agree.
"""

from __future__ import annotations

import numpy as np

from .label_set_builders import CompiledLabelSet, make_compiled
from .multilabel_annotations import organism_mask, original_labels_array


def compiled_upgrade(ls: CompiledLabelSet, original_labels: np.ndarray) -> CompiledLabelSet:
    """A multi-label set with its `original_labels` added (the multilabel family's upgrade);
    a ValueError when it has them, or when the labels given do not fit it."""
    missing = ["original_labels"]
    if "original_labels" in ls.arrays:
        raise ValueError(f"label set {ls.slug!r} needs no upgrade")
    labels = original_labels_array(original_labels)
    if not np.array_equal(organism_mask()[labels], ls.arrays["organism"]):
        raise ValueError(f"label set {ls.slug!r}: the original labels given do not match its "
                         "organism flags (another label order?)")
    meta = {**ls.meta, "revision": {"added_arrays": missing}}
    fields = {"slug": ls.slug, "benchmark": ls.benchmark, "example_set": ls.example_set,
              "kind": ls.kind, "family": ls.family, "num_classes": ls.num_classes,
              "size": ls.size}
    return make_compiled(fields, {**ls.arrays, "original_labels": labels}, meta)
