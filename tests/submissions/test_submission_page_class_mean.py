"""A submission's page on the multi-label set: the class mean as the headline, labelled with
its classes and its normal-approximation interval, the pooled share of images beside it with
its Clopper-Pearson interval (docs/metrics.md §1.7, §5.1). Expected cells are computed here
from the file written here and the real original labels."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from scipy.stats import binomtest, norm

from leaderboard.catalog.selectors import benchmark_get
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from leaderboard.templatetags.leaderboard_extras import percent
from tests import factories
from tests.multilabel_three_classes import three_classes_load
from tests.pages import score_tables

pytestmark = pytest.mark.django_db



def test_it_shows_the_multilabel_class_mean_and_the_pooled_share(
    client: Client, run_load_benchmarks: Callable[..., Any], catalog_settings: Settings,
    data_dir: Path, tmp_path: Path,
) -> None:
    world = three_classes_load(data_dir=data_dir, tmp_path=tmp_path, settings=catalog_settings,
                               run_load_benchmarks=run_load_benchmarks)
    labels, annotated, a, b, c = world.labels, world.annotated, world.labels[0], world.b, world.c
    top1 = np.array(labels, dtype=np.int64)
    wrong = annotated[:10] + [b]  # class A: 40 of 50 right; class B wrong; class C right
    top1[wrong] = (top1[wrong] + 1) % 1000
    owner = factories.user_create("mona")
    submission = submission_create(
        owner=owner, model_name="m", benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": factories.upload_npy(top1, tmp_path, "m.npy")})
    assert score_submission.apply(args=[submission.pk], task_id="page").get() == "scored"

    client.force_login(owner)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    tables, _ = score_tables(page)
    assert ("(Clopper-Pearson; a t-interval for means; the normal approximation for means over "
            "classes, whose count is of examples)") in page

    mean = (0.8 + 0 + 1) / 3  # three classes; pooled: 41 of 52 images
    # only class A varies: 0.8 * 0.2 / 50
    half = float(norm.ppf(0.975)) * math.sqrt(0.8 * 0.2 / 50) / 3
    pooled = binomtest(41, 52).proportion_ci(confidence_level=0.95, method="exact")
    assert tables["multilabel"][:2] == [
        ["Multi-label accuracy (top-1) (mean over 3 classes; normal-approximation interval)",
         f"{percent(mean)}%", "41 / 52", f"{percent(mean - half)}–{percent(mean + half)}"],
        ["Pooled over images (share of the evaluated images)", f"{percent(41 / 52)}%",
         "41 / 52", f"{percent(pooled.low)}–{percent(pooled.high)}"],
    ]
    organism = {a, labels[b], labels[c]} & (set(range(398)) | {981, 982, 983, 985, 986}
                                            | set(range(991, 998)))
    rows = {row[0].split(" (")[0]: row for row in tables["multilabel"][2:]}
    assert rows["With class collapse"][0] == \
        "With class collapse (mean over 3 classes; normal-approximation interval)"
    shown = {name: rows[name][0] for name in ("Organism classes", "Object classes")
             if name in rows}
    expected = {f"{name}": f"{name} (mean over {n} classes; normal-approximation interval)"
                for name, n in (("Organism classes", len(organism)),
                                ("Object classes", 3 - len(organism))) if n}
    assert shown == expected
