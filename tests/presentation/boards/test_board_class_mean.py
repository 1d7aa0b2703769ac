"""The ImageNet board on the multi-label set: cells are class means, rows ranked by them, and
the column says its intervals are normal approximations (docs/metrics.md §1.7, §5.1).
Expected values come from the file written here and the real original labels."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient
from scipy.stats import norm

from leaderboard.catalog.selectors import benchmark_get
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.demo_truth import page_text
from tests.multilabel_three_classes import three_classes_load

pytestmark = pytest.mark.django_db



def test_it_ranks_the_multilabel_column_by_the_class_mean_and_names_its_interval(
    client: Client, run_load_benchmarks: Callable[..., Any], catalog_settings: Settings,
    data_dir: Path, tmp_path: Path,
) -> None:
    world = three_classes_load(data_dir=data_dir, tmp_path=tmp_path, settings=catalog_settings,
                               run_load_benchmarks=run_load_benchmarks)
    labels, images_a, b, c, annotated = (world.labels, world.images_a, world.b, world.c,
                                         world.annotated)
    # "images": all of class A right, B and C wrong: 50 of 52 images, class mean 1/3.
    # "classes": 20 of class A right, B and C right: 22 of 52 images, class mean 0.8.
    hits = {"images": set(images_a), "classes": set(images_a[:20]) | {b, c}}
    subs = {}
    for name, right in hits.items():
        top1 = np.array(labels, dtype=np.int64)
        wrong = [i for i in annotated if i not in right]
        top1[wrong] = (top1[wrong] + 1) % 1000
        subs[name] = submission_create(
            owner=factories.user_create(name), model_name=name, public=True,
            benchmark=benchmark_get(slug="imagenet"),
            files={"imagenet-val": factories.upload_npy(top1, tmp_path, f"{name}.npy")})
        assert score_submission.apply(args=[subs[name].pk], task_id=name).get() == "scored"

    body = APIClient().get("/api/benchmarks/imagenet/leaderboard/",
                           {"sort": "multilabel"}).json()

    methods = {column["slug"]: column["ci_method"] for column in body["columns"]}
    assert methods == {"original": "clopper_pearson", "corrected": "clopper_pearson",
                       "corrected-t4": "clopper_pearson", "corrected-t5": "clopper_pearson",
                       "real": "clopper_pearson", "multilabel": "normal",
                       "imagenet-m": "clopper_pearson"}
    assert [row["model_name"] for row in body["rows"]] == ["classes", "images"]
    z = float(norm.ppf(0.975))
    expected = {  # per class (correct, evaluated): A, B, C
        "classes": [(20, 50), (1, 1), (1, 1)], "images": [(50, 50), (0, 1), (0, 1)]}
    for row in body["rows"]:
        cell = row["scores"]["multilabel"]
        per_class = expected[row["model_name"]]
        mean = sum(k / n for k, n in per_class) / 3
        half = z * math.sqrt(sum((k / n) * (1 - k / n) / n for k, n in per_class)) / 3
        assert cell["accuracy"] == pytest.approx(mean, abs=1e-15)
        assert (cell["ci_low"], cell["ci_high"]) == (pytest.approx(max(0, mean - half)),
                                                     pytest.approx(min(1, mean + half)))
        assert (cell["correct"], cell["total"]) == (sum(k for k, _ in per_class), 52)
    assert [row["ranks"]["multilabel"] for row in body["rows"]] == [1, 2]

    page = client.get("/benchmarks/imagenet/?sort=multilabel").content.decode()
    normal = 'title="95% confidence interval: normal approximation, for a mean over classes"'
    assert page.count(normal) == 2  # the two multilabel cells, and no other
    # original, the three corrected sets and real (ImageNet-M lists no image here)
    assert page.count('title="95% confidence interval"') == 2 * 5
    # the legend names the column whose cells are a mean over classes
    assert ("Each cell: top-1 accuracy (on multilabel , the mean of the per-class accuracies), "
            "its 95% interval (Clopper-Pearson; on multilabel , a mean over classes, the normal "
            "approximation), the rank") in page_text(page)
    # the plot of the multi-label set against the original labels says what its bars are
    svg = client.get("/benchmarks/imagenet/plots/label-set/multilabel.svg").content.decode()
    assert ("with 95% intervals (Clopper-Pearson; for the mean over classes on multilabel, "
            "the normal approximation)") in svg
    real = client.get("/benchmarks/imagenet/plots/label-set/real.svg").content.decode()
    assert "with 95% Clopper-Pearson intervals;" in real
    # and the plots page's lead, which named a multi-label mean on every benchmark
    plots = page_text(client.get("/benchmarks/imagenet/plots/").content.decode())
    assert ("Bars are 95% Clopper-Pearson intervals (on multilabel , a mean over classes: the "
            "normal approximation).") in plots
