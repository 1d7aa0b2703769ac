"""The OpenAPI schema documents every operation; the docs page needs no CDN."""

from __future__ import annotations

import re

import pytest
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
}


def test_it_documents_every_operation_with_its_shapes() -> None:
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
            "cifar10-test", "cifar10.1-v6", "imagenet-val", "mnist-test"} <= set(fields)
    assert fields["cifar10-test"] == {
        "type": "string", "format": "binary",
        "description": "cifar10: predictions for cifar10-test (10000 rows; .npy, .npz, .json "
                       "or .csv) - required"}
    assert set(create["responses"]) == {"201", "400", "401", "413", "429"}
    assert create["responses"]["429"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    detail = paths["/api/submissions/{submission_id}/"]["get"]["responses"]["200"]
    ref = detail["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"id", "benchmark", "model_name", "public", "status", "failure_reason", "created",
            "scored", "scores", "files", "owner"} <= set(components[ref]["properties"])
    board = paths["/api/benchmarks/{slug}/leaderboard/"]["get"]
    assert {p["name"] for p in board["parameters"]} == {"slug", "sort", "version"}


def test_it_serves_the_docs_without_external_scripts() -> None:
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert re.findall(r'(?:src|href)\s*=\s*["\'](?:https?:)?//', page) == []
    assert "cdn" not in page.lower()
