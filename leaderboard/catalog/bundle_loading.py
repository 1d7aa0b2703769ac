"""Loading benchmarks from their bundles (docs/bundles.md) into the catalog tables.

Two callers, one path (`_bundle_load`):
- `benchmark_catalog_load` (`manage.py load_benchmarks`): the built-in bundles of
  `benchmarks/`, leniently: a label set whose files are not in the data directory, or whose
  source setting is unset, is skipped and named; a version 1 that its files now compile to
  another hash is reported, never changed.
- `benchmark_bundle_add` (`manage.py benchmark_add`, a staff upload): one bundle, strictly:
  every label set is compiled and checked before anything is written, and any problem (a
  BundleError, or a conflict with what is loaded) refuses the whole bundle.

The rows are written in one transaction per benchmark; the compiled labels go to the default
storage (content-addressed, leaderboard/catalog/label_set_version_files.py) before it, so a
worker that reads a version's hash finds its file; those it stored are removed again when the
rows are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from leaderboard.catalog.bundle_definition import (
    BundleDefinition,
    builtin_source,
    bundle_definition,
)
from leaderboard.catalog.hidden_labels import hidden_releases_check
from leaderboard.catalog.label_set_version_files import compiled_store_new, compiled_unstore
from leaderboard.catalog.load_report import CatalogLoadReport
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.phases.services import hidden_phase_first_open
from leaderboard.catalog.selectors import catalog_counts, label_set_version_first
from leaderboard.catalog.services import (
    CatalogError,
    Change,
    bundle_rows_sync,
    label_set_version_create,
)
from workers.scoring.bundles import (
    BUILTIN_DIR,
    MULTILABEL_SOURCE,
    Bundle,
    BundleData,
    BundleError,
    builtin_bundle,
    builtin_slugs,
    compile_bundle_label_set,
    missing_sources,
    open_bundle,
)
from workers.scoring.bundles.builders import optional_source
from workers.scoring.label_set_builders import CompiledLabelSet

# Where a user gets the data (MANIFEST.md "source" column); repeated in docs/operators/data.md.
DATA_SOURCES = (
    "github.com/cleanlab/label-errors (original labels, MTurk validation, cross-validated "
    "predictions: ImageNet, CIFAR-10, CIFAR-100, Caltech-256, MNIST, 20 Newsgroups, IMDB)",
    "github.com/google-research/reassessed-imagenet (ImageNet ReaL: real.json, "
    "real_scores.npz)",
    "github.com/modestyachts/ImageNetV2 (ImageNet class_info.json)",
    "github.com/jcpeterson/cifar-10h (CIFAR-10H)",
    "github.com/modestyachts/CIFAR-10.1 (CIFAR-10.1 v4 and v6 labels, model predictions)",
    "the original MNIST release (t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)",
)
# The settings a bundle may name as a label set's source (docs/bundles.md §5.3).
SOURCE_SETTINGS = {MULTILABEL_SOURCE: "EVALSERVER_MULTILABEL_FILE"}
UPLOAD_SOURCE = "upload"


class BundleConflictError(CatalogError):
    """A bundle that conflicts with what is loaded; `code` names the conflict for the API."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def data_dir_missing_message(data_dir: Path) -> str:
    sources = "\n".join(f"  - {source}" for source in DATA_SOURCES)
    return (
        f"The data directory {data_dir} does not exist.\n"
        "Get the public label files (docs/operators/data.md lists them and their layout) "
        f"from:\n{sources}\n"
        "and set EVALSERVER_DATA_DIR to the folder that holds imagenet/, cifar10/ and mnist/."
    )


def _short(content_hash: str) -> str:
    return content_hash[:12]


def _sources() -> dict[str, Path | None]:
    return {MULTILABEL_SOURCE: settings.EVALSERVER_MULTILABEL_FILE}


