"""Label files in and out: import a multi-label file (human_accuracy_v3.0.0.json layout) as new
versions of `multilabel` and `imagenet-m`; export any version in its source file's layout.

The management commands `import_multilabel` and `export_labels` are thin wrappers of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from leaderboard.catalog.bundle_definition import builtin_source, bundle_definition
from leaderboard.catalog.label_set_version_files import compiled_for_version, compiled_store
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import label_set_version_latest, label_set_version_list
from leaderboard.catalog.services import bundle_rows_sync, label_set_version_create
from leaderboard.review.panel.services import version_rescore_request
from workers.scoring import datasets, label_set_builders
from workers.scoring.bundles import (
    MULTILABEL_SOURCE,
    BundleData,
    BundleError,
    builtin_bundle,
    compile_bundle_label_set,
)
from workers.scoring.families.registry import FAMILIES, family_named


class LabelIOError(Exception):
    """A label file cannot be imported, or a version cannot be exported."""


@dataclass(frozen=True)
class ImportResult:
    label_set: str  # slug
    version: int  # the new version's number, or the latest one's when unchanged
    content_hash: str
    created: bool


def multilabel_import(*, path: Path, author: User | None = None,
                      note: str = "") -> list[ImportResult]:
    """Compile `multilabel` and `imagenet-m` of ImageNet from the file; each becomes a new
    version unless its latest version already has that content. New versions are re-scored
    after the commit (review.panel.services.version_rescore_request)."""
    path = Path(path)
    if not path.is_file():
        raise LabelIOError(f"no file {path}")
    data_dir = Path(settings.EVALSERVER_DATA_DIR)
    # ImageNet's built-in bundle declares both label sets (benchmarks/imagenet.toml)
    bundle = builtin_bundle("imagenet")
    compiled: dict[str, label_set_builders.CompiledLabelSet] = {}
    data = BundleData(bundle, data_dir=data_dir, sources={MULTILABEL_SOURCE: path})
    # the label sets built from that file, as the bundle declares them: the one whose source
    # is the setting, and those built on it (docs/bundles.md), in the bundle's order
    from_file = [ls.slug for ls in bundle.label_sets
                 if (setting := data.setting_of(ls.slug)) is not None
                 and setting.name == MULTILABEL_SOURCE]
    for slug in from_file:
        try:  # as load_benchmarks compiles them (same content hash for the same file)
            compiled[slug] = compile_bundle_label_set(data, slug)
        except BundleError as exc:
            raise LabelIOError(str(exc)) from exc
        except (datasets.DataError, ValueError, KeyError, TypeError) as exc:
            raise LabelIOError(f"{path}: {exc}") from exc
    try:  # the rows as load_benchmarks writes them (it reads the class and example names)
        definition = bundle_definition(bundle, data, source=builtin_source(bundle))
    except BundleError as exc:
        raise LabelIOError(str(exc)) from exc
    results: list[ImportResult] = []
    with transaction.atomic():
        rows = bundle_rows_sync(definition=definition, label_sets=list(compiled))
        for slug, labels in compiled.items():
            label_set, _ = rows.label_sets[slug]
            compiled_store(labels)
            latest = label_set_version_latest(label_set=label_set)
            if latest is not None and latest.content_hash == labels.content_hash:
                results.append(ImportResult(slug, latest.number, latest.content_hash, False))
                continue
            version = label_set_version_create(
                label_set=label_set, content_hash=labels.content_hash,
                summary=dict(labels.summary), parent=latest, author=author,
                note=note or f"Imported from {path.name}.", published=False)
            version_rescore_request(version_id=version.pk)  # which publishes it
            results.append(ImportResult(slug, version.number, version.content_hash, True))
    return results


def _version(label_set: LabelSet, number: int | None) -> LabelSetVersion:
    versions = label_set_version_list(label_set=label_set)
    version = versions.last() if number is None else versions.filter(number=number).first()
    if version is None:
        raise LabelIOError(f"{label_set} has no version {number if number else '(none)'}")
    return version


def labels_export(*, benchmark: str, label_set: str, number: int | None = None) -> Any:
    """A version (default: the latest) as JSON-able data in its source file's layout:
    as its family writes it (workers/scoring/families: `export`): `multilabel` as
    human_accuracy_v3.0.0.json (with `imagenet_m` from the latest version of the benchmark's
    listed subset when there is one), `real` as real.json."""
    row = LabelSet.objects.select_related("benchmark").filter(
        benchmark__slug=benchmark, slug=label_set).first()
    if row is None:
        raise LabelIOError(f"no label set {benchmark}/{label_set}")
    if row.labels_hidden:  # never exported, whoever asks (docs/metrics.md §17)
        raise LabelIOError(f"{benchmark}/{label_set} is a hidden label set: its labels are "
                           "never exported")
    version = _version(row, number)
    labels = compiled_for_version(version)
    family = family_named(row.family)
    if family.export is None:
        names = sorted(n for n, f in FAMILIES.items() if f.export is not None)
        exportable = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        raise LabelIOError(f"{benchmark}/{label_set} is a {row.family!r} label set: only "
                           f"{exportable} sets can be exported")
    partner = None
    if family.export_with is not None:  # a related set written into the same file
        partner_row = LabelSet.objects.filter(benchmark=row.benchmark,
                                              family=family.export_with).first()
        partner_version = (label_set_version_latest(label_set=partner_row)
                           if partner_row is not None else None)
        partner = (compiled_for_version(partner_version)
                   if partner_version is not None else None)
    # Class keys name classes in the file (ImageNet's WordNet ids); a benchmark loaded by the
    # import above, not from its bundle, has none stored: the data directory has ImageNet's.
    keys = row.benchmark.class_keys or (
        datasets.imagenet_wnids(Path(settings.EVALSERVER_DATA_DIR))
        if family.export_with is not None else [])
    try:
        return family.export(labels, partner, keys)
    except ValueError as exc:
        raise LabelIOError(str(exc)) from exc
