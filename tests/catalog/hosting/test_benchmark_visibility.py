"""A hidden benchmark is out of every public list, board, page and form (docs/api.md §5.5);
staff can still show it again, and its rows stay."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.hosting.services import benchmark_visibility_set
from leaderboard.catalog.models import Benchmark
from tests import factories

pytestmark = pytest.mark.django_db

# `loaded` loads every built-in bundle (benchmarks/*.toml); lists are by slug.
ALL_SLUGS = ["20news", "caltech256", "cifar10", "cifar100", "imagenet", "imdb", "mnist"]
VISIBLE_SLUGS = [slug for slug in ALL_SLUGS if slug != "mnist"]


@pytest.fixture
def mnist_hidden(loaded: Settings) -> Benchmark:
    mnist = Benchmark.objects.get(slug="mnist")
    return benchmark_visibility_set(benchmark=mnist, hidden=True)


def test_it_leaves_a_hidden_benchmark_out_of_lists_boards_and_pages(
    mnist_hidden: Benchmark,
) -> None:
    api, web = APIClient(), Client()
    listed = [b["slug"] for b in api.get("/api/benchmarks/").json()]
    assert "mnist" not in listed and "cifar10" in listed
    assert listed == VISIBLE_SLUGS
    for url in ("/api/benchmarks/mnist/", "/api/benchmarks/mnist/leaderboard/",
                "/api/benchmarks/mnist/about/"):
        answer = api.get(url)
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found"), url
    for url in ("/benchmarks/mnist/", "/benchmarks/mnist/about/", "/benchmarks/mnist/plots/"):
        assert web.get(url).status_code == 404, url
    assert 'href="/benchmarks/mnist/"' not in web.get("/").content.decode()
    assert 'href="/benchmarks/cifar10/"' in web.get("/").content.decode()
    assert Benchmark.objects.filter(slug="mnist", hidden=True).count() == 1  # kept


def test_it_refuses_submissions_to_a_hidden_benchmark(mnist_hidden: Benchmark) -> None:
    client = APIClient()
    client.force_authenticate(factories.user_create("researcher"))
    answer = client.post("/api/submissions/", {"benchmark": "mnist", "model_name": "m"},
                         format="multipart")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("unknown_benchmark", "benchmark")
    named, known = error["message"].split("; use one of: ")
    assert named == "benchmark: no benchmark 'mnist'"
    assert "cifar10" in known.split(", ") and "mnist" not in known.split(", ")
    assert known == ", ".join(VISIBLE_SLUGS)

    benchmark_visibility_set(benchmark=mnist_hidden, hidden=False)
    listed = [b["slug"] for b in APIClient().get("/api/benchmarks/").json()]
    assert "mnist" in listed
    assert listed == ALL_SLUGS
