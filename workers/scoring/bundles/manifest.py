"""Parse and check a bundle manifest (docs/bundles.md): TOML text -> a frozen `Bundle`.

This reads the manifest only; the data files it names are read (and checked) when the label
sets are compiled (`compiler.py`). Every refusal is a `BundleError` naming the manifest and
the field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ..families.registry import family_named
from .bounded import LimitExceeded, bounded_check
from .errors import BundleError
from .fields import Table
from .inputs import inputs_def
from .label_set_fields import parse_label_set
from .layout import ManifestLayout
from .model import (
    CLASS_SOURCES,
    FILE_ROOTS,
    IMAGE_FORMATS,
    MODALITIES,
    NAMINGS,
    TEXT_FORMATS,
    Bundle,
    ClassesDef,
    ExampleSetDef,
    ImagesDef,
    LabelSetDef,
    TextsDef,
)
from .toml_limits import ManifestLimits, check_manifest_limits

# The server settings a bundle may name for its images and texts: the server's own
# (leaderboard/catalog/image_sources.py reads them).
SETTING_PREFIX = "EVALSERVER_"
IMAGES_SETTING = re.compile(SETTING_PREFIX + r"[A-Z0-9_]+")

SCHEMA_VERSION = 1
MAX_MANIFEST_BYTES = 1 << 20
MAX_CLASSES = 1_000_000
MAX_EXAMPLES = 1_000_000_000
# `{number}` or `{number:0Nd}` once; any other brace is refused (no str.format injection).
_PATTERN = re.compile(r"^([^{}]*)\{number(?::0(\d{1,2})d)?\}([^{}]*)$")


def read_manifest(path: Path, *, limits: ManifestLimits | None = None) -> Bundle:
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as error:
        raise BundleError(
            "missing_file", f"cannot read the manifest: {error.strerror}", file=str(path)
        ) from None
    return parse_manifest(raw, path=path, limits=limits)


def parse_manifest(raw: bytes, *, path: Path, limits: ManifestLimits | None = None) -> Bundle:
    """The checked bundle of a manifest's bytes. `limits` (toml_limits.py): what the text may
    hold, checked before it is parsed, and whether the parse is first proven to fit its memory
    and CPU limits in a child process (bounded.py); by default it is."""
    file = path.name
    limits = limits or ManifestLimits()
    if len(raw) > MAX_MANIFEST_BYTES:
        raise BundleError("bad_toml", "the manifest is larger than 1 MiB", file=file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError("bad_toml", "the manifest is not UTF-8 text", file=file) from None
    check_manifest_limits(text, file=file, limits=limits)
    if limits.isolated:
        try:
            bounded_check(lambda: tomllib.loads(text), memory_bytes=limits.parse_memory_bytes,
                          cpu_seconds=limits.parse_cpu_seconds,
                          expected=(ValueError, RecursionError))
        except LimitExceeded as error:
            raise BundleError("bad_toml", _over_limits(error, limits), file=file) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BundleError("bad_toml", f"not valid TOML: {error}", file=file) from None
    except ValueError as error:  # an integer past Python's 4,300 digits
        reason = str(error).split(";")[0]
        raise BundleError("bad_toml", f"not valid TOML: a value this server cannot read "
                          f"({reason})", file=file) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively: a small manifest of
        # `[[[[...` past the interpreter's stack limit is malformed input, not a server fault
        # (the limits above refuse it first)
        raise BundleError("bad_toml", "not valid TOML: nested too deeply", file=file) from None
    top = Table(document, file=file, prefix="")
    schema = top.integer("schema")
    if schema != SCHEMA_VERSION:
        raise top.error("bad_value", "schema", f"this server reads schema {SCHEMA_VERSION}")
    slug = top.slug("slug")
    name = top.string("name")
    description = top.string("description", "")
    modality = top.choice("modality", MODALITIES)
    files = top.choice("files", FILE_ROOTS, "data")
    citations = _citations(top)
    cites = top.str_list("cites", ())
    classes = _classes(top.table("classes"))
    example_sets = tuple(
        _example_set(Table(data, file=file, prefix=f"example_sets[{i}]"))
        for i, data in top.tables("example_sets")
    )
    _unique([s.slug for s in example_sets], file=file, field="example_sets")
    main = top.string("main_example_set", example_sets[0].slug)
    label_sets: list[LabelSetDef] = []
    for i, data in top.tables("label_sets"):
        label_sets += parse_label_set(
            Table(data, file=file, prefix=f"label_sets[{i}]"), main_example_set=main
        )
    _unique([s.slug for s in label_sets], file=file, field="label_sets")
    headline = top.string("headline", label_sets[0].slug)
    reviewable = top.str_list("reviewable", ())
    inputs = inputs_def(top.table("inputs", None))
    class_confusions = top.path("class_confusions", None)
    top.done()
    bundle = Bundle(
        slug=slug,
        name=name,
        description=description,
        modality=modality,
        citations=citations,
        cites=cites,
        files=files,
        classes=classes,
        example_sets=example_sets,
        label_sets=tuple(label_sets),
        main_example_set=main,
        headline=headline,
        reviewable=reviewable,
        manifest=path,
        inputs=inputs,
        class_confusions=class_confusions,
    )
    _check_references(bundle, file=file)
    return bundle


def _over_limits(error: LimitExceeded, limits: ManifestLimits) -> str:
    memory = f"{limits.parse_memory_bytes / 2**20:,.0f} MiB of memory"
    cpu = f"{limits.parse_cpu_seconds} s of CPU"
    if error.reason in ("memory", "cpu"):
        return (f"reading the manifest needs more than the "
                f"{memory if error.reason == 'memory' else cpu} a manifest's parse may use")
    return f"reading the manifest {error} (a manifest's parse may use {memory} and {cpu})"


def _unique(slugs: list[str], *, file: str, field: str) -> None:
    seen: set[str] = set()
    for slug in slugs:
        if slug in seen:
            raise BundleError(
                "duplicate_slug", f"two {field} have the slug {slug!r}", file=file, field=field
            )
        seen.add(slug)


def _citations(top: Table) -> tuple[tuple[str, str], ...]:
    table = top.table("citations", None)
    if table is None:
        return ()
    out = []
    for key in table.data:
        out.append((key, table.string(key)))
        if not key.strip():
            raise table.error("bad_value", key, "a citation key must not be blank")
    table.done()
    return tuple(out)


def _classes(table: Table) -> ClassesDef:
    count = table.integer("count", minimum=1, maximum=MAX_CLASSES)
    source = table.choice("source", CLASS_SOURCES)
    if source == "inline":
        names = table.str_list("names")
        if len(names) != count:
            raise table.error("bad_value", "names", f"{len(names)} names for {count} classes")
        seen: set[str] = set()
        for i, class_name in enumerate(names):
            if class_name in seen:
                raise BundleError(
                    "duplicate_class",
                    f"the class name {class_name!r} appears twice",
                    file=table.file,
                    field=f"{table.field('names')}[{i}]",
                )
            seen.add(class_name)
        table.done()
        return ClassesDef(count=count, source=source, names=names)
    file = table.path("file")
    extra: dict[str, Any] = {}
    if source == "folder_names":
        extra["first_number"] = table.integer("first_number", 1, minimum=0, maximum=MAX_EXAMPLES)
    elif source == "records":
        extra["id_field"] = table.string("id_field", "cid")
        extra["name_field"] = table.string("name_field", "name")
        extra["key_field"] = table.string("key_field", None)
    table.done()
    return ClassesDef(count=count, source=source, file=file, **extra)


def pattern_parts(pattern: str) -> tuple[str, int | None, str] | None:
    """(prefix, zero-padded width or None, suffix) of a naming pattern, None if malformed."""
    match = _PATTERN.match(pattern)
    if not match:
        return None
    width = match.group(2)
    return match.group(1), (int(width) if width else None), match.group(3)


def _example_set(table: Table) -> ExampleSetDef:
    slug = table.slug("slug")
    table.prefix = f"example_sets.{slug}"
    name = table.string("name")
    size = table.integer("size", minimum=1, maximum=MAX_EXAMPLES)
    description = table.string("description", "")
    naming = table.choice("naming", NAMINGS, "index")
    extra: dict[str, Any] = {}
    if naming == "pattern":
        pattern = table.string("pattern")
        if pattern_parts(pattern) is None:
            raise table.error(
                "bad_value",
                "pattern",
                f"{pattern!r} must contain `{{number}}` or `{{number:0Nd}}` once and no other "
                "brace",
            )
        extra["pattern"] = pattern
        extra["first_number"] = table.integer("first_number", 1, minimum=0, maximum=MAX_EXAMPLES)
    elif naming == "file":
        extra["names_file"] = table.path("names")
    images = _example_files(table, "images", IMAGE_FORMATS)
    if images is not None:
        extra["images"] = ImagesDef(**images)
    texts = _example_files(table, "texts", TEXT_FORMATS)
    if texts is not None:
        extra["texts"] = TextsDef(**texts)
    table.done()
    return ExampleSetDef(
        slug=slug, name=name, size=size, description=description, naming=naming, **extra
    )


def _example_files(table: Table, key: str, formats: tuple[str, ...]) -> dict[str, Any] | None:
    """An example set's `images` or `texts` table (docs/bundles.md §4.1, §4.2): its format
    and exactly one of a path under the data directory and a server setting."""
    files = table.table(key, None)
    if files is None:
        return None
    found_format = files.choice("format", formats, "folder")
    path = files.path("path", None)
    setting = files.string("setting", None)
    if (path is None) == (setting is None):
        raise files.error("bad_value", "path", "give exactly one of path and setting")
    if setting is not None and not IMAGES_SETTING.fullmatch(setting):
        # the server reads only its own settings (docs/bundles.md §4.1): any other name
        # would stay "not set" whatever an operator sets
        raise files.error("bad_value", "setting", f"{setting!r} is not a server "
                          f"setting: a name {SETTING_PREFIX}..., in capitals")
    files.done()
    return {"format": found_format, "path": path, "setting": setting}


def _check_references(bundle: Bundle, *, file: str) -> None:
    """Every slug and citation key that a field names is declared, of the right kind."""
    example_sets = {s.slug: s for s in bundle.example_sets}
    label_sets = {s.slug: s for s in bundle.label_sets}
    citations = dict(bundle.citations)
    layout = ManifestLayout(bundle)

    def refuse(field: str, message: str, code: str = "unknown_reference") -> BundleError:
        return BundleError(code, message, file=file, field=field)

    if bundle.main_example_set not in example_sets:
        raise refuse("main_example_set", f"no example set {bundle.main_example_set!r}")
    if bundle.headline not in label_sets:
        raise refuse("headline", f"no label set {bundle.headline!r}")
    for i, slug in enumerate(bundle.reviewable):
        if slug not in label_sets:
            raise refuse(f"reviewable[{i}]", f"no label set {slug!r}")
    for i, key in enumerate(bundle.cites):
        if key not in citations:
            raise refuse(f"cites[{i}]", f"no citation {key!r} in [citations]")
    for ls in bundle.label_sets:
        field = f"label_sets.{ls.slug}"
        if ls.example_set not in example_sets:
            raise refuse(f"{field}.example_set", f"no example set {ls.example_set!r}")
        if ls.citation and ls.citation not in citations:
            raise refuse(f"{field}.citation", f"no citation {ls.citation!r} in [citations]")
        for reference in ls.fields.references():
            other = label_sets.get(reference.slug)
            if other is None or other.family != reference.family:
                raise refuse(f"{field}.{reference.key}",
                             f"{reference.slug!r} is not {reference.described}")
            if reference.same_example_set is not None and \
                    (other.example_set == ls.example_set) != reference.same_example_set:
                where = ("the same example set" if reference.same_example_set
                         else "another example set")
                raise refuse(f"{field}.{reference.key}",
                             f"{reference.slug!r} must be on {where}", "bad_value")

        def refuse_field(key: str, message: str, code: str, field: str = field) -> BundleError:
            return refuse(f"{field}.{key}", message, code)

        ls.fields.check(layout, ls.example_set, refuse_field)
    _check_hidden(bundle, file=file)


def _check_hidden(bundle: Bundle, *, file: str) -> None:
    """docs/bundles.md §5.7: a hidden label set's files come with the bundle, and nothing
    public (the headline, the review queue, a public label set built on it) is drawn from it."""
    hidden = {ls.slug for ls in bundle.label_sets if ls.hidden}
    if not hidden:
        return
    layout = ManifestLayout(bundle)

    def refuse(field: str, message: str) -> BundleError:
        return BundleError("bad_value", message, file=file, field=field)

    if len(hidden) == len(bundle.label_sets):
        raise refuse("label_sets", "every label set is hidden: at least one must be public")
    if bundle.headline in hidden:
        raise refuse(
            "headline",
            f"{bundle.headline!r} is hidden: the headline (the public board's default sort) "
            "must be a public label set; it defaults to the first label set",
        )
    for ls in bundle.label_sets:
        field = f"label_sets.{ls.slug}"
        if not ls.hidden:
            for reference in ls.fields.references():
                if reference.slug in hidden:
                    raise refuse(
                        f"{field}.{reference.key}",
                        f"{reference.slug!r} is hidden and {ls.slug!r} is public: a public "
                        "label set built on a hidden one would publish facts about its labels "
                        f"(hide {ls.slug!r} too, or name a public label set)",
                    )
            continue
        if bundle.files != "bundle":
            raise refuse(
                f"{field}.hidden",
                "a hidden label set's files must come with the bundle: set files = \"bundle\" "
                "(files = \"data\" is the server's public data directory, whose files "
                "are listed in data-sources.toml and fetched from public sources)",
            )
        split = ls.split_fraction is not None or ls.split_private is not None
        if split and not family_named(ls.family).splittable:
            raise refuse(
                f"{field}.split",
                f"only a label set of one label per example can be split (kind {ls.kind!r} "
                "scores some examples only): use a kind such as single or new_test_set",
            )
        setting = ls.fields.setting(layout)
        if setting is not None:
            raise refuse(
                f"{field}.{setting.key}",
                f"a hidden label set's files must come with the bundle, not from the server "
                f"setting {setting.name!r}",
            )
    # A new test set's gap is computed against the label set named `original`, whatever
    # its `pairs_with` (workers/scoring/scorer.py): a public one would publish a figure of a
    # hidden `original`.
    if "original" in hidden:
        for ls in bundle.label_sets:
            if not ls.hidden and family_named(ls.family).gap_to_reference:
                raise refuse(
                    f"label_sets.{ls.slug}.hidden",
                    f"'original' is hidden and {ls.slug!r} is a public new test set, whose gap "
                    "is computed against 'original': hide it too, or rename the hidden set",
                )
