"""A toy benchmark of 6 examples (tests/workers/scoring/bundles/bundle_files.py) owned by a lab
with a host, for the participation tests: small, so the rules are tested, not the scoring."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.response import Response
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.services import host_team_create, host_team_member_set
from tests import factories
from tests.api_support import SUBMISSIONS, api_client
from tests.workers.scoring.bundles.bundle_files import LABELS, manifest, write_bundle

RULES = "/api/benchmarks/toy/participation/rules/"
REQUESTS = "/api/benchmarks/toy/participation/requests/"
ACCEPT = "/api/benchmarks/toy/participation/terms/acceptance/"


@dataclass
class ToyWorld:
    benchmark: Benchmark
    admin: User  # the lab's admin
    host: User  # a host of the lab
    alice: User  # a participant
    other_host: User  # a host of another lab's benchmark


def toy_world(tmp_path: Path) -> ToyWorld:
    call_command("benchmark_add", str(write_bundle(tmp_path / "toy", manifest())),
                 stdout=io.StringIO(), stderr=io.StringIO())
    admin, host = factories.user_create("lab-admin"), factories.user_create("lab-host")
    team = host_team_create(slug="lab", name="Lab", admin=admin)
    assert host_team_member_set(actor=admin, team=team, user=host, role="host")
    Benchmark.objects.filter(slug="toy").update(team=team)
    other_admin = factories.user_create("other-admin")
    other = host_team_create(slug="other-lab", name="Other lab", admin=other_admin)
    Benchmark.objects.create(slug="elsewhere", name="Elsewhere", num_classes=2,
                             main_example_set="test", team=other)
    return ToyWorld(Benchmark.objects.get(slug="toy"), admin, host,
                    factories.user_create("alice"), other_admin)


def client(user: User | None) -> APIClient:
    return api_client(User.objects.get(pk=user.pk) if user is not None else None)


def submit(user: User, name: str = "m") -> Response:
    """POST /api/submissions/ with right predictions on the toy's one example set."""
    response: Response = client(user).post(SUBMISSIONS, {
        "benchmark": "toy", "model_name": name,
        "toy-test": factories.upload_json(LABELS)}, format="multipart")
    return response


def rules_put(user: User, **rules: object) -> Response:
    body = {"mode": "open", "require_verified_email": False, "terms": "", **rules}
    response: Response = client(user).put(RULES, body, format="json")
    return response
