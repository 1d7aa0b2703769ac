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
_BY_BUNDLE_KIND = {(family.bundle_kind, family.layout): family for family in FAMILIES.values()}
# The kinds a manifest may declare (docs/bundles.md §5), each of one family or of several
# told apart by their `layout` (`multi`: docs/bundles.md §5.3).
BUNDLE_KINDS = tuple(sorted({f.bundle_kind for f in FAMILIES.values()}))


class UnknownFamilyError(LookupError):
    """No family has this name or bundle kind."""


def family_named(name: str) -> Family:
    """The family stored under `name` (LabelSet.family, a record's `family`)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(f"no label-set family {name!r} (known: "
                                 f"{', '.join(FAMILIES)})") from None


def layouts_of(kind: str) -> tuple[str, ...]:
    """The layouts that tell apart the families of a bundle kind; () for a kind of one."""
    return tuple(sorted(layout for k, layout in _BY_BUNDLE_KIND if k == kind and layout))


def family_for_bundle_kind(kind: str, layout: str | None = None) -> Family:
    """The family a bundle's label set compiles to: by its kind, and its layout where the
    kind has several."""
    try:
        return _BY_BUNDLE_KIND[(kind, layout if layouts_of(kind) else None)]
    except KeyError:
        named = f"{kind!r}" + (f" (layout {layout!r})" if layout else "")
        raise UnknownFamilyError(f"no label-set family for bundle kind {named}") from None


def reference_family() -> Family:
    """The family of the labels every other label set is compared with."""
    return next(f for f in FAMILIES.values() if f.reference)


def correctable_family() -> Family:
    """The family of the labels corrected on a correctable set C (its gallery section is
    every example of C: docs/families.md), which the noise-prevalence curves and the
    gallery's matches are drawn from."""
    return next(f for f in FAMILIES.values() if f.gallery == "correctable")


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