def benchmark_catalog_load(
    *,
    data_dir: Path,
    cache_dir: Path | None,
    multilabel_file: Path | None = None,
    benchmark_slugs: Sequence[str] | None = None,
    echo: Callable[[str, str], None] | None = None,
) -> CatalogLoadReport:
    """Load the built-in bundles (benchmarks/*.toml) and make the database match them.

    For each label set whose files are all in `data_dir`: the Benchmark, ExampleSet and LabelSet
    rows exist, describe what the bundle says, and version 1 holds the compiled content hash.
    Idempotent. A label set that already has versions and now compiles to another hash than
    version 1 is reported, never changed: later versions come from maintainer review. Label
    sets with missing files are skipped and named; multi-label sets are skipped unless
    `multilabel_file` is given. Raises CatalogError when nothing can be loaded at all.
    """
    if not data_dir.is_dir():
        raise CatalogError(data_dir_missing_message(data_dir))
    if multilabel_file is not None and not multilabel_file.is_file():
        raise CatalogError(
            f"EVALSERVER_MULTILABEL_FILE is set to {multilabel_file}, which is not a file. "
            "Point it at human_accuracy_v3.0.0.json (TensorFlow Datasets "
            "imagenet2012_multilabel v3.0.0), or unset it."
        )
    known = builtin_slugs()
    slugs = list(known) if benchmark_slugs is None else list(benchmark_slugs)
    unknown = [slug for slug in slugs if slug not in known]
    if unknown:
        raise CatalogError(
            f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(known)}"
        )

    report = CatalogLoadReport(echo=echo)
    report.add("info", f"Data directory: {data_dir}")
    for slug in slugs:
        bundle = builtin_bundle(slug)
        _bundle_load(
            bundle, data=BundleData(bundle, data_dir=data_dir,
                                    sources={MULTILABEL_SOURCE: multilabel_file}),
            cache_dir=cache_dir, source=builtin_source(bundle), strict=False,
            update=True, report=report,
        )
    _report_totals(report)
    return report


def benchmark_bundle_add(
    *,
    path: Path,
    update: bool = False,
    team_id: int | None = None,
    data_dir: Path | None = None,
    echo: Callable[[str, str], None] | None = None,
) -> CatalogLoadReport:
    """Add the benchmark of one bundle (a manifest, or a .zip bundle) with its sets and
    version 1 of each label set, in one transaction, once everything is checked.

    Raises BundleError for any problem of the bundle, BundleConflictError when it conflicts
    with what is loaded: the slug is loaded and this would change it without `update`, an
    example set slug belongs to another benchmark, or a loaded label set's version 1 would
    change, or it is another team's (`team_id` given: the benchmark belongs to that team when
    created, the site team's by default; docs/hosts/teams.md). Nothing is written then.
    Re-running the same bundle creates nothing; `update` adds label sets to a loaded benchmark
    and rewrites its descriptive fields."""
    data_dir = Path(data_dir if data_dir is not None else settings.EVALSERVER_DATA_DIR)
    report = CatalogLoadReport(echo=echo)
    with open_bundle(Path(path)) as bundle:
        builtin = bundle.manifest.resolve().parent == BUILTIN_DIR.resolve()
        source = builtin_source(bundle) if builtin else UPLOAD_SOURCE
        # Compiled label sets are cached only when read from the data directory: an uploaded
        # bundle is read once from its own temporary folder.
        cache_dir = Path(settings.EVALSERVER_CACHE_DIR) if bundle.files == "data" else None
        _bundle_load(
            bundle, data=BundleData(bundle, data_dir=data_dir, sources=_sources()),
            cache_dir=cache_dir, source=source, strict=True, update=update, report=report,
            team_id=team_id,
        )
        report.slug = bundle.slug
    _report_totals(report)
    return report


