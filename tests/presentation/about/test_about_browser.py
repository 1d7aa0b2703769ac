"""The about pages and the mistake gallery in a real browser (Debian's chromium, driven by
Playwright), on a phone (375 px) and a desktop (1280 px). Screenshots are saved under
/tmp/about-shots/ (or $ABOUT_SHOTS_DIR) for a person to look at."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_django.fixtures import Settings

from leaderboard import queue
from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from tests import factories
from tests.browser import NEEDS_CHROMIUM
from workers.scoring import datasets

SHOTS = Path(os.environ.get("ABOUT_SHOTS_DIR", "/tmp/about-shots"))
WIDTHS = (375, 1280)

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


def _mixed_mnist_top1(data_dir: Path) -> np.ndarray:
    """The real cleanlab probabilities' argmax, with the original label on 3 examples of C and
    neither label on 2, so the gallery shows all three kinds of card."""
    top1 = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy").argmax(axis=1)
    corrected = LabelSetVersion.objects.get(label_set__benchmark__slug="mnist",
                                            label_set__slug="corrected", number=1)
    arrays = compiled_for_version(corrected).arrays
    members = np.flatnonzero(arrays["correctable"])
    top1[members[:3]] = arrays["labels"][members[:3]]
    for i in members[3:5]:
        top1[i] = next(c for c in range(10)
                       if c not in (arrays["labels"][i], arrays["corrected_labels"][i]))
    return top1[:, None]


def _multilabel_file(data_dir: Path, tmp_path: Path, predicted: np.ndarray) -> Path:
    """A small file in the real layout: 400 images whose original label is judged correct,
    the ResNet-50's different prediction judged wrong on every other one, and 24 of them
    listed as ImageNet-M."""
    wnid = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    original = datasets.imagenet_original_labels(data_dir)
    annotated = list(range(400))
    annots = {}
    for i in annotated:
        entry = {"correct": [wnid[original[i]]]}
        if predicted[i] != original[i] and i % 2:
            entry["wrong"] = [wnid[predicted[i]]]
        annots[datasets.imagenet_file_name(i)] = entry
    missed = [i for i in annotated if predicted[i] != original[i]][:20]
    hit = [i for i in annotated if predicted[i] == original[i]][1:5]
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({
        "initial_annots": annots, "problematic_images": {datasets.imagenet_file_name(0): {}},
        "imagenet_m": [datasets.imagenet_file_name(i) for i in missed + hit]}))
    return path


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_about_pages_and_the_gallery_on_a_phone_and_a_desktop(
    browser: Any, live_server: Any, run_load_benchmarks: Callable[..., tuple[str, str]],
    catalog_settings: Settings, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.sync_api import expect

    # scored in this process (below): nothing is queued for a worker on commit
    monkeypatch.setattr(queue, "task_send", lambda name, job_id, **_: None)
    resnet = datasets.imagenet_cleanlab_to_canonical(
        data_dir, np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    ).astype(np.int64)
    catalog_settings.EVALSERVER_MULTILABEL_FILE = _multilabel_file(data_dir, tmp_path, resnet)
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    run_load_benchmarks("--benchmark", "mnist", "--benchmark", "imagenet")
    mnist = factories.submission_scored("mnist", "mnist-test", _mixed_mnist_top1(data_dir),
                                        tmp_path, "mnist-mixed")
    imagenet = factories.submission_scored("imagenet", "imagenet-val", resnet,
                                           tmp_path, "resnet50-cleanlab")
    original = datasets.imagenet_original_labels(data_dir)
    wrong = sum(1 for i in [i for i in range(400) if resnet[i] != original[i]][:20] if i % 2)
    SHOTS.mkdir(parents=True, exist_ok=True)
    pages = {
        "about-mnist": "/benchmarks/mnist/about/",
        "about-imagenet": "/benchmarks/imagenet/about/",
        "gallery-mnist": f"/submissions/{mnist.pk}/mistakes/",
        "gallery-imagenet-m": f"/submissions/{imagenet.pk}/mistakes/",
        "gallery-imagenet-c": f"/submissions/{imagenet.pk}/mistakes/?set=corrected&page=2",
        "submission-mnist": f"/submissions/{mnist.pk}/",
        "leaderboard-mnist": "/benchmarks/mnist/",
        "home": "/",
    }
    errors: list[str] = []
    widths: dict[str, int] = {}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
            widths[f"{name}-{width}"] = page.evaluate("document.documentElement.scrollWidth")
        # the links between the pages
        page.goto(f"{live_server.url}/benchmarks/mnist/")
        page.get_by_role("link", name="About these label sets").click()
        expect(page).to_have_url(f"{live_server.url}/benchmarks/mnist/about/")
        expect(page.locator("#ls-corrected [data-fact=correctable] td")).to_have_text("10")
        page.goto(f"{live_server.url}/submissions/{mnist.pk}/")
        page.get_by_role("link", name="Mistake gallery").click()
        expect(page.locator("li.mistake")).to_have_count(10)
        expect(page.locator("li.mistake[data-match=original]")).to_have_count(3)
        expect(page.locator("li.mistake[data-match=neither]")).to_have_count(2)
        expect(page.locator("li.mistake img.flag-image")).to_have_count(10)
        page.goto(f"{live_server.url}/submissions/{imagenet.pk}/mistakes/")
        expect(page.locator("li.mistake")).to_have_count(20)  # the 20 listed misses
        expect(page.locator("li.mistake[data-verdict=wrong]")).to_have_count(wrong)
        expect(page.locator("li.mistake img")).to_have_count(0)  # no ImageNet images here
        context.close()
    assert {k: v for k, v in widths.items() if k.endswith("-375") and v > 375} == {}
    assert errors == []
