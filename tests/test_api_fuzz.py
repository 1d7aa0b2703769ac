"""Schemathesis against a live test server: requests generated from /api/schema/ (issue 14).

The server runs in this process (pytest-django's live_server) over the real catalog with three
scored CIFAR-10 models, two review items and a ground-truth candidate. Every operation of
the schema gets schemathesis's examples, coverage cases (boundaries, missing and wrong values,
unsupported methods, missing credentials) and property-based fuzzing; path parameters are
now and then swapped for ids and slugs that exist, so that answers past the 404 are reached.
Each case is sent twice, as a plain user and as a maintainer, each with a real token.

Checked on every answer: no 5xx; every 4xx body is JSON in the one error shape (docs/api.md
§3); and schemathesis's own checks: status code, content type, headers and body as the schema
documents them, schema-invalid requests refused, auth not ignored. Not checked: that every
schema-valid request is accepted (`positive_data_acceptance`): an unknown benchmark slug or
a file that is not predictions is valid to the schema and refused with a 400 by design.

Uploads: schemathesis names a generated file after its field ("cifar10-test", no extension),
which the server refuses before reading it. A second test posts hypothesis-generated
prediction files (tests/prediction_files.py) under real file names to the same live server.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from django.core.management import call_command
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token
from schemathesis.checks import CheckContext
from schemathesis.core.transport import Response
from schemathesis.generation.case import Case
from schemathesis.hooks import HookContext
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.common.slugs import SLUG_PATTERN
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.review.models import ReviewItem
from leaderboard.submissions.models import Submission
from tests import factories
from tests.prediction_files import PredictionFile, prediction_files

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

schema = schemathesis.pytest.from_fixture("api_schema")
# A fixed budget of generated cases: 10 an operation and 40 uploads in the suite (CI), and
# what EVALSERVER_FUZZ_EXAMPLES says for a longer run (bench/api_fuzz.py: 40 and 100).
EXAMPLES_PER_OPERATION = int(os.environ.get("EVALSERVER_FUZZ_EXAMPLES", "10"))
UPLOAD_EXAMPLES = int(os.environ.get("EVALSERVER_FUZZ_UPLOAD_EXAMPLES", "40"))
# The suite's cases are the same on every run (hypothesis's derandomize: a seed from the test),
# so that CI's verdict is the code's, not the draw's; the bench's longer runs draw anew and
# are where new cases are found (a random "?against=1.0" once found DRF taking "1.0" as 1).
DERANDOMIZED = "EVALSERVER_FUZZ_EXAMPLES" not in os.environ


@pytest.fixture
def callers(scored_models: dict[str, Submission]) -> dict[str, Token]:
    """A plain user's token and a maintainer's, over a board with three scored models."""
    return {"user": Token.objects.create(user=factories.user_create("fuzz-user")),
            "maintainer": Token.objects.create(
                user=factories.host_create("fuzz-maintainer"))}


@pytest.fixture
def existing(callers: dict[str, Token]) -> list[dict[str, Any]]:
    """Path parameters that name something that exists: benchmark, label set and version
    together, and each kind of id alone."""
    call_command("add_ground_truth_candidate", "cifar10", "corrected", "7", "3", verbosity=0)
    mnist = LabelSet.objects.get(benchmark__slug="mnist", slug="original")
    for example_index in (7, 8):
        ReviewItem.objects.create(label_set=mnist, example_index=example_index, class_id=3)
    values: list[dict[str, Any]] = [
        {"slug": version.label_set.benchmark.slug, "label_set": version.label_set.slug,
         "number": version.number}
        for version in LabelSetVersion.objects.select_related("label_set__benchmark")]
    values += [{"submission_id": pk} for pk in Submission.objects.values_list("pk", flat=True)]
    values += [{"item_id": pk} for pk in ReviewItem.objects.values_list("pk", flat=True)]
    values += [{"candidate_id": pk}
               for pk in GroundTruthCandidate.objects.values_list("pk", flat=True)]
    assert {key for value in values for key in value} == {
        "slug", "label_set", "number", "submission_id", "item_id", "candidate_id"}, values
    return values


@pytest.fixture
def api_schema(existing: list[dict[str, Any]], live_server: LiveServer) -> BaseSchema:
    loaded = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")

    @loaded.hook
    def flatmap_path_parameters(context: HookContext,
                                path_parameters: dict[str, Any] | None) -> st.SearchStrategy[Any]:
        if not path_parameters:
            return st.just(path_parameters)
        # Only values of the form the schema declares are swapped: a negative case's
        # deliberately wrong value (a string for an id, a slug off the pattern) stays wrong.
        real = [{key: value for key, value in names.items()
                 if _same_form(path_parameters.get(key), value)} for names in existing]
        real = [names for names in real if names]
        if not real:
            return st.just(path_parameters)
        return st.one_of(st.just(path_parameters),
                         st.sampled_from(real).map(lambda names: {**path_parameters, **names}))

    return loaded


def _same_form(generated: Any, real: Any) -> bool:
    """Whether a generated path value is of the declared form of `real`'s parameter."""
    if type(generated) is not type(real):
        return False
    return not isinstance(real, str) or re.fullmatch(SLUG_PATTERN, generated) is not None


