"""A lab hosts its own benchmark, end to end through the API (docs/hosts/requesting-to-host.md,
docs/hosts/participation.md): it asks to host, a site admin approves, its admin adds a host,
the host uploads a bundle with a hidden label set (added by the worker's task), sets terms; a
participant asks to join (the hidden set's default: approval and a verified email), is
approved, accepts the terms and submits; the host reveals the private part and opens the next
phase. Expected values worked out by hand below."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import api_client
from tests.catalog.toy_bundle import process
from tests.workers.scoring.bundles.bundle_files import (
    hidden_split_bundle,
    write_bundle,
    zip_bytes,
)

pytestmark = pytest.mark.django_db

SECRET = [0, 1, 2, 2, 1, 0]
PRIVATE = [3, 4, 5]  # the public part: examples 0, 1, 2
# The participant's predictions: the public part all right (3/3), the private part 1/3 (5).
PREDICTED = [0, 1, 2, 0, 0, 0]
TERMS = "Do not train on the test images. One account per person."


def _hidden_bundle_zip(folder: Path) -> Path:
    source = write_bundle(folder / "toy", *hidden_split_bundle(SECRET, PRIVATE)).parent
    entries = {f"toy/{path.relative_to(source)}": path.read_bytes()
               for path in sorted(source.rglob("*")) if path.is_file()}
    path = folder / "toy.zip"
    path.write_bytes(zip_bytes(entries))
    return path


def _submit(user: User) -> object:
    return api_client(user).post(
        "/api/submissions/", {"benchmark": "toy", "model_name": "lab-model",
                              "toy-test": factories.upload_json(PREDICTED)}, format="multipart")


def test_it_takes_a_lab_from_its_request_to_host_to_a_revealed_phase(
    catalog_settings: Settings, tmp_path: Path,
) -> None:
    from leaderboard.tasks.cpu import score_submission

    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    catalog_settings.EVALSERVER_HOST_TEAMS_SELF_SERVICE = False
    lead, host = factories.user_create("lab-lead"), factories.user_create("lab-host")
    participant = factories.user_create("participant")  # its email address verified
    root = User.objects.create_superuser("root", "root@example.org", factories.PASSWORD)

    # the lab asks; a participant may not decide; a site admin (here a superuser) approves
    asked = api_client(lead).post("/api/host-requests/", {
        "slug": "vision-lab", "name": "Vision lab", "reason": "a relabelled test set"},
        format="json")
    assert (asked.status_code, asked.json()["status"]) == (201, "pending")
    decision = f"/api/host-requests/{asked.json()['id']}/decision/"
    assert api_client(participant).post(decision, {"decision": "approve"},
                                        format="json").status_code == 403
    approved = api_client(root).post(decision, {"decision": "approve"}, format="json")
    assert (approved.status_code, approved.json()["status"]) == (200, "approved")
    added = api_client(lead).put("/api/teams/vision-lab/members/lab-host/", {"role": "host"},
                                 format="json")
    assert (added.status_code, added.json()) == (
        200, {"username": "lab-host", "role": "host", "changed": True})

    # the host uploads the bundle for the team; the worker's task adds it
    with open(_hidden_bundle_zip(tmp_path), "rb") as handle:
        uploaded = api_client(host).post("/api/bundles/", {"bundle": handle,
                                                           "team": "vision-lab"},
                                         format="multipart")
    assert uploaded.status_code == 202, uploaded.json()
    assert process(uploaded.json()["id"]) == "done"
    benchmark = Benchmark.objects.get(slug="toy")
    assert benchmark.team.slug == "vision-lab"

    # a hidden label set: approval and a verified email by default; the host adds terms
    rules_url = "/api/benchmarks/toy/participation/rules/"
    rules = api_client(participant).get(rules_url).json()
    assert (rules["mode"], rules["require_verified_email"], rules["defaults"]) == (
        "approval", True, True)
    assert api_client(participant).put(rules_url, {"mode": "open", "require_verified_email":
                                                   False}, format="json").status_code == 403
    set_rules = api_client(host).put(rules_url, {"mode": "approval",
                                                 "require_verified_email": True,
                                                 "terms": TERMS}, format="json")
    assert set_rules.status_code == 200, set_rules.json()

    # the participant: refused, asks, is approved, accepts the terms, submits
    refused = _submit(participant)
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        403, "participation_required")
    requests_url = "/api/benchmarks/toy/participation/requests/"
    joined = api_client(participant).post(requests_url, {"message": "our ViT"}, format="json")
    assert (joined.status_code, joined.json()["status"]) == (201, "pending")
    decided = api_client(host).post(f"{requests_url}{joined.json()['id']}/decision/",
                                    {"decision": "approve", "note": "welcome"}, format="json")
    assert (decided.status_code, decided.json()["status"]) == (200, "approved"), decided.json()
    unaccepted = _submit(participant)
    assert unaccepted.json()["error"]["code"] == "terms_not_accepted"
    sha = set_rules.json()["terms_sha256"]
    accepted = api_client(participant).post(
        "/api/benchmarks/toy/participation/terms/acceptance/", {"terms_sha256": sha},
        format="json")
    assert accepted.status_code == 201, accepted.json()
    assert Submission.objects.count() == 0  # nothing stored by the refusals
    created = _submit(participant)
    assert created.status_code == 201, created.json()
    submission_id = created.json()["id"]
    assert score_submission.apply(args=[submission_id], task_id="t-lab").get() == "scored"
    # the public part's released figure: 3 of its 3 examples right
    board = api_client().get("/api/benchmarks/toy/leaderboard/?sort=secret").json()
    assert [(r["submission_id"], r["scores"]["secret"]["accuracy"],
             r["scores"]["secret"]["total"]) for r in board["rows"]] == [(submission_id, 1.0, 3)]

    # the host reveals the private part (once) and opens the next phase
    reveal = "/api/benchmarks/toy/label-sets/secret/reveal/"
    assert api_client(participant).post(reveal).status_code == 403
    revealed = api_client(host).post(reveal)
    assert (revealed.status_code, revealed.json()["phase"], revealed.json()["revealed_by"]) == (
        200, 1, "lab-host")
    private = api_client().get("/api/benchmarks/toy/leaderboard/?sort=secret-private").json()
    assert [(r["scores"]["secret-private"]["correct"], r["scores"]["secret-private"]["total"])
            for r in private["rows"]] == [(1, 3)]
    opened = api_client(host).post("/api/benchmarks/toy/label-sets/secret/phases/",
                                   {"seed": 5}, format="json")
    assert (opened.status_code, opened.json()["phase"], opened.json()["revealed"]) == (
        201, 2, None)
