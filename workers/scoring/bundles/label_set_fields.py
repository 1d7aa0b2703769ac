"""One `[[label_sets]]` table of a manifest -> its LabelSetDef(s) (docs/bundles.md §5).

A `validated` table with several thresholds becomes one label set per threshold: the first
keeps the slug, the others get `<slug>-t<threshold>` (ImageNet's `corrected-t4`), and
`{threshold}` in the name and description is replaced by each one's threshold.
"""

from __future__ import annotations

from typing import Any

from ..families.registry import (
    BUNDLE_KINDS,
    MULTI_LAYOUTS,
    family_for_bundle_kind,
    manifest_shape,
)
from .fields import Table
from .model import (
    BUILTIN_COLLAPSE,
    DEFAULT_RELEASE,
    RELEASES,
    VOTE_IDS,
    VOTE_LABELS,
    VOTE_MEANINGS,
    LabelSetDef,
    VoteFileDef,
)

# docs/metrics.md §3.1: agreement thresholds of five votes; non-errors need 3 for any of them.
THRESHOLDS = (3, 4, 5)


def parse_label_set(table: Table, *, main_example_set: str) -> list[LabelSetDef]:
    slug = table.slug("slug")
    table.prefix = f"label_sets.{slug}"
    kind = table.choice("kind", BUNDLE_KINDS)
    shape = manifest_shape(kind)
    common: dict[str, Any] = {
        "slug": slug,
        "kind": kind,
        "example_set": table.slug("example_set", main_example_set),
        "name": table.string("name"),
        "description": table.string("description", ""),
        "citation": table.string("citation", ""),
        **_hidden(table),
    }
    if shape == "labels":
        common["labels"] = table.path("labels")
        common["order"] = table.path("order", None)
        if family_for_bundle_kind(kind).gap_to_reference:
            common["pairs_with"] = table.slug("pairs_with", "original")
    elif shape == "validated":
        return _validated(table, common)
    elif shape == "multi":
        common["original"] = table.slug("original", "original")
        common["layout"] = layout = table.choice("layout", MULTI_LAYOUTS)
        if layout == "real":
            common["accepted"] = table.path("accepted")
            common["judged"] = table.path("judged")
        else:
            common["annotations"] = table.path("annotations", None)
            common["annotations_setting"] = table.string("annotations_setting", None)
            _exactly_one(table, "annotations", "annotations_setting")
            collapse = table.string("collapse", "none")
            if collapse not in (BUILTIN_COLLAPSE, "none"):
                collapse = table.path("collapse")
            common["collapse"] = collapse
    elif shape == "subset":
        common["of"] = table.slug("of")
        common["list_field"] = table.string("list_field", None)
        common["list_file"] = table.path("list_file", None)
        _exactly_one(table, "list_field", "list_file")
    else:  # soft
        common["probabilities"] = table.path("probabilities", None)
        common["counts"] = table.path("counts", None)
        _exactly_one(table, "probabilities", "counts")
    table.done()
    return [LabelSetDef(**common)]


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


def _exactly_one(table: Table, first: str, second: str) -> None:
    if table.has(first) == table.has(second):
        raise table.error("bad_value", first, f"give exactly one of {first} and {second}")


def _validated(table: Table, common: dict[str, Any]) -> list[LabelSetDef]:
    original = table.slug("original", "original")
    thresholds = table.int_list("thresholds", (3,))
    if not thresholds:
        raise table.error("bad_value", "thresholds", "declare at least one threshold")
    for threshold in thresholds:
        if threshold not in THRESHOLDS:
            raise table.error(
                "bad_value", "thresholds", f"a threshold is 3, 4 or 5 of 5 votes, got {threshold}"
            )
    if len(set(thresholds)) != len(thresholds):
        raise table.error("bad_value", "thresholds", "a threshold is declared twice")
    votes = _vote_file(table.table("votes"))
    table.done()
    out = []
    for i, threshold in enumerate(thresholds):
        fields = dict(common)
        if i:
            fields["slug"] = f"{common['slug']}-t{threshold}"
        for key in ("name", "description"):
            fields[key] = common[key].replace("{threshold}", str(threshold))
        out.append(LabelSetDef(**fields, original=original, votes=votes, threshold=threshold))
    return out


def _vote_file(table: Table) -> VoteFileDef:
    fields: dict[str, Any] = {
        "file": table.path("file"),
        "ids": table.choice("ids", VOTE_IDS, "index"),
        "labels": table.choice("labels", VOTE_LABELS, "id"),
    }
    if fields["ids"] == "name":
        fields["id_prefix"] = table.string("id_prefix", "")
        fields["id_suffix"] = table.string("id_suffix", "")
    for key in ("id_field", "given_field", "guessed_field", "votes_field"):
        if table.has(key):
            fields[key] = table.string(key)
    vocabulary = table.table("vocabulary")
    pairs = []
    for key in vocabulary.data:
        pairs.append((key, vocabulary.choice(key, VOTE_MEANINGS)))
    vocabulary.done()
    meanings = {meaning for _, meaning in pairs}
    for needed in ("original", "guessed"):
        if needed not in meanings:
            raise vocabulary.error(
                "bad_value", "", f"no vote key means {needed!r}: the categories need one"
            )
    table.done()
    return VoteFileDef(vocabulary=tuple(pairs), **fields)
