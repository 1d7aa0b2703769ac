"""Writes. Every change to the leaderboard's tables goes through a function here.

Names are `<entity>_<action>`; arguments are keyword-only.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.catalog.label_set_version_files import compiled_store
from leaderboard.catalog.models import Benchmark, ImageSet, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import (
    catalog_counts,
    label_set_version_first,
    label_set_version_latest,
)
from workers.scoring import label_set_builders
from workers.scoring.catalog import (
    BENCHMARKS,
    MULTILABEL_SOURCE,
    BenchmarkSpec,
    ImageSetSpec,
    LabelSetSpec,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_CONTENT_HASH = re.compile(r"^[0-9a-f]{64}\Z")

# Where a user gets the data (MANIFEST.md "source" column); repeated in README.md, "Data".
DATA_SOURCES = (
    "github.com/cleanlab/label-errors (original labels, MTurk validation, cross-validated "
    "predictions: ImageNet, CIFAR-10, MNIST)",
    "github.com/google-research/reassessed-imagenet (ImageNet ReaL: real.json, "
    "real_scores.npz)",
    "github.com/modestyachts/ImageNetV2 (ImageNet class_info.json)",
    "github.com/jcpeterson/cifar-10h (CIFAR-10H)",
    "github.com/modestyachts/CIFAR-10.1 (CIFAR-10.1 v4 and v6 labels, model predictions)",
    "the original MNIST release (t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)",
)


class CatalogError(Exception):
    """The catalog cannot be loaded at all (no data directory, bad configuration)."""


class Change(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _sync_row(
    model: type[models.Model], *, lookup: dict[str, Any], values: dict[str, Any]
) -> tuple[Any, Change]:
    """Get the row matching `lookup`, creating it with `values` or updating fields that differ."""
    row = model._default_manager.filter(**lookup).first()
    if row is None:
        row = model(**lookup, **values)
        row.full_clean()
        row.save()
        return row, Change.CREATED
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    if not changed:
        return row, Change.UNCHANGED
    for name in changed:
        setattr(row, name, values[name])
    row.full_clean()
    row.save(update_fields=changed)
    return row, Change.UPDATED


def benchmark_sync(*, spec: BenchmarkSpec) -> tuple[Benchmark, Change]:
    """Make the Benchmark row match the catalog entry."""
    benchmark, change = _sync_row(
        Benchmark,
        lookup={"slug": spec.slug},
        values={
            "name": spec.name,
            "num_classes": spec.num_classes,
            "main_image_set": spec.main_image_set,
        },
    )
    return benchmark, change


def image_set_sync(*, benchmark: Benchmark, spec: ImageSetSpec) -> tuple[ImageSet, Change]:
    """Make the ImageSet row match the catalog entry."""
    if spec.benchmark != benchmark.slug:
        raise CatalogError(f"image set {spec.slug!r} belongs to {spec.benchmark!r}, "
                           f"not {benchmark.slug!r}")
    existing = ImageSet.objects.filter(slug=spec.slug).exclude(benchmark=benchmark).first()
    if existing is not None:
        raise CatalogError(f"image set {spec.slug!r} already exists in benchmark "
                           f"{existing.benchmark.slug!r}")
    image_set, change = _sync_row(
        ImageSet,
        lookup={"slug": spec.slug, "benchmark": benchmark},
        values={"name": spec.name, "size": spec.size, "description": spec.description},
    )
    return image_set, change


def label_set_sync(
    *, benchmark: Benchmark, image_set: ImageSet, spec: LabelSetSpec
) -> tuple[LabelSet, Change]:
    """Make the LabelSet row (not its versions) match the catalog entry."""
    if spec.benchmark != benchmark.slug or spec.image_set != image_set.slug:
        raise CatalogError(f"label set {spec.benchmark}/{spec.slug} is over "
                           f"{spec.image_set!r}, not {benchmark.slug}/{image_set.slug}")
    if image_set.benchmark_id != benchmark.pk:
        raise CatalogError(f"image set {image_set.slug!r} is not in benchmark {benchmark.slug!r}")
    label_set, change = _sync_row(
        LabelSet,
        lookup={"benchmark": benchmark, "slug": spec.slug},
        values={
            "image_set": image_set,
            "kind": spec.kind,
            "family": spec.family,
            "name": spec.name,
            "description": spec.description,
            "citation": spec.citation,
            "params": spec.param_dict,
        },
    )
    return label_set, change


def benchmark_leaderboard_touch(*, benchmark_id: int) -> None:
    """Invalidate every cached leaderboard of the benchmark, in all processes (its generation
    is part of their cache keys: leaderboard/presentation/caching.py)."""
    Benchmark.objects.filter(pk=benchmark_id).update(
        leaderboard_generation=F("leaderboard_generation") + 1)


def label_set_row_lock(*, label_set_id: int) -> None:
    """Inside a transaction: hold the label set's row until it commits, so that concurrent
    new versions of it are made in turn (each numbered after the last). FOR NO KEY UPDATE of
    that row alone: not the benchmark row that LabelSet's ordering joins (a scoring updates
    it), and no wait for the Score and version inserts that refer to the label set."""
    LabelSet.objects.select_for_update(no_key=True, of=("self",)).filter(
        pk=label_set_id).order_by("pk").first()


def benchmark_panel_sizes_set(*, benchmark: Benchmark, review_panel_size: int,
                              ground_truth_panel_size: int) -> None:
    """The votes that decide a review item and the answers that decide a ground-truth
    candidate (set by maintainers in the admin; the catalog does not carry them)."""
    if min(review_panel_size, ground_truth_panel_size) < 1:
        raise ValueError("a panel needs at least one member")
    Benchmark.objects.filter(pk=benchmark.pk).update(
        review_panel_size=review_panel_size, ground_truth_panel_size=ground_truth_panel_size)


def label_set_version_create(
    *,
    label_set: LabelSet,
    content_hash: str,
    summary: dict[str, Any],
    parent: LabelSetVersion | None = None,
    author: User | None = None,
    note: str = "",
    published: bool = True,
) -> LabelSetVersion:
    """Add the next version (number = last + 1) of a label set; `published=False` for one
    that scored submissions must be re-scored on before it is current (docs/metrics.md §14)."""
    if not _CONTENT_HASH.match(content_hash):
        raise ValueError(f"content_hash must be 64 lower-case hex characters, got {content_hash!r}")
    if parent is not None and parent.label_set_id != label_set.pk:
        raise ValueError(f"parent {parent} is a version of another label set than {label_set}")
    with transaction.atomic():
        # Lock the label set so that two concurrent creations cannot take the same number.
        label_set_row_lock(label_set_id=label_set.pk)
        latest = label_set_version_latest(label_set=label_set)
        version = LabelSetVersion(
            label_set=label_set,
            number=1 if latest is None else latest.number + 1,
            content_hash=content_hash,
            parent=parent,
            author=author,
            note=note,
            summary=summary,
            published=timezone.now() if published else None,
        )
        version.full_clean()
        version.save()
        # A new leaderboard column, or one being re-scored: drop every cached leaderboard.
        benchmark_leaderboard_touch(benchmark_id=label_set.benchmark_id)
    return version


def label_set_version_publish(*, version_id: int) -> bool:
    """Make a version current, once, with the leaderboard generation bump that moves every
    cached board to it; the caller (the re-scoring job) has stored every score on it in the
    same transaction. Returns whether this call published it."""
    with transaction.atomic():
        version = LabelSetVersion.objects.select_related("label_set").get(id=version_id)
        if LabelSetVersion.objects.filter(id=version_id).publish(timezone.now()) != 1:
            return False
        benchmark_leaderboard_touch(benchmark_id=version.label_set.benchmark_id)
    return True


# -- loading the catalog (manage.py load_benchmarks) ------------------------------------------

@dataclass
class CatalogLoadReport:
    """What `benchmark_catalog_load` did, line by line; `echo` sees each line as it comes."""

    echo: Callable[[str, str], None] | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    created: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    warnings: int = 0

    def add(self, level: str, text: str) -> None:
        if level == "error":
            self.errors += 1
        elif level == "warning":
            self.warnings += 1
        self.lines.append((level, text))
        if self.echo is not None:
            self.echo(level, text)

    def count(self, entity: str, change: Change) -> None:
        if change is Change.CREATED:
            self.created[entity] += 1
        elif change is Change.UPDATED:
            self.updated[entity] += 1

    @property
    def changed_anything(self) -> bool:
        return bool(+self.created or +self.updated)


def data_dir_missing_message(data_dir: Path) -> str:
    sources = "\n".join(f"  - {source}" for source in DATA_SOURCES)
    return (
        f"The data directory {data_dir} does not exist.\n"
        "Get the public label files (README.md, 'Data', lists them and their layout) "
        f"from:\n{sources}\n"
        "and set EVALSERVER_DATA_DIR to the folder that holds imagenet/, cifar10/ and mnist/."
    )


def _short(content_hash: str) -> str:
    return content_hash[:12]


def benchmark_catalog_load(
    *,
    data_dir: Path,
    cache_dir: Path | None,
    multilabel_file: Path | None = None,
    benchmark_slugs: Sequence[str] | None = None,
    echo: Callable[[str, str], None] | None = None,
) -> CatalogLoadReport:
    """Compile every available label set of the catalog and make the database match it.

    For each label set whose files are all in `data_dir`: the Benchmark, ImageSet and LabelSet
    rows exist and version 1 holds the compiled content hash. Idempotent. A label set that
    already has versions and now compiles to another hash than version 1 is reported, never
    changed: later versions come from maintainer review. Label sets with missing files are
    skipped and named; multi-label sets are skipped unless `multilabel_file` is given.
    Raises CatalogError when nothing can be loaded at all.
    """
    if not data_dir.is_dir():
        raise CatalogError(data_dir_missing_message(data_dir))
    if multilabel_file is not None and not multilabel_file.is_file():
        raise CatalogError(
            f"EVALSERVER_MULTILABEL_FILE is set to {multilabel_file}, which is not a file. "
            "Point it at human_accuracy_v3.0.0.json (TensorFlow Datasets "
            "imagenet2012_multilabel v3.0.0), or unset it."
        )
    slugs = list(BENCHMARKS) if benchmark_slugs is None else list(benchmark_slugs)
    unknown = [slug for slug in slugs if slug not in BENCHMARKS]
    if unknown:
        raise CatalogError(
            f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}"
        )

    report = CatalogLoadReport(echo=echo)
    report.add("info", f"Data directory: {data_dir}")
    for slug in slugs:
        _benchmark_load(
            BENCHMARKS[slug], data_dir=data_dir, cache_dir=cache_dir,
            multilabel_file=multilabel_file, report=report,
        )

    counts = catalog_counts()
    totals = (f"{counts['benchmarks']} benchmarks, {counts['image_sets']} image sets, "
              f"{counts['label_sets']} label sets, {counts['label_set_versions']} versions")
    if report.changed_anything:
        made = ", ".join(f"{n} {entity}" for entity, n in report.created.items()) or "nothing"
        updated = ", ".join(f"{n} {entity}" for entity, n in report.updated.items())
        report.add("info", f"Created {made}" + (f"; updated {updated}" if updated else "")
                   + f". The database now has {totals}.")
    else:
        report.add("info", f"Nothing to create: the database already has everything available "
                   f"({totals}).")
    return report


def _compile_available(
    spec: BenchmarkSpec,
    *,
    data_dir: Path,
    cache_dir: Path | None,
    multilabel_file: Path | None,
    report: CatalogLoadReport,
) -> list[tuple[LabelSetSpec, label_set_builders.CompiledLabelSet]]:
    compiled_sets: list[tuple[LabelSetSpec, label_set_builders.CompiledLabelSet]] = []
    for label_spec in spec.label_sets:
        name = f"{spec.slug}/{label_spec.slug}"
        if label_spec.optional_source == MULTILABEL_SOURCE and multilabel_file is None:
            report.add("info", f"  {name}: skipped: not configured "
                       "(set EVALSERVER_MULTILABEL_FILE)")
            continue
        missing = label_set_builders.missing_files(label_spec, data_dir=data_dir)
        if missing:
            report.add("warning", f"  {name}: skipped: missing in {data_dir}: "
                       + ", ".join(missing))
            continue
        try:
            compiled = label_set_builders.compile_label_set(
                label_spec,
                data_dir=data_dir,
                cache_dir=cache_dir,
                multilabel_file=(
                    multilabel_file if label_spec.optional_source == MULTILABEL_SOURCE else None
                ),
            )
        except (OSError, ValueError, RuntimeError) as exc:
            report.add("error", f"  {name}: cannot be compiled: {exc}")
            continue
        compiled_sets.append((label_spec, compiled))
    return compiled_sets


def _benchmark_load(
    spec: BenchmarkSpec,
    *,
    data_dir: Path,
    cache_dir: Path | None,
    multilabel_file: Path | None,
    report: CatalogLoadReport,
) -> None:
    report.add("info", f"{spec.slug} ({spec.name})")
    compiled_sets = _compile_available(
        spec, data_dir=data_dir, cache_dir=cache_dir, multilabel_file=multilabel_file,
        report=report,
    )
    if not compiled_sets:
        report.add("warning", f"{spec.slug}: skipped: none of its label sets is available")
        return

    with transaction.atomic():
        benchmark, change = benchmark_sync(spec=spec)
        report.count("benchmarks", change)
        if change is Change.UPDATED:
            report.add("info", f"  {spec.slug}: benchmark details updated")
        image_sets: dict[str, ImageSet] = {}
        for image_set_slug in _unique(label_spec.image_set for label_spec, _ in compiled_sets):
            image_set, change = image_set_sync(
                benchmark=benchmark, spec=spec.image_set(image_set_slug)
            )
            report.count("image sets", change)
            if change is Change.UPDATED:
                report.add("info", f"  {image_set_slug}: image set details updated")
            image_sets[image_set_slug] = image_set
        for label_spec, compiled in compiled_sets:
            _label_set_load(
                benchmark=benchmark, image_set=image_sets[label_spec.image_set],
                spec=label_spec, compiled=compiled, report=report,
            )


def _label_set_load(
    *,
    benchmark: Benchmark,
    image_set: ImageSet,
    spec: LabelSetSpec,
    compiled: label_set_builders.CompiledLabelSet,
    report: CatalogLoadReport,
) -> None:
    name = f"{benchmark.slug}/{spec.slug}"
    label_set, change = label_set_sync(benchmark=benchmark, image_set=image_set, spec=spec)
    report.count("label sets", change)
    if change is Change.UPDATED:
        report.add("info", f"  {name}: label set details updated")
    first = label_set_version_first(label_set=label_set)
    if first is None or first.content_hash == compiled.content_hash:
        # stored before the row commits: a worker that reads the hash finds the whole file
        compiled_store(compiled)
    if first is None:
        version = label_set_version_create(
            label_set=label_set,
            content_hash=compiled.content_hash,
            summary=dict(compiled.summary),
            note="Compiled from the public data files by load_benchmarks.",
        )
        report.count("label-set versions", Change.CREATED)
        report.add("info", f"  {name}: version {version.number} created "
                   f"(sha256 {_short(version.content_hash)}, {compiled.size} examples)")
    elif first.content_hash != compiled.content_hash:
        report.add(
            "warning",
            f"  {name}: the data files now compile to sha256 {_short(compiled.content_hash)}, "
            f"but version 1 has {_short(first.content_hash)}; no version created "
            "(later versions come from maintainer review)",
        )
    else:
        report.add("info", f"  {name}: up to date (version 1, sha256 {_short(first.content_hash)})")


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
