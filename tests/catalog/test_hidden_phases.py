"""A hidden label set split into a public and a private part (docs/metrics.md §17.4): the
board shows the public part's released figures until staff reveal the private part; then a
private column whose rank shifts are from the public part (the shake-up) and its paired
tests; then a next phase starts afresh. Expected values worked out by hand below."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, HiddenPhase, LabelSet
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import (
    data_files,
    hidden_split_bundle,
    manifest,
    npy_bytes,
    write_bundle,
)

pytestmark = pytest.mark.django_db

SECRET = [0, 1, 2, 2, 1, 0]
PRIVATE = [3, 4, 5]  # the public part: examples 0, 1, 2
# A: the public part all right (3/3), the private part all wrong (0/3).
# B: the public part 2/3, the private part all right (3/3).
A = [0, 1, 2, 0, 0, 1]
B = [0, 1, 0, 2, 1, 0]
REVEAL = "/api/benchmarks/toy/label-sets/secret/reveal/"


@pytest.fixture
def toy_split(catalog_settings: Settings, tmp_path: Path) -> Benchmark:
    path = write_bundle(tmp_path / "bundle", *hidden_split_bundle(SECRET, PRIVATE))
    call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return factories.participation_open(Benchmark.objects.get(slug="toy"))


def _scored(benchmark: Benchmark, name: str, predicted: list[int]) -> Submission:
    submission = submission_create(owner=factories.user_create(name), benchmark=benchmark,
                                   model_name=name,
                                   files={"toy-test": factories.upload_json(predicted)})
    assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == "scored"
    return submission


def _board(sort: str = "secret") -> dict:
    return Client().get(f"/api/benchmarks/toy/leaderboard/?sort={sort}").json()


def test_it_reveals_the_private_part_and_its_shake_up(toy_split: Benchmark) -> None:
    secret = LabelSet.objects.get(benchmark=toy_split, slug="secret")
    phase = HiddenPhase.objects.get(label_set=secret)
    assert (phase.number, phase.size, phase.revealed) == (1, 6, None)
    a, b = _scored(toy_split, "a", A), _scored(toy_split, "b", B)

    before = _board()
    assert [c["slug"] for c in before["columns"]][-1] == "secret"
    assert [(r["submission_id"], r["scores"]["secret"]["accuracy"], r["scores"]["secret"]["total"])
            for r in before["rows"]] == [(a.pk, 1.0, 3), (b.pk, 2 / 3, 3)]
    refused = Client().get("/api/benchmarks/toy/leaderboard/?sort=secret-private")
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "unknown_label_set")

    assert APIClient().post(REVEAL).status_code == 401
    participant = APIClient()
    participant.force_authenticate(factories.user_create("participant"))
    assert participant.post(REVEAL).status_code == 403
    staff_user = factories.host_create("host")
    staff = APIClient()
    staff.force_authenticate(staff_user)
    revealed = staff.post(REVEAL)
    assert revealed.status_code == 200
    assert {k: revealed.json()[k] for k in ("label_set", "phase", "revealed_by", "split")} == {
        "label_set": "secret", "phase": 1, "revealed_by": "host", "split": True}
    phase.refresh_from_db()
    assert phase.revealed_by == staff_user and phase.revealed is not None
    first_reveal = phase.revealed
    assert staff.post(REVEAL).json()["revealed"] == revealed.json()["revealed"]
    phase.refresh_from_db()
    assert phase.revealed == first_reveal  # once: a second call changes nothing

    after = _board("secret-private")
    column = after["columns"][-1]
    assert (column["slug"], column["shift_from"]) == ("secret-private", "secret")
    rows = [(r["submission_id"], r["scores"]["secret-private"]["accuracy"],
             r["scores"]["secret-private"]["correct"], r["ranks"]["secret-private"],
             r["rank_shift"]["secret-private"], r["rank_ub"], r["mcnemar_p"])
            for r in after["rows"]]
    # B: public rank 2 -> private rank 1 (+1); A: 1 -> 2 (-1). Paired on the 3 private
    # examples, B alone right on all three: exact McNemar p = 2 * 0.5**3 = 0.25, no row
    # significantly better than another, so both rank_ub are 1.
    assert rows == [(b.pk, 1.0, 3, 1, 1, 1, None), (a.pk, 0.0, 0, 2, -1, 1, 0.25)]
    page = Client().get("/benchmarks/toy/?sort=secret-private")
    assert page.status_code == 200 and "Secret (private part, revealed)" in page.content.decode()
    # the shake-up drawn as the other rank shifts are: public (x) against private (y)
    plot = Client().get("/benchmarks/toy/plots/ranks/secret-private.json").json()
    assert (plot["x"]["label_set"], plot["y"]["label_set"]) == ("secret", "secret-private")
    assert [(p["submission_id"], p["rank_x"], p["rank_y"], p["shift"]) for p in plot["points"]] \
        == [(a.pk, 1, 2, -1), (b.pk, 2, 1, 1)]
    assert plot["inversions"]["swapped_pairs"] == 1
    plots = Client().get("/benchmarks/toy/plots/?labels=secret-private").content.decode()
    assert "(the public part: this is the shake-up)" in plots
    assert Client().get("/benchmarks/toy/plots/ranks/secret-private.svg").status_code == 200

    opened = staff.post("/api/benchmarks/toy/label-sets/secret/phases/", {"seed": 5})
    assert (opened.status_code, opened.json()["phase"], opened.json()["revealed"]) == (
        201, 2, None)
    fresh = HiddenPhase.objects.get(label_set=secret, number=2)
    assert fresh.fraction == 0.5 and fresh.seed == 5
    again = _board()
    assert [c["slug"] for c in again["columns"]][-1] == "secret"  # phase 2 is not revealed
    refused = Client().get("/benchmarks/toy/plots/ranks/secret-private.json")
    assert refused.status_code == 400
    assert again["rows"] == []  # nobody has released anything in phase 2 yet


def test_it_refuses_a_reveal_without_a_split_or_a_second_phase_before_a_reveal(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    document = manifest()
    document["label_sets"].append({"slug": "secret", "kind": "single", "name": "Secret",
                                   "labels": "secret.npy", "hidden": True})
    files = {**data_files(), "secret.npy": npy_bytes(np.array(SECRET, dtype=np.int64))}
    call_command("benchmark_add", str(write_bundle(tmp_path / "b", document, files)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    staff = APIClient()
    staff.force_authenticate(factories.host_create("host"))
    opened = staff.post("/api/benchmarks/toy/label-sets/secret/phases/", {"seed": 1})
    assert (opened.status_code, opened.json()["error"]["code"]) == (409, "phase_open")
    refused = staff.post(REVEAL)
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "no_private_part")
    missing = staff.post("/api/benchmarks/toy/label-sets/original/reveal/")
    assert missing.status_code == 404


def test_it_reveals_from_the_staff_panel_of_the_board_page(toy_split: Benchmark) -> None:
    page_url = "/benchmarks/toy/label-sets/secret/reveal/"
    assert Client().post(page_url).status_code == 302  # to the login page
    participant = Client()
    participant.force_login(factories.user_create("participant"))
    assert "Reveal the private part" not in participant.get("/benchmarks/toy/").content.decode()
    assert participant.post(page_url).status_code == 403
    host = Client()
    host.force_login(factories.host_create("host"))
    assert "Reveal the private part of phase 1" in host.get("/benchmarks/toy/").content.decode()
    response = host.post(page_url)
    assert (response.status_code, response["Location"]) == (
        302, "/benchmarks/toy/?sort=secret-private")
    phase = HiddenPhase.objects.get(label_set__slug="secret")
    assert phase.revealed_by is not None and phase.revealed_by.username == "host"
    panel = host.get("/benchmarks/toy/").content.decode()
    assert "Open phase 2 with a fresh split" in panel
    assert host.post("/benchmarks/toy/label-sets/secret/phases/").status_code == 302
    assert HiddenPhase.objects.filter(label_set__slug="secret").count() == 2


def test_it_gives_each_phase_its_own_quota(toy_split: Benchmark, settings: Settings) -> None:
    settings.EVALSERVER_DAILY_QUOTA = 1
    owner = factories.user_create("participant")
    api = APIClient()
    api.force_authenticate(owner)

    def submit() -> int:
        return api.post("/api/submissions/", {
            "benchmark": "toy", "model_name": "m", "public": "true",
            "toy-test": factories.upload_json(A)}, format="multipart").status_code

    assert submit() == 201
    assert submit() == 429
    staff = APIClient()
    staff.force_authenticate(factories.host_create("host"))
    staff.post(REVEAL)
    assert staff.post("/api/benchmarks/toy/label-sets/secret/phases/",
                      {"seed": 2}).status_code == 201
    assert submit() == 201  # the new phase's quota
    assert submit() == 429