@pytest.fixture
def sent(capsys: pytest.CaptureFixture[str]) -> Iterator[Counter[str]]:
    """Counts the generated cases and the answers by status; printed after the run."""
    tally: Counter[str] = Counter()
    yield tally
    statuses = {key: count for key, count in sorted(tally.items()) if key.isdigit()}
    with capsys.disabled():
        print(f"\napi fuzz: {tally['cases']} generated cases, {tally['requests']} requests, "
              f"answers by status {statuses}")


def error_shape(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Every 4xx and 5xx body is in the error shape (`assert_error_shape`)."""
    if response.status_code < 400:
        return None
    assert_error_shape(response.json())
    return True


def assert_error_shape(body: Any) -> None:
    """{"error": {"code": str, "message": str, ("field": str), ("row": int, "column": int)}}:
    a refused predictions file may name the row and column at fault (docs/api.md §3)."""
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict), body
    assert {"code", "message"} <= set(error) <= {"code", "message", "field", "row", "column"}, body
    texts = {key: value for key, value in error.items() if key not in ("row", "column")}
    assert all(isinstance(value, str) and value for value in texts.values()), body
    assert all(type(error[key]) is int and error[key] >= 0
               for key in ("row", "column") if key in error), body


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=DERANDOMIZED,
          suppress_health_check=list(HealthCheck))
def test_it_answers_generated_requests_without_a_5xx_and_in_the_error_shape(
    case: Case, callers: dict[str, Token], sent: Counter[str], loaded: Settings
) -> None:
    sent["cases"] += 1
    for token in callers.values():
        response = case.call_and_validate(
            headers={"Authorization": f"Token {token.key}"}, timeout=30,
            additional_checks=[error_shape], excluded_checks=[positive_data_acceptance])
        sent["requests"] += 1
        sent[str(response.status_code)] += 1
        if response.status_code == 204 and case.method == "DELETE":  # the token was revoked
            Token.objects.get_or_create(user=token.user, defaults={"key": token.key})


EXAMPLE_SETS = ("cifar10-test", "cifar10.1-v6", "mnist-test", "imagenet-val", "checkpoint")


def test_it_answers_generated_uploads_without_a_5xx_and_in_the_error_shape(
    callers: dict[str, Token], api_schema: BaseSchema, live_server: LiveServer,
    data_dir: Path, sent: Counter[str], loaded: Settings
) -> None:
    create = api_schema["/api/submissions/"]["POST"]
    real_model = factories.cifar10_model_files(data_dir, "resnet_basic_110")["cifar10-test"]
    real_file = PredictionFile("resnet_basic_110.json", real_model.read_bytes())
    headers = {"Authorization": f"Token {callers['user'].key}"}

    @settings(max_examples=UPLOAD_EXAMPLES, deadline=None, derandomize=DERANDOMIZED,
              suppress_health_check=list(HealthCheck))
    @given(benchmark=st.sampled_from(["cifar10", "mnist", "imagenet", "no-such-benchmark", ""]),
           files=st.dictionaries(
               st.sampled_from(EXAMPLE_SETS),
               st.one_of(prediction_files(5, 10), st.just(real_file)), max_size=2),
           public=st.sampled_from(["true", "false", "maybe"]))
    @example(benchmark="cifar10", files={"cifar10-test": real_file}, public="true")
    def upload(benchmark: str, files: dict[str, PredictionFile], public: str) -> None:
        response = requests.post(
            f"{live_server.url}/api/submissions/", headers=headers, timeout=60,
            data={"benchmark": benchmark, "model_name": "fuzzed", "public": public},
            files={field: (file.name, file.content) for field, file in files.items()})
        sent["cases"] += 1
        sent["requests"] += 1
        sent[str(response.status_code)] += 1
        assert response.status_code in (201, 400), response.text
        create.validate_response(response)  # status, content type and body as documented
        if response.status_code == 201:
            assert set(response.json()) == {"id", "status", "url"}
        else:
            assert_error_shape(response.json())

    upload()
    assert sent["201"] >= 1 and sent["400"] >= 1, sent  # both ways were taken
