"""Benchmarks as data: a manifest (TOML) plus the label files it names (docs/bundles.md).

    bundle = read_bundle(Path("benchmarks/cifar10.toml"))        # parse and check the manifest
    compiled = compile_bundle(bundle, data_dir=..., cache_dir=...)  # every label set, hashed

A `.zip` bundle is extracted safely first (`open_bundle`). Every refusal is a BundleError
with a code of `errors.CODES`, the file and the manifest field.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..families.vote_files import VoteFileDef
from .builders import MULTILABEL_SOURCE, BundleData, label_set_files
from .builtin import (
    BUILTIN_DIR,
    builtin_bundle,
    builtin_bundle_paths,
    builtin_slugs,
)
from .compiler import (
    compile_bundle,
    compile_bundle_label_set,
    label_set_identity,
    missing_sources,
)
from .errors import CODES, BundleError
from .manifest import parse_manifest, read_manifest
from .model import (
    DEFAULT_RELEASE,
    RELEASES,
    Bundle,
    ClassesDef,
    ExampleSetDef,
    LabelSetDef,
)
from .toml_limits import ManifestLimits
from .zipped import ZipLimits, extract_bundle

__all__ = [
    "BUILTIN_DIR", "CODES", "DEFAULT_RELEASE", "MULTILABEL_SOURCE", "RELEASES", "Bundle",
    "BundleData", "BundleError", "ClassesDef", "ExampleSetDef", "LabelSetDef", "ManifestLimits",
    "VoteFileDef", "ZipLimits",
    "builtin_bundle", "builtin_bundle_paths", "builtin_slugs", "compile_bundle",
    "compile_bundle_label_set", "extract_bundle", "label_set_files", "label_set_identity",
    "missing_sources", "open_bundle", "parse_manifest", "read_bundle", "read_manifest",
]


def read_bundle(path: Path, *, limits: ManifestLimits | None = None) -> Bundle:
    """A manifest file's bundle (for a .zip use `open_bundle`)."""
    return read_manifest(Path(path), limits=limits)


@contextmanager
def open_bundle(path: Path, *, limits: ZipLimits | None = None,
                manifest_limits: ManifestLimits | None = None) -> Iterator[Bundle]:
    """A manifest, or a .zip bundle extracted into a temporary folder that lives as long as
    the `with` block (its files are read from there)."""
    path = Path(path)
    if path.suffix.lower() != ".zip":
        yield read_manifest(path, limits=manifest_limits)
        return
    with tempfile.TemporaryDirectory(prefix="bundle-") as folder:
        yield read_manifest(extract_bundle(path, Path(folder), limits), limits=manifest_limits)
