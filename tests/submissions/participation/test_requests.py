"""Requests to join a benchmark in approval mode (docs/hosts/participation.md): asked once,
listed for its hosts (and each participant their own), decided once by its hosts only, each
step told once to whoever opted in; a hidden benchmark is 404 to whoever may not see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderboard.catalog.models import Benchmark
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.services import notification_preference_update
from leaderboard.submissions.participation.models import ParticipationRequest
from tests import factories
from tests.submissions.participation.toy_world import (
    REQUESTS,
    RULES,
    ToyWorld,
    client,
    rules_put,
    submit,
    toy_world,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path: Path, sent: list[tuple[str, int]]) -> ToyWorld:
    made = toy_world(tmp_path)
    assert rules_put(made.host, mode="approval").status_code == 200
    return made


def _error(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def _decide(user: Any, request_id: int, decision: str, note: str = "") -> Any:
    return client(user).post(f"{REQUESTS}{request_id}/decision/",
                             {"decision": decision, "note": note}, format="json")


def test_it_asks_once_and_decides_once(world: ToyWorld) -> None:
    asked = client(world.alice).post(REQUESTS, {"message": "  I study label noise. "},
                                     format="json")
    assert asked.status_code == 201
    body = asked.json()
    assert {k: body[k] for k in ("benchmark", "user", "status", "message", "note",
                                 "decided_by", "decided_at")} == {
        "benchmark": "toy", "user": "alice", "status": "pending",
        "message": "I study label noise.", "note": "", "decided_by": None, "decided_at": None}
    again = client(world.alice).post(REQUESTS, {}, format="json")
    assert _error(again) == (409, "already_requested")

    decided = _decide(world.host, body["id"], "approve", "welcome")
    assert decided.status_code == 200
    assert (decided.json()["status"], decided.json()["note"], decided.json()["decided_by"]) == (
        "approved", "welcome", "lab-host")
    assert decided.json()["decided_at"] is not None
    second = _decide(world.admin, body["id"], "refuse")
    assert _error(second) == (409, "already_decided")
    row = ParticipationRequest.objects.get()
    assert (row.status, row.note, row.decided_by_id) == ("approved", "welcome", world.host.pk)
    assert submit(world.alice).status_code == 201


def test_it_lets_only_the_benchmarks_hosts_decide(world: ToyWorld) -> None:
    request_id = client(world.alice).post(REQUESTS, {}, format="json").json()["id"]
    bob = factories.user_create("bob")
    assert _error(_decide(bob, request_id, "approve")) == (403, "permission_denied")
    assert _error(_decide(world.alice, request_id, "approve")) == (403, "permission_denied")
    assert _error(_decide(world.other_host, request_id, "approve")) == (
        403, "permission_denied")
    # another benchmark's host, through their own benchmark: no such request there
    elsewhere = client(world.other_host).post(
        f"/api/benchmarks/elsewhere/participation/requests/{request_id}/decision/",
        {"decision": "approve"}, format="json")
    assert _error(elsewhere) == (404, "not_found")
    assert _error(_decide(world.host, request_id, "maybe")) == (400, "invalid_choice")
    assert ParticipationRequest.objects.get().status == "pending"


def test_it_lists_every_request_to_its_hosts_and_their_own_to_participants(
        world: ToyWorld) -> None:
    users = [world.alice] + [factories.user_create(f"p{i}") for i in range(3)]
    ids = [client(user).post(REQUESTS, {}, format="json").json()["id"] for user in users]
    _decide(world.host, ids[1], "refuse", "no affiliation given")
    _decide(world.host, ids[2], "approve")
    listed = client(world.host).get(REQUESTS).json()
    assert (listed["count"], [r["user"] for r in listed["results"]]) == (
        4, ["p2", "p1", "p0", "alice"])
    pending = client(world.host).get(REQUESTS, {"status": "pending"}).json()
    assert [r["id"] for r in pending["results"]] == [ids[3], ids[0]]
    refused = client(world.admin).get(REQUESTS, {"status": "refused"}).json()
    assert [(r["user"], r["note"]) for r in refused["results"]] == [
        ("p0", "no affiliation given")]
    own = client(world.alice).get(REQUESTS).json()
    assert [r["id"] for r in own["results"]] == [ids[0]]
    assert client(world.other_host).get(REQUESTS).json()["count"] == 0
    assert _error(client(world.host).get(REQUESTS, {"status": "odd"})) == (
        400, "invalid_choice")
    assert _error(client(None).get(REQUESTS)) == (401, "not_authenticated")


def test_it_refuses_a_request_to_an_open_benchmark(world: ToyWorld) -> None:
    rules_put(world.host, mode="open")
    assert _error(client(world.alice).post(REQUESTS, {}, format="json")) == (
        400, "participation_open")


def test_it_answers_404_for_a_hidden_benchmark_to_whoever_may_not_see_it(
        world: ToyWorld) -> None:
    request_id = client(world.alice).post(REQUESTS, {}, format="json").json()["id"]
    Benchmark.objects.filter(slug="toy").update(hidden=True)
    for user in (world.alice, world.other_host, None):
        assert _error(client(user).get(RULES)) == (404, "not_found")
    assert _error(client(world.alice).post(REQUESTS, {}, format="json")) == (404, "not_found")
    assert _error(_decide(world.other_host, request_id, "approve")) == (404, "not_found")
    assert client(world.host).get(RULES).status_code == 200
    assert _decide(world.host, request_id, "approve").status_code == 200


def test_it_tells_the_hosts_of_a_request_and_the_user_of_the_decision_once_each(
        world: ToyWorld, django_capture_on_commit_callbacks: Any) -> None:
    for user, event in ((world.host, "participation.requested"),
                        (world.admin, "participation.requested"),
                        (world.other_host, "participation.requested"),
                        (world.alice, "participation.decided")):
        notification_preference_update(user=user, event=event, email=True, webhook=False)
    with django_capture_on_commit_callbacks(execute=True):
        request_id = client(world.alice).post(REQUESTS, {"message": "hi"},
                                              format="json").json()["id"]
    told = NotificationDelivery.objects.filter(event="participation.requested")
    assert sorted(told.values_list("user__username", flat=True)) == ["lab-admin", "lab-host"]
    assert told.first().payload["data"] == {  # type: ignore[union-attr]
        "request": {"id": request_id, "benchmark": "toy", "user": "alice", "message": "hi"}}
    with django_capture_on_commit_callbacks(execute=True):
        _decide(world.host, request_id, "refuse", "not yet")
    with django_capture_on_commit_callbacks(execute=True):
        _decide(world.host, request_id, "approve")  # 409: nothing told
    [decided] = NotificationDelivery.objects.filter(event="participation.decided")
    assert (decided.user_id, decided.payload["data"]) == (world.alice.pk, {
        "request": {"id": request_id, "benchmark": "toy", "status": "refused",
                    "note": "not yet"}})
    assert NotificationDelivery.objects.count() == 3
