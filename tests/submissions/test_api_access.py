"""Who may see and change a submission, and the caller's own list (paginated)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import LabelSet
from leaderboard.catalog.services import benchmark_sync, label_set_version_create
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import score_upsert, submission_create
from tests import factories
from tests.api_support import SUBMISSIONS, scored_in_process, token_client
from tests.helpers import builtin_definition

pytestmark = pytest.mark.django_db

MODEL = "resnet_basic_110"


@pytest.fixture
def alice(loaded: Settings) -> User:
    return factories.user_create("alice")


def _not_found(submission_id: int) -> dict[str, object]:
    return {"error": {"code": "not_found",
                      "message": f"no submission {submission_id} that you can see"}}


def test_it_hides_a_private_submission_from_everyone_but_its_owner_and_staff(
    alice: User, data_dir: Path
) -> None:
    private = scored_in_process(data_dir, MODEL, alice, public=False)
    url = f"{SUBMISSIONS}{private.pk}/"
    bob = token_client(factories.user_create("bob"))
    staff = token_client(factories.host_create("root"))

    for client in (bob, APIClient()):
        response = client.get(url)
        assert response.status_code == 404
        assert response.json() == _not_found(private.pk)
    # a made-up id answers exactly the same: nothing tells that the private one exists
    assert bob.get(f"{SUBMISSIONS}999999/").json() == _not_found(999999)
    own = token_client(alice).get(url)
    assert own.status_code == 200
    assert (own.json()["id"], own.json()["public"], own.json()["status"]) == (
        private.pk, False, "scored")
    assert staff.get(url).status_code == 200
    assert staff.get(url).json() == own.json()


def test_it_shows_a_public_submission_to_anyone_once_scored(alice: User,
                                                           data_dir: Path) -> None:
    paths = factories.cifar10_model_files(data_dir, MODEL)
    queued = submission_create(
        owner=alice, benchmark=factories.cifar10(), model_name="queued",
        files={"cifar10-test": factories.upload_from_path(paths["cifar10-test"])})
    scored = scored_in_process(data_dir, MODEL, alice)

    assert APIClient().get(f"{SUBMISSIONS}{queued.pk}/").status_code == 404
    assert token_client(alice).get(f"{SUBMISSIONS}{queued.pk}/").json()["status"] == "queued"
    response = APIClient().get(f"{SUBMISSIONS}{scored.pk}/")
    assert response.status_code == 200
    assert response.json()["owner"] == "alice"
    assert sorted(response.json()["scores"]) == [
        "cifar10.1-v6", "cifar10h", "corrected", "original"]


def test_it_lets_anonymous_visitors_read_benchmarks_and_leaderboards(loaded: Settings) -> None:
    assert APIClient().get("/api/benchmarks/").status_code == 200
    assert APIClient().get("/api/benchmarks/cifar10/").status_code == 200
    assert APIClient().get("/api/benchmarks/cifar10/leaderboard/").status_code == 200


def test_it_needs_credentials_for_the_own_list(loaded: Settings) -> None:
    response = APIClient().get(SUBMISSIONS)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_it_lets_the_owner_hide_and_show_a_submission(alice: User, data_dir: Path) -> None:
    submission = scored_in_process(data_dir, MODEL, alice)
    url = f"{SUBMISSIONS}{submission.pk}/"
    board = "/api/benchmarks/cifar10/leaderboard/"
    owner = token_client(alice)
    assert [r["submission_id"] for r in APIClient().get(board).json()["rows"]] == [submission.pk]

    hidden = owner.patch(url, {"public": False}, format="json")

    assert hidden.status_code == 200
    assert hidden.json() == {**owner.get(url).json(), "public": False}
    assert APIClient().get(board).json()["rows"] == []
    assert APIClient().get(url).status_code == 404
    shown = owner.patch(url, {"public": "true"})  # a form body works too
    assert shown.json()["public"] is True
    assert Submission.objects.get().public is True


def test_it_lets_no_one_else_change_visibility(alice: User, data_dir: Path) -> None:
    public = scored_in_process(data_dir, MODEL, alice)
    private = scored_in_process(data_dir, "wrn_28_10", alice, public=False)
    bob = token_client(factories.user_create("bob"))

    visible = bob.patch(f"{SUBMISSIONS}{public.pk}/", {"public": False}, format="json")
    invisible = bob.patch(f"{SUBMISSIONS}{private.pk}/", {"public": True}, format="json")
    anonymous = APIClient().patch(f"{SUBMISSIONS}{public.pk}/", {"public": False}, format="json")

    assert visible.status_code == 403
    assert visible.json() == {"error": {
        "code": "not_owner",
        "message": "only the submitter can change a submission's visibility"}}
    assert (invisible.status_code, invisible.json()) == (404, _not_found(private.pk))
    assert anonymous.status_code == 401
    assert list(Submission.objects.order_by("id").values_list("public", flat=True)) == [
        True, False]


@pytest.mark.parametrize("body", [{}, {"public": "maybe"}])
def test_it_refuses_a_visibility_change_without_a_boolean(alice: User, data_dir: Path,
                                                          body: dict[str, str]) -> None:
    submission = scored_in_process(data_dir, MODEL, alice)

    response = token_client(alice).patch(f"{SUBMISSIONS}{submission.pk}/", body)

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "public"
    assert Submission.objects.get().public is True


def test_it_pages_the_own_list_fifty_at_a_time(db: None) -> None:
    benchmark, _ = benchmark_sync(slug="cifar10", values=builtin_definition("cifar10").benchmark)
    alice, bob = factories.user_create("alice"), factories.user_create("bob")
    Submission.objects.bulk_create(
        [Submission(owner=alice, benchmark=benchmark, model_name=f"m{i}") for i in range(51)]
        + [Submission(owner=bob, benchmark=benchmark, model_name="bob's")])
    ids = list(Submission.objects.filter(owner=alice).order_by("-created", "-id")
               .values_list("id", flat=True))
    client = token_client(alice)

    first = client.get(SUBMISSIONS).json()
    second = client.get(SUBMISSIONS, {"page": 2}).json()

    assert (first["count"], first["previous"]) == (51, None)
    assert first["next"] == "http://testserver/api/submissions/?page=2"
    assert [s["id"] for s in first["results"]] == ids[:50]
    assert (second["count"], second["next"]) == (51, None)
    assert second["previous"] == "http://testserver/api/submissions/"
    assert [s["id"] for s in second["results"]] == ids[50:]
    assert client.get(SUBMISSIONS, {"page": 3}).json()["error"]["code"] == "not_found"


def test_it_lists_each_submission_like_its_detail(alice: User, data_dir: Path) -> None:
    scored = scored_in_process(data_dir, MODEL, alice)
    private = scored_in_process(data_dir, "wrn_28_10", alice, public=False)
    scored_in_process(data_dir, "vgg16_keras", factories.user_create("bob"))
    # a newer version of `original` with a score on it: both views show the newest
    original = LabelSet.objects.get(benchmark__slug="cifar10", slug="original")
    v2 = label_set_version_create(label_set=original, content_hash="e" * 64, summary={})
    score_upsert(submission=scored, version=v2, record={
        "accuracy": 0.5, "correct": 5000, "total": 10000, "ci_low": 0.49, "ci_high": 0.51})
    client = token_client(alice)

    listed = client.get(SUBMISSIONS).json()

    assert listed["count"] == 2
    assert listed["results"] == [client.get(f"{SUBMISSIONS}{s.pk}/").json()
                                 for s in (private, scored)]
    assert listed["results"][1]["scores"]["original"] == {
        "accuracy": 0.5, "correct": 5000, "total": 10000, "ci_low": 0.49, "ci_high": 0.51,
        "version": 2, "version_hash": "e" * 64}
    assert listed["results"][0]["scores"]["original"]["version"] == 1
