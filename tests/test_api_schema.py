"""The OpenAPI schema documents every operation and every status it answers; the docs page
needs no CDN."""

from __future__ import annotations

import re

import pytest
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

OPERATIONS = {
    "/api/auth/token/": {"post": "auth_token_create", "delete": "auth_token_revoke"},
    "/api/benchmarks/": {"get": "benchmarks_list"},
    "/api/benchmarks/{slug}/": {"get": "benchmarks_retrieve"},
    "/api/benchmarks/{slug}/leaderboard/": {"get": "benchmarks_leaderboard"},
    "/api/submissions/": {"get": "submissions_list", "post": "submissions_create"},
    "/api/submissions/{submission_id}/": {"get": "submissions_retrieve",
                                          "patch": "submissions_visibility"},
    "/api/submissions/{submission_id}/compare/{other_id}/": {"get": "submissions_compare"},
    "/api/submissions/{submission_id}/cancel/": {"post": "submissions_cancel"},
    "/api/submissions/{submission_id}/rerun/": {"post": "submissions_rerun"},
    "/api/submissions/{submission_id}/withdraw/": {"post": "submissions_withdraw"},
}


def test_it_documents_every_operation_with_its_shapes(loaded: Settings) -> None:
    response = APIClient().get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    for path, operations in OPERATIONS.items():
        assert {m: op["operationId"] for m, op in paths[path].items()} == operations
    components = schema["components"]["schemas"]
    create = paths["/api/submissions/"]["post"]
    body = create["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    fields = components[body.rsplit("/", 1)[1]]["properties"]
    assert {"benchmark", "model_name", "description", "public", "paper_url", "code_url",
            "cifar10-test", "cifar10.1-v6", "imagenet-val", "mnist-test", "imdb-test",
            "caltech256", "checkpoint"} <= set(fields)
    assert fields["cifar10-test"] == {
        "type": "string", "format": "binary",
        "description": "cifar10: predictions for cifar10-test (10000 rows; .npy, .npz, .json "
                       "or .csv) - required"}
    assert set(create["responses"]) == {"201", "400", "401", "403", "404", "405", "406", "408",
                                        "413", "415", "429", "500", "503"}
    assert create["responses"]["429"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    detail = paths["/api/submissions/{submission_id}/"]["get"]["responses"]["200"]
    ref = detail["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"id", "benchmark", "model_name", "public", "status", "failure_reason", "created",
            "scored", "scores", "files", "owner"} <= set(components[ref]["properties"])
    board = paths["/api/benchmarks/{slug}/leaderboard/"]["get"]
    assert {p["name"] for p in board["parameters"]} == {"slug", "sort", "version", "page",
                                                        "page_size"}


def test_it_documents_the_example_sets_of_the_visible_benchmarks_when_asked(
    loaded: Settings,
) -> None:
    from leaderboard.catalog.models import Benchmark

    def file_fields() -> set[str]:
        schema = APIClient().get("/api/schema/", {"format": "json"}).json()
        body = schema["paths"]["/api/submissions/"]["post"]["requestBody"]
        ref = body["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
        return {name for name, field in schema["components"]["schemas"][ref]["properties"]
                .items() if field.get("format") == "binary"} - {"checkpoint"}

    assert file_fields() == {"imagenet-val", "cifar10-test", "cifar10.1-v4", "cifar10.1-v6",
                             "mnist-test", "cifar100-test", "caltech256", "20news-test",
                             "imdb-test"}
    Benchmark.objects.filter(slug="imdb").update(hidden=True)
    assert "imdb-test" not in file_fields()


def test_it_serves_the_docs_without_external_scripts() -> None:
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert re.findall(r'(?:src|href)\s*=\s*["\'](?:https?:)?//', page) == []
    assert "cdn" not in page.lower()


# Every status each operation can answer: those of its own logic (its view's error_responses)
# and those of the framework around every view (leaderboard/common/schema.py: 400, 401, 404,
# 405, 406, 429 (the rate limits), 500 and 503 everywhere, 403 for CSRF on a write, 408 and 415
# where a body is read).
EVERYWHERE = {"400", "401", "404", "405", "406", "429", "500", "503"}
WRITE_WITH_BODY = EVERYWHERE | {"403", "408", "415"}
STATUSES = {
    ("/api/audits/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/audits/", "post"): {"201"} | WRITE_WITH_BODY,
    ("/api/audits/{audit_id}/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/auth/token/", "post"): {"200"} | WRITE_WITH_BODY,
    ("/api/auth/token/", "delete"): {"204", "403"} | EVERYWHERE,
    ("/api/me/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/", "get"): {"200"} | EVERYWHERE,
    ("/api/bundles/", "post"): {"202", "403", "413"} | WRITE_WITH_BODY,
    ("/api/bundles/{upload_id}/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/hide/", "post"): {"200", "403"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/unhide/", "post"): {"200", "403"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/about/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/participation/rules/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/participation/rules/", "put"): {"200", "403"} | WRITE_WITH_BODY,
    ("/api/benchmarks/{slug}/participation/requests/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/participation/requests/", "post"): {"201", "403", "409"}
    | WRITE_WITH_BODY,
    ("/api/benchmarks/{slug}/participation/requests/{request_id}/decision/", "post"): {
        "200", "403", "409"} | WRITE_WITH_BODY,
    ("/api/benchmarks/{slug}/participation/terms/acceptance/", "post"): {"200", "201", "409"}
    | WRITE_WITH_BODY,
    ("/api/benchmarks/{slug}/label-sets/{label_set}/versions/", "get"): {"200"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/label-sets/{label_set}/versions/{number}/", "get"):
        {"200"} | EVERYWHERE,
    # 304: a revalidation with the board's ETag (If-None-Match)
    ("/api/benchmarks/{slug}/leaderboard/", "get"): {"200", "304"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/label-sets/{label_set}/reveal/", "post"):
        {"200", "403", "409"} | EVERYWHERE,
    ("/api/benchmarks/{slug}/label-sets/{label_set}/phases/", "post"):
        {"201", "409"} | WRITE_WITH_BODY,
    ("/api/review/{slug}/ground-truth/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/review/{slug}/queue/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/review/ground-truth/{candidate_id}/votes/", "post"): {"201", "409"} | WRITE_WITH_BODY,
    ("/api/review/items/{item_id}/", "get"): {"200", "403"} | EVERYWHERE,
    ("/api/review/items/{item_id}/votes/", "post"): {"201", "409"} | WRITE_WITH_BODY,
    ("/api/host-requests/", "get"): {"200"} | EVERYWHERE,
    ("/api/host-requests/", "post"): {"201", "409"} | WRITE_WITH_BODY,
    ("/api/host-requests/{request_id}/decision/", "post"): {"200", "409"} | WRITE_WITH_BODY,
    ("/api/teams/", "get"): {"200"} | EVERYWHERE,
    ("/api/teams/{slug}/", "get"): {"200"} | EVERYWHERE,
    ("/api/teams/{slug}/members/{username}/", "put"): {"200", "409"} | WRITE_WITH_BODY,
    ("/api/teams/{slug}/members/{username}/", "delete"): {"204", "403", "409"} | EVERYWHERE,
    ("/api/notifications/deliveries/", "get"): {"200"} | EVERYWHERE,
    ("/api/notifications/preferences/", "get"): {"200"} | EVERYWHERE,
    ("/api/notifications/preferences/", "put"): {"200"} | WRITE_WITH_BODY,
    ("/api/notifications/webhooks/", "get"): {"200"} | EVERYWHERE,
    ("/api/notifications/webhooks/", "post"): {"201", "409"} | WRITE_WITH_BODY,
    ("/api/notifications/webhooks/{webhook_id}/", "delete"): {"204", "403"} | EVERYWHERE,
    ("/api/notifications/webhooks/test/", "post"): {"202", "403"} | EVERYWHERE,
    ("/api/schema/", "get"): {"200"} | EVERYWHERE,
    ("/api/submissions/", "get"): {"200"} | EVERYWHERE,
    ("/api/submissions/", "post"): {"201", "413"} | WRITE_WITH_BODY,
    ("/api/submissions/{submission_id}/", "get"): {"200"} | EVERYWHERE,
    ("/api/submissions/{submission_id}/", "patch"): {"200"} | WRITE_WITH_BODY,
    ("/api/submissions/{submission_id}/compare/{other_id}/", "get"): {"200"} | EVERYWHERE,
    ("/api/submissions/{submission_id}/cancel/", "post"): {"200", "403", "409"} | EVERYWHERE,
    ("/api/submissions/{submission_id}/rerun/", "post"): {"200", "403", "409"} | EVERYWHERE,
    ("/api/submissions/{submission_id}/withdraw/", "post"): {"200", "409"} | WRITE_WITH_BODY,
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}


def test_it_lists_every_status_of_every_operation_in_the_error_shape() -> None:
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()

    found = {(path, method): set(operation["responses"])
             for path, operations in schema["paths"].items()
             for method, operation in operations.items()}
    assert found == STATUSES
    for (path, method), statuses in STATUSES.items():
        responses = schema["paths"][path][method]["responses"]
        for status in statuses:
            if int(status) >= 400:
                assert responses[status]["content"] == {
                    "application/json": {"schema": ERROR_REF}}, (path, method, status)
                assert responses[status]["description"], (path, method, status)
    components = schema["components"]["schemas"]
    assert components["Error"]["properties"] == {
        "error": {"$ref": "#/components/schemas/ErrorDetail"}}
    assert components["Error"]["required"] == ["error"]
    assert {name: field["type"] for name, field in
            components["ErrorDetail"]["properties"].items()} == {
        "code": "string", "message": "string", "field": "string", "row": "integer",
        "column": "integer"}
    assert components["ErrorDetail"]["required"] == ["code", "message"]


def test_it_documents_a_required_text_field_as_non_blank() -> None:
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()

    token = schema["components"]["schemas"]["TokenCreateInputRequest"]
    assert token["properties"] == {"username": {"type": "string", "minLength": 1},
                                   "password": {"type": "string", "minLength": 1}}


@pytest.mark.parametrize(("query", "accept", "status", "code", "message"), [
    ({"format": "xml"}, "*/*", 404, "not_found", "Not found."),
    ({}, "text/csv", 406, "not_acceptable", "Could not satisfy the request Accept header."),
])
def test_it_answers_the_schema_endpoints_errors_in_json(
    query: dict[str, str], accept: str, status: int, code: str, message: str
) -> None:
    response = APIClient().get("/api/schema/", query, HTTP_ACCEPT=accept)

    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": code, "message": message}}
