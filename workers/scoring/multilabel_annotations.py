"""The multi-label ImageNet annotations (human_accuracy_v3.0.0.json layout) and ImageNet-M.

Layout (MANIFEST.md): {"initial_annots": {file name: {"correct": [wnid], "wrong": [...],
"unclear": [...]}}, "problematic_images": {file name: ...}, "imagenet_m": [68 file names]};
keys are absent where a list is empty; names not starting with ILSVRC2012_val_ belong to
ImageNetV2 and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .datasets import IMAGENET_NUM_CLASSES, IMAGENET_SIZE, DataError, imagenet_index

VAL_PREFIX = "ILSVRC2012_val_"

# WordNet: the ImageNet classes that descend from organism.n.01 are the 398 animals
# (0..397), three people (981 ballplayer, 982 groom, 983 scuba diver), two plants
# (985 daisy, 986 yellow lady's slipper) and the seven fungi (991..997): 410 classes, the
# organism/object split of Shankar et al. (410 / 590). Seeds and fruits (984, 987..990, 998)
# are natural objects, not organisms.
ORGANISM_CLASSES = np.array(
    list(range(0, 398)) + [981, 982, 983, 985, 986] + list(range(991, 998)), dtype=np.int64
)

# Class-collapse mapping (Vasudevan et al. 2022, appendix G): accepted label -> predictions
# that also count as correct.
_ONE_WAY = [(250, 248), (249, 248), (385, 101), (386, 101), (504, 968), (482, 848), (435, 876)]
_BOTH_WAYS = [(836, 837), (638, 639), (657, 744), (620, 681), (664, 782)]
_EQUIVALENT_GROUPS = [(356, 357, 358, 359)]


def collapse_pairs() -> list[tuple[int, int]]:
    """(accepted label, also-correct prediction) pairs of the class-collapse mapping."""
    pairs = list(_ONE_WAY)
    pairs += _BOTH_WAYS + [(b, a) for a, b in _BOTH_WAYS]
    for group in _EQUIVALENT_GROUPS:
        pairs += [(a, b) for a in group for b in group if a != b]
    return sorted(set(pairs))


def organism_mask() -> np.ndarray:
    mask = np.zeros(IMAGENET_NUM_CLASSES, dtype=bool)
    mask[ORGANISM_CLASSES] = True
    return mask


def original_labels_array(original: np.ndarray) -> np.ndarray:
    """The original labels as a multi-label set stores them (int16, one per image)."""
    labels = np.asarray(original)
    top = IMAGENET_NUM_CLASSES - 1
    if labels.shape != (IMAGENET_SIZE,) or labels.min() < 0 or labels.max() > top:
        raise DataError(f"expected {IMAGENET_SIZE} original labels in 0..{top}")
    return labels.astype(np.int16)


def _keys(pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    array = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
    return np.unique(array[:, 0] * IMAGENET_NUM_CLASSES + array[:, 1])


def collapse_keys(accepted_keys: np.ndarray) -> np.ndarray:
    """Accepted keys widened by the class-collapse mapping."""
    examples, labels = np.divmod(accepted_keys, IMAGENET_NUM_CLASSES)
    extra = [accepted_keys]
    for source, target in collapse_pairs():
        hit = examples[labels == source]
        extra.append(hit * IMAGENET_NUM_CLASSES + target)
    return np.unique(np.concatenate(extra))


def _val_entries(mapping: Mapping[str, Any]) -> Iterable[tuple[int, Any]]:
    for name, value in mapping.items():
        if name.startswith(VAL_PREFIX):
            yield imagenet_index(name), value


def build_multilabel_arrays(
    raw: Mapping[str, Any], *, original: np.ndarray, wnids: Sequence[str], imagenet_m: bool
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays for the `multilabel` set (annotated minus problematic) or for ImageNet-M."""
    if not isinstance(raw, Mapping) or "initial_annots" not in raw:
        raise DataError("multi-label file has no 'initial_annots' (human_accuracy_v3.0.0 layout)")
    cid = {wnid: i for i, wnid in enumerate(wnids)}
    lists: dict[str, list[tuple[int, int]]] = {"correct": [], "wrong": [], "unclear": []}
    annotated = np.zeros(IMAGENET_SIZE, dtype=bool)
    for index, annots in _val_entries(raw["initial_annots"]):
        annotated[index] = True
        for judgement, pairs in lists.items():
            for wnid in annots.get(judgement, []):
                if wnid not in cid:
                    raise DataError(
                        f"multi-label file: unknown WordNet id {wnid!r} "
                        f"for {VAL_PREFIX}{index + 1:08d}.JPEG"
                    )
                pairs.append((index, cid[wnid]))
    problematic = np.zeros(IMAGENET_SIZE, dtype=bool)
    for index, _ in _val_entries(raw.get("problematic_images", {})):
        problematic[index] = True
    correct, wrong, unclear = (_keys(lists[k]) for k in ("correct", "wrong", "unclear"))
    # Scoring reads accepted = correct + unclear; correct and unclear are kept apart too so
    # that a version can be exported in the file's layout (families/multilabel.py).
    accepted = np.union1d(correct, unclear)
    judged = {
        "accepted_keys": accepted,
        "correct_keys": correct,
        "unclear_keys": unclear,
        "wrong_keys": wrong,
    }
    if imagenet_m:
        names = [n for n in raw.get("imagenet_m", []) if n.startswith(VAL_PREFIX)]
        mask = np.zeros(IMAGENET_SIZE, dtype=bool)
        mask[[imagenet_index(n) for n in names]] = True
        meta: dict[str, Any] = {"included": int(mask.sum())}
        # Only the listed images' judgements: a change to the file elsewhere must not make a
        # new ImageNet-M version (its content hash would change with nothing scored moving).
        listed = {name: keys[mask[keys // IMAGENET_NUM_CLASSES]] for name, keys in judged.items()}
        return {"mask": mask, **listed}, meta
    mask = annotated & ~problematic
    organism_examples = organism_mask()[original.astype(np.int64)]
    arrays = {
        "mask": mask,
        **judged,
        "collapsed_keys": collapse_keys(accepted),
        "organism": organism_examples,
        # the class each image is grouped under in the class-mean accuracy (docs/metrics.md §5.1)
        "original_labels": original_labels_array(original),
        # had an initial_annots entry; the problematic images are annotated & ~mask
        "annotated": annotated,
    }
    meta = {
        "annotated": int(annotated.sum()),
        "problematic": int((annotated & problematic).sum()),
        "included": int(mask.sum()),
        "organism_included": int((mask & organism_examples).sum()),
    }
    return arrays, meta
