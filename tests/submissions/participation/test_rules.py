"""A benchmark's participation rules, enforced where a submission is made
(docs/hosts/participation.md): open, by approval (its hosts exempt), a verified email, terms;
the defaults, stricter where a label set is hidden. Refused: 403 with a code, nothing stored."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import pytest
from django.apps import apps

from leaderboard.catalog.models import LabelSet
from leaderboard.submissions.models import Submission
from leaderboard.submissions.participation.models import ParticipationRequest
from leaderboard.submissions.participation.selectors import participation_rules_get
from leaderboard.submissions.participation.services import (
    ParticipationError,
    participation_request_create,
    participation_request_decide,
    participation_rules_set,
)
from leaderboard.submissions.services import submission_create
from tests import factories
from tests.submissions.participation.toy_world import (
    ACCEPT,
    RULES,
    ToyWorld,
    client,
    rules_put,
    submit,
    toy_world,
)
from tests.workers.scoring.bundles.bundle_files import LABELS

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path: Path, sent: list[tuple[str, int]]) -> ToyWorld:
    return toy_world(tmp_path)


def _error(response: object) -> tuple[int, str]:
    body = response.json()  # type: ignore[attr-defined]
    return response.status_code, body["error"]["code"]  # type: ignore[attr-defined]


def test_it_admits_anyone_signed_in_to_an_open_benchmark(world: ToyWorld) -> None:
    assert participation_rules_get(benchmark=world.benchmark).mode == "open"
    response = submit(world.alice)
    assert response.status_code == 201
    assert list(Submission.objects.values_list("owner__username", "model_name")) == [
        ("alice", "m")]


def test_it_refuses_a_user_without_an_approved_request_in_approval_mode(
        world: ToyWorld) -> None:
    assert rules_put(world.host, mode="approval").status_code == 200
    refused = submit(world.alice)
    assert _error(refused) == (403, "participation_required")
    assert refused.json()["error"]["message"] == (
        "toy admits participants by approval of its hosts: ask to join at "
        "/benchmarks/toy/participation/")
    request = participation_request_create(user=world.alice, benchmark=world.benchmark)
    assert _error(submit(world.alice)) == (403, "participation_required")
    assert "your request is pending" in submit(world.alice).json()["error"]["message"]
    participation_request_decide(request=request, by=world.host, approve=True)
    assert submit(world.alice).status_code == 201
    assert Submission.objects.count() == 1  # nothing stored on a refusal


def test_it_refuses_a_refused_user_through_the_service_too(world: ToyWorld) -> None:
    participation_rules_set(benchmark=world.benchmark, by=world.host, mode="approval",
                            require_verified_email=False, terms="")
    request = participation_request_create(user=world.alice, benchmark=world.benchmark)
    participation_request_decide(request=request, by=world.host, approve=False, note="no")
    with pytest.raises(ParticipationError) as refused:
        submission_create(owner=world.alice, benchmark=world.benchmark, model_name="m",
                          files={"toy-test": factories.upload_json(LABELS)})
    assert (refused.value.code, refused.value.http_status, refused.value.message) == (
        "participation_required", 403,
        "toy admits participants by approval of its hosts: your request was refused")
    assert Submission.objects.count() == 0


def test_it_exempts_the_benchmarks_hosts_from_approval(world: ToyWorld) -> None:
    rules_put(world.admin, mode="approval")
    assert submit(world.host).status_code == 201
    assert submit(world.admin, "m2").status_code == 201
    assert _error(submit(world.other_host)) == (403, "participation_required")


def test_it_admits_only_a_verified_email_where_one_is_required(world: ToyWorld) -> None:
    rules_put(world.host, require_verified_email=True)
    assert _error(submit(world.alice)) == (403, "email_unverified")
    assert _error(submit(world.host)) == (403, "email_unverified")  # hosts too
    if apps.is_installed("allauth.account"):  # without allauth no address is verified
        from allauth.account.models import EmailAddress

        EmailAddress.objects.create(user=world.alice, email="alice@example.org",
                                    verified=False, primary=True)
        assert _error(submit(world.alice)) == (403, "email_unverified")
        EmailAddress.objects.filter(user=world.alice).update(verified=True)
        assert submit(world.alice).status_code == 201
    rules_put(world.host, require_verified_email=False)
    assert submit(world.host, "m2").status_code == 201


def test_it_defaults_a_benchmark_with_a_hidden_label_set_to_approval_and_a_verified_email(
        world: ToyWorld) -> None:
    before = client(world.alice).get(RULES).json()
    LabelSet.objects.filter(benchmark=world.benchmark, slug="original").update(
        labels_hidden=True)
    after = client(world.alice).get(RULES).json()
    assert [(b["mode"], b["require_verified_email"], b["defaults"]) for b in (before, after)
            ] == [("open", False, True), ("approval", True, True)]
    assert after["you"] == {"may_submit": False, "refusal_code": "participation_required",
                            "is_host": False, "request_status": None,
                            "email_verified": False, "terms_accepted_at": None}
    assert _error(submit(world.alice)) == (403, "participation_required")
    # the hosts' first write stores the rules they chose: the defaults no longer apply
    stored = rules_put(world.host, mode="open").json()
    assert (stored["mode"], stored["require_verified_email"], stored["defaults"]) == (
        "open", False, False)
    assert submit(world.alice).status_code == 201


def test_it_asks_for_the_terms_once_and_again_when_they_change(world: ToyWorld) -> None:
    terms = "Do not train on the test set.\nOne account per person."
    sha = hashlib.sha256(terms.encode()).hexdigest()
    assert rules_put(world.host, terms=terms).json()["terms_sha256"] == sha
    assert _error(submit(world.alice)) == (403, "terms_not_accepted")
    first = client(world.alice).post(ACCEPT, {"terms_sha256": sha}, format="json")
    assert (first.status_code, first.json()["terms_sha256"]) == (201, sha)
    accepted_at = first.json()["accepted_at"]
    again = client(world.alice).post(ACCEPT, {"terms_sha256": sha}, format="json")
    assert (again.status_code, again.json()["accepted_at"]) == (200, accepted_at)
    assert client(world.alice).get(RULES).json()["you"]["terms_accepted_at"] == accepted_at
    assert datetime.fromisoformat(accepted_at).tzinfo is not None
    assert submit(world.alice).status_code == 201

    new_terms = terms + "\nCite the benchmark."
    new_sha = hashlib.sha256(new_terms.encode()).hexdigest()
    rules_put(world.host, terms=new_terms)
    assert _error(submit(world.alice, "m2")) == (403, "terms_not_accepted")
    stale = client(world.alice).post(ACCEPT, {"terms_sha256": sha}, format="json")
    assert _error(stale) == (409, "terms_changed")
    assert client(world.alice).post(ACCEPT, {"terms_sha256": new_sha},
                                    format="json").status_code == 201
    assert submit(world.alice, "m2").status_code == 201
    assert Submission.objects.count() == 2


def test_it_refuses_to_accept_terms_a_benchmark_does_not_have(world: ToyWorld) -> None:
    response = client(world.alice).post(ACCEPT, {"terms_sha256": "0" * 64}, format="json")
    assert _error(response) == (400, "no_terms")
    bad = client(world.alice).post(ACCEPT, {"terms_sha256": "nope"}, format="json")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "terms_sha256")


def test_it_lets_only_the_benchmarks_hosts_set_its_rules(world: ToyWorld) -> None:
    assert _error(rules_put(world.alice, mode="approval")) == (403, "permission_denied")
    assert _error(rules_put(world.other_host, mode="approval")) == (403, "permission_denied")
    anonymous = client(None).put(RULES, {"mode": "approval",
                                         "require_verified_email": False}, format="json")
    assert _error(anonymous) == (401, "not_authenticated")
    assert _error(rules_put(world.host, mode="closed")) == (400, "invalid_choice")
    assert participation_rules_get(benchmark=world.benchmark).pk is None
    assert rules_put(world.admin, mode="approval").status_code == 200
    assert ParticipationRequest.objects.count() == 0
