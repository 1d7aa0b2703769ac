"""Figures of the demo's CIFAR-10 models computed straight from the data directory's files
with NumPy (the published labels, the human votes, the models' published predictions), never
through the server's code: what the page-truth and quick-start tests hold the pages to."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.test import Client

CIFAR10 = "cifar10"
PREDICTIONS = "cifar10/model_predictions"
NEW_TEST_SETS = {"cifar10.1-v4": "v4", "cifar10.1-v6": "v6"}
CLEANLAB_CIFAR10 = "cleanlab cross-validated (CIFAR-10)"
# docs/metrics.md §3: the corrected set's agreement threshold (3 of 5 votes)
AGREEMENT = 3


def page_text(page: str) -> str:
    """A page's visible words: tags dropped (a <wbr> splits no word), entities read, spaces
    collapsed."""
    page = re.sub(r"(?s)<(script|style|svg)\b.*?</\1>", " ", page)
    page = re.sub(r"<wbr\s*/?>", "", page)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page))).strip()


def pct(correct: int, n: int) -> str:
    return f"{100 * correct / n:.2f}%"


def competition_ranks(counts: dict[str, tuple[int, int]]) -> dict[str, int]:
    """1 + the number of models with a strictly higher accuracy (ties share the better rank),
    compared as exact fractions."""
    return {m: 1 + sum(c2 * n1 > c1 * n2 for c2, n2 in counts.values())
            for m, (c1, n1) in counts.items()}


def shift_text(value: int) -> str:
    return "▲" + str(value) if value > 0 else "▼" + str(-value) if value < 0 else "–"


@dataclass(frozen=True)
class Cifar10Truth:
    """Every CIFAR-10 demo model's (correct, n) per label set, from the raw files."""

    scores: dict[str, dict[str, tuple[int, int]]]
    pruned: int  # examples left on the corrected set
    correctable: int  # |C|: examples whose label the reviewers corrected
    predictions: dict[str, np.ndarray]  # top-1 on cifar10-test
    original: np.ndarray
    corrected: np.ndarray  # -1 where the example is left out


def corrected_labels(data_dir: Path, original: np.ndarray) -> tuple[np.ndarray, int]:
    """docs/metrics.md §3, threshold 3 of 5: a flagged example keeps its label when 3 voters
    kept it, takes the guessed one when 3 chose it (the set C), else it is left out."""
    labels = original.astype(np.int64).copy()
    correctable = 0
    for item in json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text()):
        votes = item["mturk"]
        if votes.get("given", 0) >= AGREEMENT:
            continue
        if votes.get("guessed", 0) >= AGREEMENT:
            labels[item["id"]] = item["our_guessed_label"]
            correctable += 1
        else:
            labels[item["id"]] = -1
    return labels, correctable


def cifar10_truth(data_dir: Path) -> Cifar10Truth:
    original = np.load(data_dir / "cifar10/original_labels.npy").astype(np.int64)
    corrected, correctable = corrected_labels(data_dir, original)
    kept = corrected >= 0
    counts = np.load(data_dir / "cifar10/cifar10h_counts.npy")
    plurality = counts == counts.max(axis=1, keepdims=True)
    new_labels = {slug: np.load(data_dir / f"cifar10/cifar10.1_{v}_labels.npy")
                  for slug, v in NEW_TEST_SETS.items()}
    folder = data_dir / PREDICTIONS / "original_predictions"
    models = sorted(p.name.removesuffix("_predictions.json") for p in folder.glob("*.json"))
    predictions = {m: np.array(json.loads((folder / f"{m}_predictions.json").read_text()))
                   for m in models}
    predictions[CLEANLAB_CIFAR10] = np.load(
        data_dir / "cifar10/cleanlab_cv_probabilities.npy").argmax(axis=1)
    scores: dict[str, dict[str, tuple[int, int]]] = {}
    for model, top1 in predictions.items():
        scores[model] = {
            "original": (int((top1 == original).sum()), original.size),
            "corrected": (int((top1 == corrected)[kept].sum()), int(kept.sum())),
            "cifar10h": (int(plurality[np.arange(top1.size), top1].sum()), top1.size),
        }
        for slug, v in NEW_TEST_SETS.items():
            path = data_dir / PREDICTIONS / f"{v}_predictions" / f"{model}_predictions.json"
            if path.is_file():
                new = np.array(json.loads(path.read_text()))
                scores[model][slug] = (int((new == new_labels[slug]).sum()), new.size)
    return Cifar10Truth(scores, int(kept.sum()), correctable, predictions, original,
                        corrected)


def page_get(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()
