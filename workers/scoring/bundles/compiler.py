"""Compiled label sets from a bundle (docs/bundles.md §6).

`compile_bundle` gives the compiled label sets, each built by its family
(workers/scoring/families) and hashed by `label_set_builders.make_compiled`. Compiled sets are
cached as .npz (never pickled) under a fingerprint of the label set's definition and its source
files' sizes and times.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .. import label_set_builders as builders
from ..families.base import Family
from ..families.registry import family_named
from .builders import BundleData, label_set_files, optional_source
from .data_files import resolve
from .errors import BundleError
from .model import Bundle, LabelSetDef

# The modules whose code decides what a compiled label set holds, besides the families'
# (all of them: a family's build may call another's, as a subset builds on the multi-label
# annotations): a change to any of them makes every cached build stale.
_BUILDER_MODULES = ("workers.scoring.label_set_builders", "workers.scoring.multilabel_annotations",
                    "workers.scoring.bundles.builders", "workers.scoring.bundles.votes",
                    "workers.scoring.bundles.data_files", "workers.scoring.bundles.examples",
                    "workers.scoring.bundles.classes")


@cache
def builder_code_version(family: str) -> str:
    """A hash of the source of every module that builds a set of this family: the compile
    cache's key changes with the code, so no version number has to be bumped by hand."""
    digest = hashlib.sha256()
    for name in (*_BUILDER_MODULES, family_named(family).build.__module__):
        digest.update(Path(str(importlib.import_module(name).__file__)).read_bytes())
    families = Path(str(importlib.import_module("workers.scoring.families").__file__)).parent
    for module in sorted(families.glob("*.py")):
        digest.update(module.read_bytes())
    return digest.hexdigest()[:16]


def family_of(ls: LabelSetDef) -> Family:
    """The family a bundle's label set compiles to (its manifest's kind and layout say)."""
    return family_named(ls.family)


def label_set_identity(bundle: Bundle, ls: LabelSetDef) -> dict[str, Any]:
    """What names a compiled label set and what its labels are checked against, the same in
    the compiled set (and so in its content hash) and in its catalog row (its kind and family:
    leaderboard/catalog/bundle_definition.py)."""
    family = family_of(ls)
    return {
        "slug": ls.slug,
        "benchmark": bundle.slug,
        "example_set": ls.example_set,
        "kind": family.label_kind,
        "family": family.name,
        "num_classes": bundle.classes.count,
        "size": bundle.example_set(ls.example_set).size,
    }


def missing_sources(data: BundleData, ls: LabelSetDef) -> list[str]:
    """What a label set lacks to be built: files under the root, or an unset setting."""
    missing = []
    for name in label_set_files(data.bundle, ls):
        try:
            resolve(data.root, name, field=f"label_sets.{ls.slug}")
        except BundleError as error:
            if error.code != "missing_file":
                raise
            missing.append(name)
    setting = optional_source(data.bundle, ls)
    if setting is not None:
        source = data.sources.get(setting)
        if source is None:
            missing.append(f"setting {setting}")
        elif not Path(source).is_file():  # set, but to no file: named like a missing file
            missing.append(str(source))
    return missing


# How a label set is published (docs/bundles.md §5.7), not what it holds: left out of the
# fingerprint, so declaring these neither changes a compiled set nor makes its cache stale.
_PUBLICATION_FIELDS = ("hidden", "release", "step")


def _definition(ls: LabelSetDef) -> dict[str, Any]:
    fields = dataclasses.asdict(ls)
    for key in _PUBLICATION_FIELDS:
        del fields[key]
    return fields


def fingerprint(data: BundleData, ls: LabelSetDef) -> str:
    """Changes whenever the label set's definition, a source file or a builder changes."""
    bundle = data.bundle
    related = [ls] + [bundle.label_set(r.slug) for r in ls.fields.references() if r.builds_on]
    parts: list[Any] = [
        builder_code_version(family_of(ls).name),
        bundle.slug,
        [_definition(x) for x in related],
        dataclasses.asdict(bundle.example_set(ls.example_set)),
        dataclasses.asdict(bundle.classes),
    ]
    sources = [data.root / name for name in label_set_files(bundle, ls)]
    setting = optional_source(bundle, ls)
    if setting is not None and data.sources.get(setting) is not None:
        sources.append(Path(str(data.sources[setting])))
    for source in sources:
        stat = source.stat()
        parts.append([str(source.resolve()), stat.st_size, stat.st_mtime_ns])
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def compile_bundle_label_set(
    data: BundleData, slug: str, *, cache_dir: Path | None = None
) -> builders.CompiledLabelSet:
    ls = data.bundle.label_set(slug)
    missing = missing_sources(data, ls)
    if missing:
        unset = missing[-1].startswith("setting ")
        raise BundleError("not_configured" if unset else "missing_file",
                          f"label set {ls.slug!r} lacks: {', '.join(missing)}",
                          file=missing[0] if not unset else "", field=f"label_sets.{ls.slug}")
    cached: Path | None = None
    if cache_dir is not None:
        name = f"bundle-{data.bundle.slug}-{ls.slug}-{fingerprint(data, ls)}.npz"
        cached = Path(cache_dir) / name
        if cached.is_file():
            return builders.load_compiled(cached)
    family = family_of(ls)
    arrays, meta = data.build(ls.slug)
    missing = sorted(set(family.arrays) - set(arrays))
    if missing:
        raise ValueError(f"label set {ls.slug!r}: the {family.name} builder gave no {missing}")
    compiled = builders.make_compiled(label_set_identity(data.bundle, ls), arrays, meta)
    if cached is not None:
        builders.save_compiled(compiled, cached)
    return compiled


def compile_bundle(
    bundle: Bundle,
    *,
    data_dir: Path,
    cache_dir: Path | None = None,
    sources: Mapping[str, Path | None] | None = None,
    skip_unconfigured: bool = True,
    leave_out: Collection[str] = (),
) -> dict[str, builders.CompiledLabelSet]:
    """Every label set of a bundle, compiled (its class names are checked on the way).

    Label sets whose source is an unset server setting are left out when
    `skip_unconfigured`, and so are the slugs of `leave_out` (`python -m workers.score`: the
    hidden label sets whose files are not here); any other problem is a BundleError, and
    nothing is returned."""
    data = BundleData(bundle, data_dir=data_dir, sources=sources)
    _ = data.classes  # read and check the class names even if no label set needs them
    for example_set in bundle.example_sets:
        data.names(example_set.slug)
    out = {}
    for ls in bundle.label_sets:
        if ls.slug in leave_out:
            continue
        setting = optional_source(bundle, ls)
        if skip_unconfigured and setting is not None and data.sources.get(setting) is None:
            continue
        out[ls.slug] = compile_bundle_label_set(data, ls.slug, cache_dir=cache_dir)
    return out
