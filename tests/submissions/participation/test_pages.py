"""The participation pages (docs/participants/joining-a-benchmark.md,
docs/hosts/participation.md): a participant asks to join and accepts the terms; the
benchmark's hosts set the rules and decide; anyone else gets 403, and a hidden benchmark 404."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from leaderboard.submissions.participation.models import (
    ParticipationRequest,
    ParticipationRules,
    TermsAcceptance,
)
from tests import factories
from tests.submissions.participation.toy_world import ToyWorld, submit, toy_world
from tests.workers.scoring.bundles.bundle_files import LABELS

pytestmark = pytest.mark.django_db

PAGE = "/benchmarks/toy/participation/"
HOSTS = "/benchmarks/toy/participation/hosts/"
TERMS = "Be kind."


@pytest.fixture
def world(tmp_path: Path, sent: list[tuple[str, int]]) -> ToyWorld:
    return toy_world(tmp_path)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_lets_the_hosts_set_the_rules_and_decide_on_their_page(world: ToyWorld) -> None:
    host = _client(world.host)
    assert "These are the defaults" in host.get(HOSTS).content.decode()
    saved = host.post(HOSTS, {"action": "rules", "mode": "approval", "terms": TERMS})
    assert (saved.status_code, saved["Location"]) == (302, HOSTS)
    rules = ParticipationRules.objects.get()
    assert (rules.mode, rules.require_verified_email, rules.terms, rules.terms_sha256,
            rules.updated_by) == ("approval", False, TERMS,
                                  hashlib.sha256(TERMS.encode()).hexdigest(), world.host)

    alice = _client(world.alice)
    page = alice.get(PAGE).content.decode()
    assert "Ask to join" in page and "I accept these terms" in page
    assert 'data-code="participation_required"' in page
    assert alice.post(PAGE, {"action": "ask", "message": "hello"}).status_code == 302
    assert 'data-status="pending"' in alice.get(PAGE).content.decode()

    request = ParticipationRequest.objects.get()
    listed = host.get(HOSTS, {"status": "pending"}).content.decode()
    assert f'id="request-{request.pk}"' in listed and "hello" in listed
    host.post(HOSTS, {"action": "decide", "request_id": request.pk, "decision": "approve",
                      "note": "welcome"})
    request.refresh_from_db()
    assert (request.status, request.note, request.decided_by) == ("approved", "welcome",
                                                                  world.host)
    assert 'data-code="terms_not_accepted"' in alice.get(PAGE).content.decode()
    assert alice.post(PAGE, {"action": "accept",
                             "terms_sha256": rules.terms_sha256}).status_code == 302
    acceptance = TermsAcceptance.objects.get()
    page = alice.get(PAGE).content.decode()
    assert f"You accepted these terms on {acceptance.accepted_at:%Y-%m-%d %H:%M} UTC" in page
    assert "You may submit to this benchmark" in page
    assert submit(world.alice).status_code == 201


def test_it_shows_the_hosts_page_to_the_benchmarks_hosts_only(world: ToyWorld) -> None:
    for user in (world.alice, world.other_host):
        assert _client(user).get(HOSTS).status_code == 403
        assert _client(user).post(HOSTS, {"action": "rules", "mode": "approval"}
                                  ).status_code == 403
    assert not ParticipationRules.objects.exists()
    assert Client().get(HOSTS).status_code == 302  # to the login page
    Benchmark.objects.filter(slug="toy").update(hidden=True)
    assert _client(world.other_host).get(HOSTS).status_code == 404
    assert _client(world.alice).get(PAGE).status_code == 404
    assert _client(world.admin).get(HOSTS).status_code == 200


def test_it_refuses_the_submit_pages_upload_with_the_way_to_join(world: ToyWorld) -> None:
    assert "participation-notes" not in _client(world.alice).get("/submit/").content.decode()
    _client(world.host).post(HOSTS, {"action": "rules", "mode": "approval", "terms": ""})
    note = ('<li data-benchmark="toy">Toy benchmark: toy admits participants by approval '
            'of its hosts: ask to join at /benchmarks/toy/participation/ (<a href="/benchmarks/toy/'
            'participation/">its rules</a>).</li>')
    assert note in _client(world.alice).get("/submit/").content.decode()
    form = {"benchmark": "toy", "model_name": "m", "public": "on",
            "toy-test": factories.upload_json(LABELS)}
    refused = _client(world.alice).post("/submit/", form)
    assert refused.status_code == 403
    assert ("toy admits participants by approval of its hosts: ask to join at "
            "/benchmarks/toy/participation/") in refused.content.decode()
    assert not Submission.objects.exists()
