"""The demo every page-truth test reads (tests/presentation/test_page_truth*.py)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission
from tests.demo_truth import Cifar10Truth, cifar10_truth
from tests.scored_models import score_in_process


@pytest.fixture
def demo(loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]) -> Iterator[None]:
    """The demo as scripts/serve.sh seeds it: every benchmark loaded, `seed_demo`, and each
    submission scored by the real task in this process (`sent` keeps the queue's messages)."""
    call_command("seed_demo", "--data-dir", str(data_dir), stdout=io.StringIO())
    for submission in Submission.objects.order_by("pk"):
        assert score_in_process(submission) == "scored", submission.model_name
    yield


@pytest.fixture(scope="module")
def truth(data_dir: Path) -> Cifar10Truth:
    return cifar10_truth(data_dir)
