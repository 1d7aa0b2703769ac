"""One `[[label_sets]]` table of a manifest -> its LabelSetDef(s) (docs/bundles.md §5).

What every label set declares (slug, kind, example set, names, hidden and release) is read
here; the rest of the table is its family's (families/*.py `parse`), found by the kind and,
where several families share a kind, the `layout`. A table may declare several label sets (a
validated one per agreement threshold): every one but the first gets its family's slug
suffix (ImageNet's `corrected-t4`), and its family fills the name's placeholders.
"""

from __future__ import annotations

from typing import Any

from ..families.registry import BUNDLE_KINDS, family_for_bundle_kind, layouts_of
from .fields import Table
from .model import DEFAULT_RELEASE, RELEASES, LabelSetDef


def parse_label_set(table: Table, *, main_example_set: str) -> list[LabelSetDef]:
    slug = table.slug("slug")
    table.prefix = f"label_sets.{slug}"
    kind = table.choice("kind", BUNDLE_KINDS)
    layouts = layouts_of(kind)
    family = family_for_bundle_kind(kind, table.choice("layout", layouts) if layouts else None)
    common: dict[str, Any] = {
        "slug": slug,
        "kind": kind,
        "family": family.name,
        "example_set": table.slug("example_set", main_example_set),
        "name": table.string("name"),
        "description": table.string("description", ""),
        "citation": table.string("citation", ""),
        **_hidden(table),
    }
    variants = family.parse(table)
    table.done()
    return [LabelSetDef(**{**common, "fields": fields,
                           "slug": f"{slug}-{fields.slug_suffix}" if fields.slug_suffix else slug,
                           "name": fields.named(common["name"]),
                           "description": fields.named(common["description"])})
            for fields in variants]


def _hidden(table: Table) -> dict[str, Any]:
    """`hidden`, `release` and `step` of a label set of any kind (docs/bundles.md §5.7);
    the rules across label sets (files, headline, references) are the manifest's."""
    if not table.boolean("hidden", False):
        for key in ("release", "step", "split"):
            if table.has(key):
                raise table.error(
                    "unknown_field", key,
                    f"{key!r} is only for a hidden label set: give hidden = true or leave "
                    f"{key} out",
                )
        return {}
    release = table.choice("release", RELEASES, DEFAULT_RELEASE)
    step = None
    if table.has("step"):
        if release != "ladder":
            raise table.error(
                "unknown_field", "step",
                f"'step' is the step size of release 'ladder' only, not of {release!r}",
            )
        step = table.number("step")
        if not 0 < step < 1:
            raise table.error(
                "bad_value", "step", f"the ladder's step must be between 0 and 1, got {step}"
            )
    return {"hidden": True, "release": release, "step": step, **_split(table)}


def _split(table: Table) -> dict[str, Any]:
    """`split`: the hidden label set's private part (docs/bundles.md §5.7), scored at once and
    shown only when staff reveal it: `{ private_fraction = F, seed = S }` (a seeded random
    choice of round(F * n) examples) or `{ private = "file.json" }` (their indices)."""
    split = table.table("split", None)
    if split is None:
        return {}
    out: dict[str, Any] = {}
    if split.has("private"):
        for key in ("private_fraction", "seed"):
            if split.has(key):
                raise split.error("bad_value", key,
                                  f"give either private or private_fraction and seed, not {key}")
        out["split_private"] = split.path("private")
    else:
        fraction = split.number("private_fraction")
        if not 0 < fraction < 1:
            raise split.error("bad_value", "private_fraction",
                              f"the private part's fraction must be between 0 and 1, got "
                              f"{fraction}")
        out["split_fraction"] = fraction
        out["split_seed"] = split.integer("seed", minimum=0)
    split.done()
    return out