def _report_totals(report: CatalogLoadReport) -> None:
    counts = catalog_counts()
    totals = (f"{counts['benchmarks']} benchmarks, {counts['example_sets']} example sets, "
              f"{counts['label_sets']} label sets, {counts['label_set_versions']} versions")
    if report.changed_anything:
        made = ", ".join(f"{n} {entity}" for entity, n in report.created.items()) or "nothing"
        updated = ", ".join(f"{n} {entity}" for entity, n in report.updated.items())
        report.add("info", f"Created {made}" + (f"; updated {updated}" if updated else "")
                   + f". The database now has {totals}.")
    else:
        report.add("info", f"Nothing to create: the database already has everything available "
                   f"({totals}).")


# -- one bundle -------------------------------------------------------------------------------


def _compile(
    bundle: Bundle, data: BundleData, *, cache_dir: Path | None, strict: bool,
    report: CatalogLoadReport,
) -> dict[str, CompiledLabelSet]:
    """Every label set that can be built; strict: any other problem raises (BundleError)."""
    compiled = {}
    for ls in bundle.label_sets:
        name = f"{bundle.slug}/{ls.slug}"
        setting = optional_source(bundle, ls)
        if setting is not None and data.sources.get(setting) is None:
            env = SOURCE_SETTINGS.get(setting, setting)
            report.add("info", f"  {name}: skipped: not configured (set {env})")
            continue
        if not strict:
            missing = missing_sources(data, ls)
            if missing:
                report.add("warning", f"  {name}: skipped: missing in {data.root}: "
                           + ", ".join(missing))
                continue
        try:
            compiled[ls.slug] = compile_bundle_label_set(data, ls.slug, cache_dir=cache_dir)
        except BundleError as exc:
            if strict:
                raise
            report.add("error", f"  {name}: cannot be compiled: {exc}")
        except (OSError, ValueError, RuntimeError) as exc:
            if strict:  # a builder's own check (DataError): named like the reader's refusals
                raise BundleError("bad_file", str(exc), file=bundle.manifest.name,
                                  field=f"label_sets.{ls.slug}") from exc
            report.add("error", f"  {name}: cannot be compiled: {exc}")
    return compiled


def _bundle_load(
    bundle: Bundle, *, data: BundleData, cache_dir: Path | None, source: str, strict: bool,
    update: bool, report: CatalogLoadReport, team_id: int | None = None,
) -> None:
    report.add("info", f"{bundle.slug} ({bundle.name})")
    compiled = _compile(bundle, data, cache_dir=cache_dir, strict=strict, report=report)
    if not compiled:
        if strict:
            raise BundleConflictError("nothing_to_load", f"{bundle.slug}: none of its label "
                                      "sets can be built (their sources are not configured)")
        report.add("warning", f"{bundle.slug}: skipped: none of its label sets is available")
        return
    existing = Benchmark.objects.filter(slug=bundle.slug).first()
    if existing is not None and team_id is not None and existing.team_id != team_id:
        # a team updates only its own benchmarks (docs/hosts/teams.md)
        raise BundleConflictError(
            "benchmark_other_team", f"benchmark {bundle.slug!r} belongs to another host team: "
            "a bundle can add or update only its own team's benchmarks")
    try:
        definition = bundle_definition(bundle, data, source=source)
        hidden_releases_check(bundle=bundle, compiled=compiled, benchmark=existing)
    except BundleError as exc:
        if strict:
            raise
        level = "warning" if exc.code == "missing_file" else "error"
        report.add(level, f"{bundle.slug}: skipped: {exc}")
        return
    stored = []  # the files this load added: removed again if its rows are refused
    for slug, labels in compiled.items():
        first = _first_version(existing, slug)
        if first is None or first.content_hash == labels.content_hash:
            # stored before the rows commit: a worker that reads the hash finds the whole file
            stored.append(compiled_store_new(labels))
    # The rows' lines are reported once they are committed (a refused bundle leaves none).
    written = CatalogLoadReport()
    try:
        with transaction.atomic():
            try:
                _rows_write(definition, compiled, strict=strict, report=written,
                            team_id=team_id)
            except BundleConflictError:
                raise
            except CatalogError as exc:  # a slug another benchmark holds (services' checks)
                raise BundleConflictError("catalog_conflict", str(exc)) from exc
            if strict and existing is not None and not update and written.changed_anything:
                raise BundleConflictError(
                    "benchmark_exists",
                    f"benchmark {bundle.slug!r} is already loaded and this bundle would change "
                    f"it ({_changes(written)}); add it with --update (update=True) to add "
                    "label sets and rewrite its details")
    except Exception:
        # nothing of a refused bundle stays, a hidden label set's labels included (§17)
        compiled_unstore(name for name in stored if name is not None)
        raise
    report.merge(written)


