"""How good an audit's flags are: precision and recall against the examples that human
validators (Northcutt et al. 2021, the cleanlab/label-errors MTurk files) confirmed wrong.

Definitions. The validation file lists the examples cleanlab flagged and 5 workers checked.
An example is *checked* if it is in the file (any category). It is a *validated error* if its
category under `corrected_categories(votes, threshold)` is not "non_error", i.e. fewer than 3
of 5 workers kept the given label (correctable, multi-label, neither or non-agreement).
Recall can only be measured against these checked examples: an error nobody was shown is
counted as clean, so recall is over the validated errors and `precision` over all flags is a
lower bound; `precision_checked` (over flags that humans checked) is the fairer figure.

Indices are 0-based canonical example indices, as the benchmark's bundle names them (the
ImageNet file's 1-based file numbers are file number - 1; IMDB's names go through its
index-to-name file), the same reading that builds its corrected label sets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.scoring import datasets
from workers.scoring.bundles import BundleData, builtin_bundle, builtin_slugs
from workers.scoring.families.corrected import ValidatedFields, vote_records
from workers.scoring.label_set_builders import corrected_categories


@dataclass(frozen=True)
class ValidatedErrors:
    """`errors` (validated label errors) is a subset of `checked` (every example humans saw);
    `categories` gives each checked example's category; indices are 0-based canonical."""

    errors: frozenset[int]
    checked: frozenset[int]
    categories: Mapping[int, str]
    threshold: int

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for category in self.categories.values():
            out[category] = out.get(category, 0) + 1
        return out


def validated_errors(
    records: Iterable[datasets.MturkRecord], *, threshold: int = 3
) -> ValidatedErrors:
    """Validated errors and checked examples from already-read vote records (0-based
    indices, as a bundle's vote reader returns them: families/corrected.py `vote_records`)."""
    if not 3 <= threshold <= 5:
        raise ValueError(f"agreement threshold must be 3, 4 or 5, got {threshold}")
    categories: dict[int, str] = {}
    for record in records:
        if record.index in categories:
            raise datasets.DataError(f"example {record.index} appears twice in the vote file")
        categories[record.index] = corrected_categories(record.votes, threshold)
    errors = frozenset(i for i, c in categories.items() if c != "non_error")
    return ValidatedErrors(errors, frozenset(categories), categories, threshold)


def load_validated_errors(
    data_dir: Path, benchmark: str, *, threshold: int = 3
) -> ValidatedErrors:
    """`validated_errors` of a built-in benchmark's human-validation vote file, read through
    its bundle (the first label set of kind `validated` on the main example set:
    docs/bundles.md §5.2, whose vocabulary and example naming give 0-based indices).
    ValueError (a BundleError for a bad file) when it has none."""
    try:
        bundle = builtin_bundle(benchmark)
    except KeyError:
        raise ValueError(f"no human validation file for {benchmark!r}: not a built-in "
                         f"benchmark ({', '.join(builtin_slugs())})") from None
    validated = next((ls for ls in bundle.label_sets if isinstance(ls.fields, ValidatedFields)
                      and ls.example_set == bundle.main_example_set), None)
    if validated is None:
        raise ValueError(f"no human validation file for {benchmark!r}: its bundle has no "
                         "validated label set")
    records = vote_records(BundleData(bundle, data_dir=Path(data_dir)), validated)
    return validated_errors(records, threshold=threshold)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def precision_recall(
    flagged: Iterable[int],
    validated_errors: Collection[int],
    checked: Collection[int] | None = None,
) -> dict[str, Any]:
    """Precision and recall of `flagged` against `validated_errors` (with counts).

    precision = |flagged & errors| / |flagged|; recall = |flagged & errors| / |errors|;
    with `checked`, precision_checked = |flagged & errors| / |flagged & checked|. A ratio
    whose denominator is 0 is None (JSON null), never a made-up 0 or 1.
    """
    flags = {int(i) for i in flagged}
    errors = {int(i) for i in validated_errors}
    hits = len(flags & errors)
    out: dict[str, Any] = {
        "flagged": len(flags),
        "validated_errors": len(errors),
        "true_positives": hits,
        "precision": _ratio(hits, len(flags)),
        "recall": _ratio(hits, len(errors)),
    }
    if checked is not None:
        seen = {int(i) for i in checked}
        if not errors <= seen:
            raise ValueError("every validated error must be among the checked examples")
        flagged_checked = len(flags & seen)
        out["checked"] = len(seen)
        out["flagged_checked"] = flagged_checked
        out["precision_checked"] = _ratio(hits, flagged_checked)
    return out
