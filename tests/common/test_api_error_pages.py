"""Every API answer is JSON in the one error shape, also where Django answers before or
outside a view: no URL matches, OPTIONS (no metadata), too many form fields, a server error,
the database out of reach."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.common import error_pages
from tests import factories
from tests.helpers import free_port

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/review/items/null,null/votes/", "/api/nothing-here/",
                                  "/api/submissions/abc/"])
def test_it_answers_an_unknown_api_path_with_a_json_404(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 404
    assert response.json() == {"error": {
        "code": "not_found", "message": f"no API endpoint at {path} (see /api/docs/)"}}


def test_it_keeps_the_html_404_page_outside_the_api() -> None:
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert "<h1>Not found</h1>" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/submissions/", "/api/audits/", "/api/benchmarks/"])
def test_it_answers_options_with_405_in_the_error_shape(path: str) -> None:
    client = APIClient()
    client.force_authenticate(factories.host_create("alice"))
    response = client.options(path)
    assert response.status_code == 405
    assert response.json() == {"error": {"code": "method_not_allowed",
                                         "message": 'Method "OPTIONS" not allowed.'}}


def test_it_answers_too_many_fields_with_a_json_400(settings: Settings) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    body = "&".join(f"f{i}=x" for i in range(10))
    response = Client().post("/api/auth/token/", body,
                             content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "bad_request", "message": (
        "the request could not be read (too many fields, a bad header, or a malformed body)")}}


def test_it_answers_a_server_error_under_the_api_in_the_error_shape() -> None:
    request = Client().get("/api/benchmarks/").wsgi_request
    response = error_pages.server_error(request)
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.content == (b'{"error": {"code": "internal_error", "message": "the server '
                                b'failed to answer; the error is logged, and the request may '
                                b'be retried"}}')


@pytest.fixture
def database_unreachable() -> Iterator[None]:
    """The default database out of reach for real: its connection closed and pointed where
    the driver cannot connect (SQLite: a file in a folder that does not exist; PostgreSQL: a
    port nothing listens on). Put back, and reconnected, at the end."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-folder/evalserver.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.mark.sqlite  # the fixture takes each database away its own way
@pytest.mark.django_db(transaction=True)
def test_it_answers_503_with_retry_after_while_the_database_is_out_of_reach(
    database_unreachable: None,
) -> None:
    # as a server answers: the client does not re-raise what the handler answered
    api = Client(raise_request_exception=False).get("/api/benchmarks/")
    page = Client(raise_request_exception=False).get("/")

    assert (api.status_code, api["Retry-After"], api.json()) == (503, "10", {"error": {
        "code": "database_unavailable",
        "message": "the database does not answer; nothing was stored. Try again in 10 s"}})
    assert (page.status_code, page["Retry-After"]) == (503, "10")
    assert "The database does not answer" in page.content.decode()


def test_it_keeps_500_for_a_failure_that_is_not_the_database() -> None:
    request = Client().get("/api/benchmarks/").wsgi_request
    try:
        raise ValueError("a bug")
    except ValueError:
        response = error_pages.server_error(request)
    assert response.status_code == 500
    assert json.loads(response.content)["error"]["code"] == "internal_error"