def _first_version(benchmark: Benchmark | None, slug: str) -> Any:
    if benchmark is None:
        return None
    label_set = LabelSet.objects.filter(benchmark=benchmark, slug=slug).first()
    return None if label_set is None else label_set_version_first(label_set=label_set)


def _changes(report: CatalogLoadReport) -> str:
    created = [f"{n} {entity} created" for entity, n in report.created.items()]
    updated = [f"{n} {entity} updated" for entity, n in report.updated.items()]
    return ", ".join(created + updated)


def _rows_write(
    definition: BundleDefinition, compiled: dict[str, CompiledLabelSet], *, strict: bool,
    report: CatalogLoadReport, team_id: int | None = None,
) -> None:
    rows = bundle_rows_sync(definition=definition,
                            label_sets=[slug for slug in definition.label_sets if slug in compiled],
                            team_id=team_id)
    report.count("benchmarks", rows.benchmark[1])
    if rows.benchmark[1] is Change.UPDATED:
        report.add("info", f"  {definition.slug}: benchmark details updated")
    for slug, (_, change) in rows.example_sets.items():
        report.count("example sets", change)
        if change is Change.UPDATED:
            report.add("info", f"  {slug}: example set details updated")
    for slug, (label_set, change) in rows.label_sets.items():
        _label_set_load(label_set=label_set, name=f"{definition.slug}/{slug}", change=change,
                        compiled=compiled[slug], strict=strict, report=report)
        mask, fraction, seed = definition.hidden_splits.get(slug, (None, None, None))
        hidden_phase_first_open(label_set=label_set, size=compiled[slug].size,
                                private_mask=mask, fraction=fraction, seed=seed)


def _label_set_load(
    *,
    label_set: LabelSet,
    name: str,
    change: Change,
    compiled: CompiledLabelSet,
    strict: bool,
    report: CatalogLoadReport,
) -> None:
    """Report what syncing the label set's row (`name`: benchmark/slug) changed; its first
    version from the compiled labels, or a conflict or a warning where they no longer compile
    to version 1."""
    report.count("label sets", change)
    if change is Change.UPDATED:
        report.add("info", f"  {name}: label set details updated")
    first = label_set_version_first(label_set=label_set)
    if first is None:
        version = label_set_version_create(
            label_set=label_set,
            content_hash=compiled.content_hash,
            summary=dict(compiled.summary),
            note="Compiled from the benchmark's bundle.",
        )
        report.count("label-set versions", Change.CREATED)
        report.add("info", f"  {name}: version {version.number} created "
                   f"(sha256 {_short(version.content_hash)}, {compiled.size} examples)")
    elif first.content_hash != compiled.content_hash:
        message = (f"  {name}: the data files now compile to sha256 "
                   f"{_short(compiled.content_hash)}, but version 1 has "
                   f"{_short(first.content_hash)}; no version created "
                   "(later versions come from maintainer review)")
        if strict:
            raise BundleConflictError("version_conflict", message.strip())
        report.add("warning", message)
    else:
        report.add("info", f"  {name}: up to date (version 1, sha256 {_short(first.content_hash)})")
