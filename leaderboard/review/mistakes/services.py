"""The expert panel's published decisions (Vasudevan et al. 2022, the study behind ImageNet-M)
as review decisions: `manage.py import_mistake_reviews FILE --model NAME` (docs/metrics.md §11.1).

The authors' files (google-research/imagenet-mistakes: `vit3b_mistakes.json`,
`greedy_soups_mistakes.json`) list every multi-label mistake of one model with its top-1
class, the panel's category and severity. Each (image, class) pair is a settled "wrong"
decision. The import:

1. reads and checks the whole file first (`mistake_file_read`): a bad entry refuses the file,
   named with the entry and the problem, before anything is written;
2. in one transaction, records each decision (`PanelMistake`, with the file, its SHA-256 and
   the model) and, for every ImageNet label set that review revises (`real`, `multilabel`:
   those with a version here), publishes through the one panel pipeline
   (`panel.label_set_revision_publish`) a version in which the pairs it does not accept are
   judged wrong; the new version is re-scored after commit. A pair the label set accepts is
   not overwritten: it becomes a review item whose page shows both judgements. On
   `multilabel`, an image outside the annotated set is left out (a wrong-only entry would make
   an image nobody can get right).

Running it again changes nothing: the decisions are unique per (example set, model, example,
class), a version whose labels equal the current ones is not made, and items are unique per
pair.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from leaderboard.catalog.models import ExampleSet, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import label_set_version_latest
from leaderboard.review.models import (
    AUTHOR_CATEGORIES,
    AUTHOR_SEVERITIES,
    PanelMistake,
    ReviewItem,
)
from leaderboard.review.panel.services import label_set_revision_publish
from workers.scoring import revisions
from workers.scoring.datasets import IMAGENET_NUM_CLASSES, IMAGENET_SIZE
from workers.scoring.families.registry import family_named, verdicts_apply
from workers.scoring.label_set_builders import CompiledLabelSet

# The study's files name ImageNet validation images: the decisions go to the benchmark whose
# example set its bundle names this way (docs/bundles.md §4, `pattern`), whatever its slug.
FILE_PATTERN = "ILSVRC2012_val_{number:08d}.JPEG"
ENTRY_KEYS = ("top_prediction", "failure category", "failure severity")
_FILE_NAME = re.compile(r"ILSVRC2012_val_(\d{8})\.JPEG")


class MistakeFileError(Exception):
    """A panel-decision file cannot be imported; the message names the file and the entry."""


@dataclass(frozen=True)
class PanelEntry:
    """One checked entry of a panel-decision file."""

    file_name: str
    example: int  # 0-based canonical index
    class_id: int  # the model's top-1 prediction, judged wrong
    category: str  # MistakeCategory value
    severity: str  # Severity value
    source_category: str  # as the file spells them
    source_severity: str


def _entry(source: str, key: Any, value: Any) -> PanelEntry:
    where = f"{source}: entry {key!r}"
    match = _FILE_NAME.fullmatch(key) if isinstance(key, str) else None
    if match is None or not 1 <= int(match.group(1)) <= IMAGENET_SIZE:
        raise MistakeFileError(f"{where}: not an ImageNet validation file name "
                               "(ILSVRC2012_val_00000001.JPEG ... ILSVRC2012_val_00050000.JPEG)")
    if not isinstance(value, dict):
        raise MistakeFileError(f"{where}: expected an object with {', '.join(ENTRY_KEYS)}, "
                               f"got {type(value).__name__}")
    missing = [k for k in ENTRY_KEYS if k not in value]
    if missing:
        raise MistakeFileError(f"{where}: missing {', '.join(map(repr, missing))}")
    unknown = sorted(set(value) - set(ENTRY_KEYS))
    if unknown:
        raise MistakeFileError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                               f"(expected {', '.join(ENTRY_KEYS)})")
    predicted = value["top_prediction"]
    try:
        class_id = operator.index(predicted)
    except TypeError:
        class_id = -1
    if isinstance(predicted, bool) or not 0 <= class_id < IMAGENET_NUM_CLASSES:
        raise MistakeFileError(f"{where}: top_prediction {predicted!r} is not a class id "
                               f"0..{IMAGENET_NUM_CLASSES - 1}")
    names: dict[str, Mapping[str, str]] = {"failure category": AUTHOR_CATEGORIES,
                                           "failure severity": AUTHOR_SEVERITIES}
    found: dict[str, str] = {}
    for name, known in names.items():
        text = value[name]
        choice = known.get(text.strip().lower()) if isinstance(text, str) else None
        if choice is None:
            spelled = sorted({k.capitalize() for k in known})
            raise MistakeFileError(f"{where}: unknown {name} {text!r} "
                                   f"(known: {', '.join(spelled)})")
        found[name] = str(choice)
    return PanelEntry(file_name=key, example=int(match.group(1)) - 1, class_id=class_id,
                      category=found["failure category"], severity=found["failure severity"],
                      source_category=value["failure category"],
                      source_severity=value["failure severity"])


def mistake_file_read(path: Path) -> tuple[list[PanelEntry], str]:
    """Every entry of a panel-decision file, checked, in file-name order, and the file's
    SHA-256; raises MistakeFileError naming the file, the entry and the problem."""
    path = Path(path)
    if not path.is_file():
        raise MistakeFileError(f"no file {path}")
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MistakeFileError(f"{path.name}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MistakeFileError(f"{path.name}: expected an object of file name -> decision, got "
                               f"{type(data).__name__}")
    if not data:
        raise MistakeFileError(f"{path.name}: no entries")
    entries = [_entry(path.name, key, value) for key, value in data.items()]
    entries.sort(key=lambda e: e.example)
    return entries, hashlib.sha256(raw).hexdigest()


@dataclass
class LabelSetOutcome:
    """What the import did to one label set."""

    label_set: str  # slug
    version: int  # the new version's number, or the current one's when unchanged
    created: bool
    judged_wrong: int = 0  # pairs this version newly judges wrong
    already_wrong: int = 0  # pairs the label set already judged wrong
    accepted: int = 0  # pairs it accepts: review items instead
    items_created: int = 0  # of those, items that did not exist yet
    items_decided: int = 0  # of those, items our reviewers had already decided (left as is)
    not_annotated: int = 0  # multilabel: images outside the annotated set, left out


@dataclass
class MistakeImportResult:
    model: str
    source: str
    decisions: int  # entries in the file
    recorded: int  # decisions new to the server
    updated: int  # decisions whose category or severity changed
    label_sets: list[LabelSetOutcome] = field(default_factory=list)


def _decisions_record(*, example_set: ExampleSet, entries: list[PanelEntry], model: str,
                      source: str, sha256: str) -> tuple[int, int]:
    """Create or update one PanelMistake per entry; (created, updated)."""
    existing = {(m.example_index, m.class_id): m for m in PanelMistake.objects.filter(
        example_set=example_set, model=model)}
    new, changed = [], []
    for entry in entries:
        row = existing.get((entry.example, entry.class_id))
        values = {"severity": entry.severity, "category": entry.category,
                  "source_severity": entry.source_severity,
                  "source_category": entry.source_category, "source": source,
                  "source_sha256": sha256}
        if row is None:
            new.append(PanelMistake(example_set=example_set, model=model,
                                    example_index=entry.example, class_id=entry.class_id,
                                    **values))
        elif (row.severity, row.category) != (entry.severity, entry.category):
            for name, value in values.items():
                setattr(row, name, value)
            changed.append(row)
    PanelMistake.objects.bulk_create(new, batch_size=500)
    PanelMistake.objects.bulk_update(changed, ["severity", "category", "source_severity",
                                               "source_category", "source", "source_sha256"])
    return len(new), len(changed)


def _revise(label_set: LabelSet, entries: list[PanelEntry], outcome: LabelSetOutcome,
            conflicts: list[PanelEntry], parent_hash: list[str], provenance: str) -> Any:
    """The `revise` step of the panel pipeline for one label set: judge wrong every pair the
    current version (seen under the label set's lock) does not accept; fill `outcome`, the
    accepted pairs (`conflicts`) and the current version's hash (`parent_hash`)."""

    def revise(current: CompiledLabelSet) -> tuple[CompiledLabelSet, list[dict[str, Any]]]:
        arrays, c = current.arrays, current.num_classes
        examples = np.array([e.example for e in entries], dtype=np.int64)
        keys = examples * c + np.array([e.class_id for e in entries], dtype=np.int64)
        accepted = np.isin(keys, arrays["accepted_keys"])
        wrong = np.isin(keys, arrays["wrong_keys"])
        eligible = ~accepted
        if family_named(label_set.family).verdicts_need_annotation:
            annotated = np.asarray(arrays["annotated"], dtype=bool)[examples]
            outcome.not_annotated = int((eligible & ~annotated).sum())
            eligible &= annotated
        conflicts[:] = [e for e, a in zip(entries, accepted.tolist(), strict=True) if a]
        fresh = eligible & ~wrong
        outcome.accepted = len(conflicts)
        outcome.already_wrong = int((eligible & wrong).sum())
        outcome.judged_wrong = int(fresh.sum())
        judged = [e for e, ok in zip(entries, fresh.tolist(), strict=True) if ok]
        verdicts = [revisions.Verdict(e.example, e.class_id, "wrong") for e in judged]
        settled = [{"item": None, "example": e.example, "class": e.class_id, "verdict": "wrong",
                    "problematic": False, "severity": e.severity, "category": e.category,
                    "source": provenance} for e in judged]
        parent_hash[:] = [current.content_hash]
        return verdicts_apply(current, verdicts), settled

    return revise


def _conflict_items(label_set: LabelSet, conflicts: list[PanelEntry],
                    outcome: LabelSetOutcome) -> None:
    """One review item per accepted pair the panel judged wrong (unique per pair: an item that
    exists is reused; one our reviewers decided stays decided)."""
    if not conflicts:
        return
    pairs = {(e.example, e.class_id) for e in conflicts}
    examples = sorted({e for e, _ in pairs})

    def present() -> dict[tuple[int, int], str]:
        rows = ReviewItem.objects.filter(label_set=label_set, example_index__in=examples)
        return {(e, c): s for e, c, s in rows.values_list("example_index", "class_id", "status")
                if (e, c) in pairs}

    before = present()
    ReviewItem.objects.bulk_create(
        [ReviewItem(label_set=label_set, example_index=e, class_id=c) for e, c in sorted(pairs)
         if (e, c) not in before], ignore_conflicts=True, batch_size=500)
    outcome.items_created = len(present()) - len(before)
    outcome.items_decided = sum(1 for s in before.values() if s == ReviewItem.Status.DECIDED)


def mistake_reviews_import(*, path: Path, model: str,
                           author: User | None = None) -> MistakeImportResult:
    """Import one panel-decision file as the decisions on `model`'s mistakes (see the module
    docstring); raises MistakeFileError, with nothing stored, when it cannot."""
    model = (model or "").strip()
    if not model or len(model) > 100:
        raise MistakeFileError("--model must name the model whose mistakes the file reviews "
                               "(1 to 100 characters), e.g. ViT-3B")
    entries, sha256 = mistake_file_read(path)
    source = Path(path).name
    example_set = ExampleSet.objects.filter(
        naming=ExampleSet.Naming.PATTERN, name_pattern=FILE_PATTERN, first_number=1,
    ).select_related("benchmark").order_by("pk").first()
    if example_set is None:
        raise MistakeFileError(f"{source}: no benchmark here has the ImageNet validation "
                               f"images ({FILE_PATTERN}) the decisions are on "
                               "(manage.py load_benchmarks)")
    benchmark = example_set.benchmark
    label_sets = [ls for ls in LabelSet.objects.filter(
        benchmark=benchmark, example_set=example_set, reviewable=True
    ).order_by("slug") if label_set_version_latest(label_set=ls) is not None]
    if not label_sets:
        raise MistakeFileError(f"{source}: no reviewable label set of "
                               f"{benchmark.slug} has a version here to record the decisions in")
    provenance = f"{source} ({model})"
    note = (f"Expert panel's review of {model}'s mistakes (Vasudevan et al. 2022), imported "
            f"from {source} (sha256 {sha256[:12]}).")
    with transaction.atomic():
        recorded, updated = _decisions_record(example_set=example_set, entries=entries, model=model,
                                              source=source, sha256=sha256)
        result = MistakeImportResult(model=model, source=source, decisions=len(entries),
                                     recorded=recorded, updated=updated)
        for label_set in label_sets:
            outcome = LabelSetOutcome(label_set=label_set.slug, version=0, created=False)
            conflicts: list[PanelEntry] = []
            parent_hash: list[str] = []
            version: LabelSetVersion = label_set_revision_publish(
                label_set=label_set, author=author, note=note, skip_unchanged=True,
                revise=_revise(label_set, entries, outcome, conflicts, parent_hash, provenance))
            outcome.version = int(version.number)
            outcome.created = version.content_hash != parent_hash[0]
            _conflict_items(label_set, conflicts, outcome)
            result.label_sets.append(outcome)
    return result
