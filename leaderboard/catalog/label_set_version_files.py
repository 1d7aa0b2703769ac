"""Compiled label-set versions, by content hash, for the workers.

Each version's compiled labels are stored once, as `labelsets/<sha256>.npz` in the default
storage (leaderboard/common/storage.py): version 1 of a label set when its bundle is loaded
(`load_benchmarks`, `benchmark_add`; a built-in benchmark's is compiled again from its bundle
and the data directory should the file be gone), later versions (review decisions, imports)
before their row is created. So a process
that learns a hash from the database finds a complete file. A worker keeps the ones it has
used in memory and, when the storage has no local files (S3: worker hosts share no disk), a
copy under EVALSERVER_CACHE_DIR/labelsets/ for its other processes and its restarts: a file
named by its content never goes stale.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.common.storage import stored_copy
from workers.scoring import label_set_builders
from workers.scoring.bundles import (
    MULTILABEL_SOURCE,
    BundleData,
    BundleError,
    builtin_bundle,
    builtin_slugs,
    compile_bundle_label_set,
)
from workers.scoring.label_set_builders import CompiledLabelSet


class LabelStoreError(RuntimeError):
    """A version's compiled labels cannot be found or rebuilt."""


def version_file_name(content_hash: str) -> str:
    """The version's name in the default storage."""
    return f"labelsets/{content_hash}.npz"


def compiled_store(compiled: CompiledLabelSet) -> str:
    """Store the compiled labels under their content hash unless they are there; the name."""
    name = version_file_name(compiled.content_hash)
    compiled_store_new(compiled)
    return name


def compiled_store_new(compiled: CompiledLabelSet) -> str | None:
    """compiled_store; the name when this call stored the file, None when it was there.

    Same hash, same labels: when a concurrent writer got there first, the storage has saved
    this copy under another name, which is removed."""
    name = version_file_name(compiled.content_hash)
    if default_storage.exists(name):
        return None
    saved = default_storage.save(name, ContentFile(label_set_builders.compiled_bytes(compiled)))
    if saved != name:
        default_storage.delete(saved)
    return name


def compiled_unstore(names: Iterable[str]) -> None:
    """Remove stored files whose version rows were not written after all (a refused bundle
    leaves nothing behind: a hidden label set's labels never stay on a refusal, docs/metrics.md
    §17), unless a version row names the hash by now."""
    for name in names:
        content_hash = name.removeprefix("labelsets/").removesuffix(".npz")
        if not LabelSetVersion.objects.filter(content_hash=content_hash).exists():
            default_storage.delete(name)


def _local_copy(name: str) -> Path | None:
    """The stored file on this host's disk: the storage's own when it has local files, else
    a copy in the cache directory, fetched in parts and renamed into place whole (another
    process may be fetching the same); None when the storage does not have it."""
    try:
        return Path(default_storage.path(name))
    except NotImplementedError:
        pass
    cached = Path(settings.EVALSERVER_CACHE_DIR) / name
    if cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.part")
    try:
        with open(partial, "wb") as target:
            # one GET, no HEAD before it: a missing file is its FileNotFoundError
            stored_copy(name, target=target)
        os.replace(partial, cached)
    except FileNotFoundError:
        return None
    finally:
        partial.unlink(missing_ok=True)
    return cached


@lru_cache(maxsize=32)
def _load(content_hash: str, benchmark: str, slug: str, builtin: bool) -> CompiledLabelSet:
    local = _local_copy(version_file_name(content_hash))
    if local is not None and local.is_file():
        with open(local, "rb") as handle:
            return label_set_builders.load_compiled(handle)
    if not builtin:  # an uploaded bundle's files are gone once it is loaded
        raise LabelStoreError(f"labels of {benchmark}/{slug} version {content_hash[:12]} are "
                              "not stored, and its bundle is not built in: add it again")
    try:
        data = BundleData(builtin_bundle(benchmark), data_dir=settings.EVALSERVER_DATA_DIR,
                          sources={MULTILABEL_SOURCE: settings.EVALSERVER_MULTILABEL_FILE})
        compiled = compile_bundle_label_set(data, slug, cache_dir=settings.EVALSERVER_CACHE_DIR)
    except (KeyError, BundleError) as exc:
        raise LabelStoreError(f"labels of {benchmark}/{slug} version {content_hash[:12]} are "
                              f"not stored and cannot be compiled again: {exc}") from exc
    if compiled.content_hash != content_hash:
        raise LabelStoreError(
            f"labels of {benchmark}/{slug} version {content_hash[:12]} are not stored, and the "
            f"data directory now compiles to {compiled.content_hash[:12]}"
        )
    compiled_store(compiled)
    return compiled


def compiled_for_version(version: LabelSetVersion) -> CompiledLabelSet:
    label_set = version.label_set
    benchmark = label_set.benchmark
    # By slug, not by the row's source: an upload may add label sets to a built-in benchmark,
    # whose built-in label sets can still be compiled again (the others raise KeyError there).
    compiled = _load(version.content_hash, benchmark.slug, label_set.slug,
                     benchmark.slug in builtin_slugs())
    # The content hash covers the labels, not whose they are: two benchmarks with the same
    # label file share one stored file, which names the first one's benchmark, label set and
    # example set. The names are this version's own (scoring matches predictions by example set).
    return dataclasses.replace(compiled, slug=label_set.slug, benchmark=benchmark.slug,
                               example_set=label_set.example_set.slug)
