"""The `loaded` fixture's copy of the built-in benchmarks (tests/catalog_snapshot.py) holds
what a real `manage.py load_benchmarks` writes: the same rows of every model, and id
sequences past the copied rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db.models import DateTimeField, Model
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from tests.catalog_snapshot import catalog_loaded

pytestmark = pytest.mark.django_db(transaction=True)


def _compared_fields(model: type[Model]) -> list[str]:
    """Every stored field but the ids (a real load after a flush numbers rows from 1; the copy
    keeps the ids of the process's first load) and the times of the load itself."""
    return [field.attname for field in model._meta.concrete_fields
            if not field.primary_key and not field.is_relation
            and not isinstance(field, DateTimeField)]


def _catalog() -> dict[str, Counter[tuple[Any, ...]]]:
    """Each model's rows (as a multiset of their compared values), for the models with rows."""
    found = {}
    for model in apps.get_models(include_auto_created=True):
        names = _compared_fields(model)
        rows = Counter(tuple(repr(row[name]) for name in names)
                       for row in model._base_manager.values(*names))
        if rows:
            found[model._meta.label] = rows
    return found


def test_it_copies_the_rows_a_real_load_writes_and_moves_the_id_sequences_past_them(
    loaded: Settings, run_load_benchmarks: Callable[..., tuple[str, str]],
) -> None:
    call_command("flush", interactive=False, verbosity=0)
    catalog_loaded(run_load_benchmarks)  # the process has loaded once (the fixture): a copy
    copied = _catalog()
    highest = max(Benchmark.objects.values_list("pk", flat=True))
    extra = Benchmark.objects.create(slug="extra", name="Extra", num_classes=2,
                                     main_example_set="test")
    assert extra.pk == highest + 1

    call_command("flush", interactive=False, verbosity=0)
    run_load_benchmarks()
    real = _catalog()
    assert sorted(real) == sorted(copied)
    assert len(real[Benchmark._meta.label]) == 7
    for label, rows in real.items():
        assert copied[label] == rows, label
