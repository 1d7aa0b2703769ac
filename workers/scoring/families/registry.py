"""Every label-set family, by name and by the bundle kind it compiles from (docs/families.md).

A new family is one module of this package that declares `FAMILY`: it is found here by
walking the package, so nothing else lists it; the registry test
(tests/workers/scoring/test_families.py) checks that it declares every part.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ..label_set_builders import CompiledLabelSet
from .base import Family


def _discover() -> dict[str, Family]:
    found: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(_package_path()),
                       key=lambda i: i.name):
        module = importlib.import_module(f"{__package__}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if isinstance(family, Family):
            if family.name in found:
                raise RuntimeError(f"two families named {family.name!r}")
            found[family.name] = family
    return found


def _package_path() -> list[str]:
    return list(importlib.import_module(__package__ or "").__path__)


FAMILIES: MappingProxyType[str, Family] = MappingProxyType(_discover())
_BY_BUNDLE_KIND = {family.bundle_kind: family for family in FAMILIES.values()}
# A bundle's `multi` label sets name their family by layout (docs/bundles.md §5.3).
MULTI_LAYOUTS = tuple(f.bundle_kind for f in FAMILIES.values() if f.manifest_shape == "multi")
# The bundle kinds a manifest may declare: `multi` (with a layout) and every other family's.
BUNDLE_KINDS = tuple(sorted({"multi"} | {f.bundle_kind for f in FAMILIES.values()
                                         if f.manifest_shape != "multi"}))


class UnknownFamilyError(LookupError):
    """No family has this name or bundle kind."""


def family_named(name: str) -> Family:
    """The family stored under `name` (LabelSet.family, a record's `family`)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(f"no label-set family {name!r} (known: "
                                 f"{', '.join(FAMILIES)})") from None


def family_for_bundle_kind(kind: str, layout: str | None = None) -> Family:
    """The family a bundle's label set compiles to: by its kind, or for `multi` its layout."""
    key = layout if kind == "multi" and layout else kind
    try:
        return _BY_BUNDLE_KIND[key]
    except KeyError:
        raise UnknownFamilyError(f"no label-set family for bundle kind {key!r}") from None


def manifest_shape(kind: str) -> str:
    """How a bundle kind's table reads (base.MANIFEST_SHAPES): `multi`, or its family's."""
    return "multi" if kind == "multi" else family_for_bundle_kind(kind).manifest_shape


def reference_family() -> Family:
    """The family of the labels every other label set is compared with."""
    return next(f for f in FAMILIES.values() if f.reference)


def missing_arrays(ls: CompiledLabelSet) -> list[str]:
    """The arrays its family's builder gives now that this compiled set (an older build)
    lacks: the family's `upgrade` adds them."""
    return sorted(set(family_named(ls.family).arrays) - set(ls.arrays))


def verdicts_apply(ls: CompiledLabelSet, verdicts: Sequence[Any]) -> CompiledLabelSet:
    """The next version of `ls` after settled novel-prediction verdicts, as its family takes
    them in; a ValueError for a family that review does not revise."""
    family = family_named(ls.family)
    if family.apply_verdicts is None:
        raise ValueError(f"label set {ls.slug!r} is of family {family.name!r}, which "
                         "novel-prediction review does not revise")
    return family.apply_verdicts(ls, verdicts)


def ground_truth_apply(ls: CompiledLabelSet, votes: Sequence[Any]) -> CompiledLabelSet:
    """The next version of `ls` after settled ground-truth reviews; a ValueError for a family
    without ground-truth review."""
    family = family_named(ls.family)
    if family.apply_ground_truth is None:
        raise ValueError(f"label set {ls.slug!r} is of family {family.name!r}, which has no "
                         "ground-truth review")
    return family.apply_ground_truth(ls, votes)
