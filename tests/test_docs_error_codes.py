"""Every error code the API can answer is explained in docs/participants/troubleshooting.md.

The codes are found in the source, not listed here, so a new code fails this test until the
page explains it. They reach a client in these ways (docs/api.md §3, the one error shape of
leaderboard/common/api_errors.py):
- a ServiceError, or one of its subclasses, raised by a service or selector with the code as
  its first argument; `error_response`, `_error` and `_unavailable` called with it; a
  `code=` (or `missing_code=`) keyword; an `{"code": "..."}` body written by hand
  (evalserver/health.py, evalserver/metrics_endpoint.py);
- DRF's own exceptions, by their `default_code` (a ValidationError's `invalid` is answered as
  `invalid_input`), and the field checks of every input serializer the API uses (`required`,
  `invalid_choice`, ...: each field's `error_messages`);
- a prediction file's parser (`PredictionError`), whose code the upload's inline check answers
  with 400 or the worker stores as the submission's `failure_code`;
- a checkpoint's refusal or its run's failure (workers/inference/errors.py's codes);
- a job's platform failure (`worker_lost`, `time_limit`, `internal_error`) and `cancelled`.
Bundle refusals have their own list, docs/bundles.md §8, checked against
workers/scoring/bundles/errors.py here too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.urls import get_resolver
from rest_framework import exceptions, serializers
from rest_framework.fields import Field

from leaderboard.jobs.lifecycle import CANCELLED, PLATFORM_FAILURE_CODES
from workers.inference.errors import CODES as CHECKPOINT_CODES
from workers.scoring.bundles.errors import CODES as BUNDLE_CODES

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TROUBLESHOOTING = PROJECT_ROOT / "docs" / "participants" / "troubleshooting.md"
CODE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
# Calls with an error code among their first two arguments (and every class named *Error or
# *Refused: its first).
CODE_FUNCTIONS = {"error_response", "_error", "_unavailable"}


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
        return node.value
    return None


def _codes_in(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name.endswith(("Error", "Refused")) and node.args:
                found.add(_string(node.args[0]) or "")
            if name in CODE_FUNCTIONS:  # `_unavailable(request, code, ...)`: its second
                found.update(_string(arg) or "" for arg in node.args[:2])
            found.update(_string(keyword.value) or "" for keyword in node.keywords
                         if keyword.arg in ("code", "missing_code"))
        elif isinstance(node, ast.Dict):
            found.update(_string(value) or "" for key, value
                         in zip(node.keys, node.values, strict=True)
                         if isinstance(key, ast.Constant) and key.value == "code")
    return found - {""}


def _source_codes() -> set[str]:
    web = [path for folder in ("leaderboard", "evalserver")
           for path in (PROJECT_ROOT / folder).rglob("*.py") if "migrations" not in path.parts]
    parsers = sorted((PROJECT_ROOT / "workers" / "scoring" / "predictions").glob("*.py"))
    return {code for path in [*web, *parsers] for code in _codes_in(path)}


def _drf_codes() -> set[str]:
    codes = {cls.default_code for cls in vars(exceptions).values()
             if isinstance(cls, type) and issubclass(cls, exceptions.APIException)
             and cls is not exceptions.APIException}
    return {"invalid_input" if code == "invalid" else code for code in codes}


def _serializer_classes(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    return found.union(*(_serializer_classes(sub) for sub in found))


def _field_check_codes() -> set[str]:
    """The codes of the field checks of the project's serializers (a wrong value of a field is
    answered with its code, `invalid` as `invalid_input`)."""
    assert get_resolver().url_patterns  # imports every API module: every serializer is defined
    codes: set[str] = set()

    def walk(fields: list[Field]) -> None:
        for field in fields:
            codes.update(field.error_messages)
            child = getattr(field, "child", None)
            walk([*getattr(field, "fields", {}).values(), *([child] if child else [])])

    for cls in _serializer_classes(serializers.BaseSerializer):
        if cls.__module__.startswith("leaderboard."):
            walk([cls()])
    return {"invalid_input" if code == "invalid" else code for code in codes}


def api_error_codes() -> set[str]:
    return (_source_codes() | _drf_codes() | _field_check_codes() | set(CHECKPOINT_CODES)
            | set(PLATFORM_FAILURE_CODES) | {CANCELLED})


def _documented(text: str) -> set[str]:
    return set(re.findall(r"`([a-z][a-z0-9_]*)`", text))


# A serializer's fields may read the catalog when they are made (a choice of benchmarks).
@pytest.mark.django_db
def test_it_finds_the_codes_of_every_way_an_error_reaches_a_client() -> None:
    codes = api_error_codes()
    # one of each: a service, the accounts API's hand-made answers, a `missing_code=`, a
    # selector's query error, the request-body limits, the 503 pages, the health checks, DRF,
    # the prediction parser, a checkpoint, the platform, the serializers' field checks
    assert {"quota_exceeded", "invalid_credentials", "missing_username", "unknown_version",
            "request_timeout", "database_unavailable", "storage_unavailable", "unknown_queue",
            "not_authenticated", "throttled", "invalid_input", "corrupt_file", "empty_cell",
            "pickle_refused", "model_timeout", "worker_lost", "cancelled", "required",
            "invalid_choice", "max_length"} <= codes
    assert len(codes) > 90


@pytest.mark.django_db
def test_it_explains_every_error_code_on_the_troubleshooting_page() -> None:
    undocumented = api_error_codes() - _documented(TROUBLESHOOTING.read_text())

    assert undocumented == set(), (
        f"explain these codes in {TROUBLESHOOTING.relative_to(PROJECT_ROOT)}: "
        f"{sorted(undocumented)}")


def test_it_lists_every_bundle_refusal_code_in_the_bundles_reference() -> None:
    text = (PROJECT_ROOT / "docs" / "bundles.md").read_text()
    refusals = text.split("\n## 8. Refusals", 1)[1].split("\n## ", 1)[0]

    assert set(BUNDLE_CODES) - _documented(refusals) == set()
