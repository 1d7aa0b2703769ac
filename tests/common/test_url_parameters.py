"""Hostile path parameters on every route of the URLconf: each parameter in turn replaced by
a NUL byte, 300 characters, percent-escapes that are not UTF-8, or `..`, sent by an anonymous
caller and by a maintainer with every method the route takes, over the built-in benchmarks.

PostgreSQL refuses a NUL byte in a text value (DataError): a slug that reached a query
answered 500. Slugs are now `<catalog_slug:...>` (leaderboard/common/slugs.py): a value that
is not a slug does not resolve, so the answer is the 404 of an unknown URL, in the error shape
under /api/. The routes are read from get_resolver(), so a route added later is walked too; a
parameter name missing from GOOD fails the first test until it gets a valid value there."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.converters import IntConverter, get_converters
from django.urls.exceptions import Resolver404
from django.utils.encoding import repercent_broken_unicode
from django.utils.regex_helper import normalize
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet
from tests import factories
from workers.scoring.bundles.fields import SLUG

pytestmark = pytest.mark.django_db

# A valid value of each parameter name, so that only the parameter under test is hostile.
# `url` is the admin's catch-all; `kind` and `fmt` are the choices of the plot downloads;
# `key` and `uidb36` those of allauth's email-confirmation and password-reset links.
GOOD = {
    "slug": "cifar10", "label_set": "original", "number": "1", "kind": "label-set",
    "fmt": "csv", "app_label": "leaderboard", "url": "nothing-here", "id": "1",
    "object_id": "1", "content_type_id": "1", "submission_id": "1", "audit_id": "1",
    "upload_id": "1", "item_id": "1", "candidate_id": "1", "webhook_id": "1",
    "other_id": "2", "name": "evalserver_client-0.2.0-py3-none-any.whl",
    "example_set": "cifar10-test", "index": "0", "request_id": "1", "username": "maintainer",
    "key": "MQ:1abcde:xyz", "uidb36": "1",
}
NUL, LONG, NOT_UTF8, PARENT = "%00", "9" * 300, "%ff%fe", ".."
HOSTILE = (NUL, LONG, NOT_UTF8, PARENT)
# GET and POST on every route; these too where a class-based view handles them.
EXTRA_METHODS = ("put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    url_format: str  # "api/benchmarks/%(slug)s/": the pattern's regex, normalized
    parameters: tuple[str, ...]
    integers: frozenset[str]  # the `<int:...>` parameters: 300 digits are an int
    methods: tuple[str, ...]
    view: Any

    def url(self, **values: str) -> str:
        return "/" + self.url_format % {name: values.get(name, GOOD[name])
                                        for name in self.parameters}


def _methods(callback: Any) -> tuple[str, ...]:
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    return ("get", "post",
            *(method for method in EXTRA_METHODS if hasattr(view_class, method)))


def _walk(resolver: URLResolver, prefix: str = "") -> Iterator[Route]:
    for pattern in resolver.url_patterns:
        regex = prefix + pattern.pattern.regex.pattern.lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern, regex)
        elif isinstance(pattern, URLPattern):
            url_format, parameters = normalize(regex)[0]
            converters = getattr(pattern.pattern, "converters", {})
            integers = frozenset(name for name, converter in converters.items()
                                 if isinstance(converter, IntConverter))
            yield Route(url_format, tuple(parameters), integers, _methods(pattern.callback),
                        pattern.callback)


ROUTES = tuple(_walk(get_resolver()))
WITH_PARAMETERS = tuple(route for route in ROUTES if route.parameters)
# The project's own routes: the admin's are Django's and those under accounts/ allauth's (their
# parameters are regexes of their own, e.g. a reset link's key takes any character), only
# walked for a 5xx.
OWN = tuple(route for route in WITH_PARAMETERS
            if not route.url_format.startswith(("admin/", "accounts/")))


def _path(url: str) -> str:
    """request.path of this URL as Django reads it: percent-escapes decoded, bytes that are
    not UTF-8 escaped again (`%FF%FE`)."""
    return repercent_broken_unicode(unquote_to_bytes(url)).decode()


def _refused(route: Route) -> Iterator[tuple[str, str]]:
    """(url, method) of every hostile value that a converter of this route refuses: all of
    them, except 300 digits where the parameter is an `<int:...>`."""
    for name in route.parameters:
        for value in HOSTILE:
            if not (value == LONG and name in route.integers):
                for method in route.methods:
                    yield route.url(**{name: value}), method


def _is_error_shape(body: Any) -> bool:
    """{"error": {"code": str, "message": str, ("field": str)}} (docs/api.md §3)."""
    error = body.get("error") if isinstance(body, dict) and set(body) == {"error"} else None
    return (isinstance(error, dict) and {"code", "message"} <= set(error) <= {
        "code", "message", "field"} and all(isinstance(v, str) and v for v in error.values()))


@pytest.fixture
def callers(loaded: Settings) -> dict[str, Client]:
    """An anonymous caller and a maintainer (staff: past the permission checks, into the
    admin), over the built-in benchmarks, so that a lookup reaches the database."""
    maintainer = Client(raise_request_exception=False)
    maintainer.force_login(factories.host_create("maintainer"))
    return {"anonymous": Client(raise_request_exception=False), "maintainer": maintainer}


def _send(client: Client, method: str, url: str) -> HttpResponse:
    response: HttpResponse = getattr(client, method)(url)
    return response


def test_it_walks_every_route_with_a_valid_value_for_each_parameter() -> None:
    assert {name for route in ROUTES for name in route.parameters} == set(GOOD)
    assert len(OWN) == 60
    assert [route.url() for route in WITH_PARAMETERS
            if resolve(_path(route.url())).func is not route.view] == []


def test_it_answers_a_hostile_path_parameter_on_every_route_without_a_server_error(
    callers: dict[str, Client],
) -> None:
    bad = []
    for route in WITH_PARAMETERS:
        for name in route.parameters:
            for value in HOSTILE:
                url = route.url(**{name: value})
                for who, client in callers.items():
                    for method in route.methods:
                        response = _send(client, method, url)
                        api_shape = not url.startswith("/api/") or response.status_code < 400 \
                            or _is_error_shape(json.loads(response.content))
                        if response.status_code >= 500 or not api_shape:
                            bad.append((who, method.upper(), url, response.status_code))
    assert bad == []


def test_it_answers_a_hostile_api_path_parameter_with_the_404_of_an_unknown_url(
    callers: dict[str, Client],
) -> None:
    answers = {}
    for route in OWN:
        if route.url_format.startswith("api/"):
            for url, method in _refused(route):
                for who, client in callers.items():
                    response = _send(client, method, url)
                    answers[(who, method.upper(), url)] = (response.status_code,
                                                           json.loads(response.content))
    assert len(answers) == 2 * 292
    assert {key: answer for key, answer in answers.items() if answer != (404, {"error": {
        "code": "not_found", "message": f"no API endpoint at {_path(key[2])} (see /api/docs/)"
    }})} == {}


def test_it_answers_a_hostile_page_path_parameter_with_the_404_page(
    callers: dict[str, Client],
) -> None:
    answers = {}
    for route in OWN:
        if not route.url_format.startswith("api/"):
            for url, method in _refused(route):
                with pytest.raises(Resolver404):
                    resolve(_path(url))
                for who, client in callers.items():
                    response = _send(client, method, url)
                    answers[(who, method.upper(), url)] = (
                        response.status_code, response["Content-Type"],
                        "<h1>Not found</h1>" in response.content.decode())
    assert len(answers) == 2 * 294
    assert {key: answer for key, answer in answers.items()
            if answer != (404, "text/html; charset=utf-8", True)} == {}


def test_it_takes_as_a_slug_in_a_url_what_the_bundle_reader_takes_as_a_slug() -> None:
    regex = get_converters()["catalog_slug"].regex
    assert SLUG.pattern == f"^{regex}$"
    max_length = Benchmark._meta.get_field("slug").max_length
    assert max_length == 64
    assert [bool(re.fullmatch(regex, value)) for value in (
        "cifar10.1-v6", "a", "a" * max_length, "a" * (max_length + 1), "Cifar10", "-a", "a-",
        ".", "..", "a\x00", "a/b", "a%00",
    )] == [True, True, True, False, False, False, False, False, False, False, False, False]


def test_it_serves_every_loaded_benchmark_and_label_set_at_its_slug(loaded: Settings) -> None:
    client = Client()
    slugs = set()
    for label_set in LabelSet.objects.select_related("benchmark"):
        slug, name = label_set.benchmark.slug, label_set.slug
        slugs |= {slug, name}
        versions = reverse("api-label-set-versions", kwargs={"slug": slug, "label_set": name})
        assert (versions, client.get(versions).status_code) == (
            f"/api/benchmarks/{slug}/label-sets/{name}/versions/", 200)
        board = reverse("api-leaderboard", kwargs={"slug": slug})
        assert client.get(board).status_code == 200
    slugs |= set(ExampleSet.objects.values_list("slug", flat=True))
    assert {slug for slug in slugs if not SLUG.match(slug)} == set()
