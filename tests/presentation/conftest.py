"""The demo every page-truth test reads (tests/presentation/test_page_truth*.py)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission
from tests.demo_truth import Cifar10Truth, cifar10_truth
from tests.scored_models import score_in_process


@pytest.fixture(scope="module")
def demo_seeded(django_db_setup: None, django_db_blocker: Any, data_dir: Path,
                compile_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[str, Any]]:
    """The demo as scripts/serve.sh seeds it, once for the module that reads it: every
    benchmark loaded, `seed_demo`, and each submission scored by the real task in this process
    (nothing sent to a broker), committed; every row removed (`flush`) after the module's last
    test. Yields the settings it was made under. The module's tests only read it: what one
    writes is rolled back with its test (`django_db`)."""
    from leaderboard import queue

    made_under = {"EVALSERVER_DATA_DIR": data_dir, "EVALSERVER_CACHE_DIR": compile_cache_dir,
                  "EVALSERVER_MULTILABEL_FILE": None, "EVALSERVER_DAILY_QUOTA": 0,
                  "MEDIA_ROOT": tmp_path_factory.mktemp("demo-media")}
    with (pytest.MonkeyPatch.context() as patch, override_settings(**made_under),
          django_db_blocker.unblock()):
        patch.setattr(queue, "task_send", lambda *args, **kwargs: None)
        try:
            call_command("load_benchmarks", stdout=io.StringIO(), stderr=io.StringIO())
            call_command("seed_demo", "--data-dir", str(data_dir), stdout=io.StringIO())
            for submission in Submission.objects.order_by("pk"):
                assert score_in_process(submission) == "scored", submission.model_name
            yield made_under
        finally:
            call_command("flush", "--noinput", verbosity=0)


@pytest.fixture
def demo(demo_seeded: dict[str, Any], settings: Settings) -> None:
    """The module's demo (`demo_seeded`), under the settings it was made under."""
    for name, value in demo_seeded.items():
        setattr(settings, name, value)


@pytest.fixture(scope="module")
def truth(data_dir: Path) -> Cifar10Truth:
    return cifar10_truth(data_dir)
