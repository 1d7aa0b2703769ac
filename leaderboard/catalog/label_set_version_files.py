"""Compiled label-set versions, by content hash, for the workers.

Version 1 of a catalog label set is compiled from the data directory; later versions (from
maintainer review) are written here when they are created. Files live under
MEDIA_ROOT/labelsets/<hash>.npz and a worker keeps the ones it has used in memory.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings

from leaderboard.catalog.models import LabelSetVersion
from workers.scoring import catalog, label_set_builders
from workers.scoring.label_set_builders import CompiledLabelSet


class LabelStoreError(RuntimeError):
    """A version's compiled labels cannot be found or rebuilt."""


def version_path(content_hash: str) -> Path:
    return Path(settings.MEDIA_ROOT) / "labelsets" / f"{content_hash}.npz"


@lru_cache(maxsize=32)
def _load(content_hash: str, benchmark: str, slug: str) -> CompiledLabelSet:
    path = version_path(content_hash)
    if path.is_file():
        return label_set_builders.load_compiled(path)
    spec = catalog.label_set_spec(benchmark, slug)
    compiled = label_set_builders.compile_label_set(
        spec,
        data_dir=settings.EVALSERVER_DATA_DIR,
        cache_dir=settings.EVALSERVER_CACHE_DIR,
        multilabel_file=settings.EVALSERVER_MULTILABEL_FILE,
    )
    if compiled.content_hash != content_hash:
        raise LabelStoreError(
            f"labels of {benchmark}/{slug} version {content_hash[:12]} are not stored, and the "
            f"data directory now compiles to {compiled.content_hash[:12]}"
        )
    label_set_builders.save_compiled(compiled, path)
    return compiled


def compiled_for_version(version: LabelSetVersion) -> CompiledLabelSet:
    label_set = version.label_set
    return _load(version.content_hash, label_set.benchmark.slug, label_set.slug)
