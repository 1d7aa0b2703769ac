"""Fixtures of the API tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pytest_django.fixtures import Settings


@pytest.fixture
def loaded(run_load_benchmarks: Callable[..., tuple[str, str]],
           catalog_settings: Settings) -> Settings:
    """The real catalog loaded (imagenet, cifar10, mnist), no daily quota; returns settings."""
    run_load_benchmarks()
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return catalog_settings
