"""The review page's ImageNet image in a real browser (Debian's chromium, driven by
Playwright): a reviewer logs in, and the JPEG the page links loads and decodes at its own size
(tests/review/test_example_images.py checks the bytes and who may fetch them)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSet
from leaderboard.review.models import ReviewItem
from tests import factories
from tests.browser import NEEDS_CHROMIUM, browser_log_in, browser_page
from tests.review.conftest import reviewers

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_imagenet_jpeg_in_the_browser(
    browser: Any, live_server: Any, catalog_settings: Settings,
    run_load_benchmarks: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    run_load_benchmarks("--benchmark", "imagenet")
    pixels = np.random.default_rng(63).integers(0, 256, (45, 60, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG")
    (tmp_path / "ILSVRC2012_val_00000063.JPEG").write_bytes(buffer.getvalue())
    catalog_settings.EVALSERVER_IMAGENET_VAL_DIR = tmp_path
    ReviewItem.objects.create(
        label_set=LabelSet.objects.get(benchmark__slug="imagenet", slug="real"),
        example_index=62, class_id=3, submission_count=1)
    reviewer = reviewers(1)[0]

    base = live_server.url
    page = browser_page(browser, width=1280, height=800, timeout_ms=20_000)
    browser_log_in(page, base, reviewer.username, factories.PASSWORD,
                   next_path="/review/imagenet/next/")
    image = page.locator("img.review-photo")
    expect(image).to_have_attribute("alt", "ILSVRC2012_val_00000063.JPEG")
    image.evaluate("img => img.decode()")  # rejects if the bytes are not an image
    assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [60, 45]
