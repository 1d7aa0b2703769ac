"""The built-in benchmarks loaded into a test's database, fast: `manage.py load_benchmarks`
runs for real the first time in a test process (and whenever the database already holds a
catalog, or the settings that decide what it writes differ), and its rows are kept; every
later test of the process gets those rows copied into its own (empty) database, with the same
ids, the database's id sequences moved past them. Loading the seven benchmarks is about 0.7 s
of queries, validation and compiling checks; copying its few hundred rows, a few milliseconds.
The tests of load_benchmarks itself call it directly (`run_load_benchmarks`), never this.

What is copied is what the real load wrote, found by counting every model's rows before and
after it: nothing is listed by hand. The compiled label sets it checks are in the session's
compile cache (EVALSERVER_CACHE_DIR) either way, and a version's stored file is made when a
test first reads it (leaderboard/catalog/label_set_version_files.py), as after a real load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management.color import no_style
from django.db import IntegrityError, connection, transaction
from django.db.models import Model


@dataclass(frozen=True)
class _Rows:
    model: type[Model]
    rows: list[dict[str, Any]]  # each row's concrete fields by attname


_SNAPSHOTS: dict[tuple[str, ...], list[_Rows]] = {}
# The rows outside the load that its rows point at (the site team a migration made, which a
# transactional test's flush removes): put back first where they are missing.
_PARENTS: dict[tuple[str, ...], list[_Rows]] = {}


def _key() -> tuple[str, ...]:
    return (str(settings.EVALSERVER_DATA_DIR), str(settings.EVALSERVER_MULTILABEL_FILE),
            connection.vendor, connection.settings_dict["NAME"])


def _models() -> list[type[Model]]:
    return list(apps.get_models(include_auto_created=True))


def _counts() -> dict[type[Model], int]:
    return {model: model._base_manager.count() for model in _models()}


def _in_dependency_order(models: list[type[Model]]) -> list[type[Model]]:
    """Parents before the rows that point at them (an autocommit insert checks its foreign
    keys at once)."""
    ordered: list[type[Model]] = []
    pending = list(models)
    while pending:
        for model in pending:
            parents = {field.related_model for field in model._meta.concrete_fields
                       if field.is_relation and field.related_model is not model}
            if not parents & (set(pending) - {model}):
                ordered.append(model)
                pending.remove(model)
                break
        else:  # a cycle among them: leave it to the deferred constraints
            ordered += pending
            break
    return ordered


def _plain(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value


def _parents_restore(parents: list[_Rows]) -> bool:
    """Put back the referenced rows that are missing; False when one cannot be (another row
    holds its unique values): the caller loads for real then."""
    for part in parents:
        manager = part.model._base_manager
        key = part.model._meta.pk.attname
        missing = [row for row in part.rows if not manager.filter(pk=row[key]).exists()]
        try:
            with transaction.atomic():
                manager.bulk_create([part.model(**row) for row in missing])
        except IntegrityError:
            return False
    return True


def _restore(snapshot: list[_Rows]) -> None:
    with transaction.atomic():
        for part in snapshot:
            # auto_now_add fields take the time of this insert, as a real load's would
            part.model._base_manager.bulk_create([part.model(**row) for row in part.rows])
        statements = connection.ops.sequence_reset_sql(
            no_style(), [part.model for part in snapshot])
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)


def catalog_loaded(load: Callable[[], object]) -> None:
    """The built-in benchmarks in this test's database: copied from the process's first real
    load (`load`), or loaded for real when that cannot be used."""
    key = _key()
    snapshot = _SNAPSHOTS.get(key)
    if snapshot is not None:
        if any(part.model._base_manager.exists() for part in snapshot) \
                or not _parents_restore(_PARENTS[key]):
            load()  # some of its rows are there already: a copy would collide
        else:
            _restore(snapshot)
        return
    before = _counts()
    load()
    written = [model for model, count in _counts().items() if count > before[model]]
    if any(before[model] for model in written):
        return  # the database held some of them already: nothing to keep
    _SNAPSHOTS[key] = [_rows(model, model._base_manager.all())
                       for model in _in_dependency_order(written)]
    _PARENTS[key] = _parents(written)


def _rows(model: type[Model], rows: Any) -> _Rows:
    return _Rows(model, [{name: _plain(value) for name, value in row.items()}
                         for row in rows.order_by("pk").values(
                             *[field.attname for field in model._meta.concrete_fields])])


def _parents(written: list[type[Model]]) -> list[_Rows]:
    """The rows of other models that the written rows point at (one level: a migration's rows,
    such as the site team, have no parents of their own among the load's)."""
    wanted: dict[type[Model], set[Any]] = {}
    for model in written:
        for field in model._meta.concrete_fields:
            parent = field.related_model
            if not field.is_relation or parent in written or parent is None:
                continue
            ids = model._base_manager.exclude(**{f"{field.attname}__isnull": True}) \
                .values_list(field.attname, flat=True).distinct()
            wanted.setdefault(parent, set()).update(ids)
    return [_rows(parent, parent._base_manager.filter(pk__in=ids))
            for parent, ids in wanted.items() if ids]
