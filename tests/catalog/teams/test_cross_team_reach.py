"""Nothing reaches across host teams (docs/hosts/teams.md): a host and a reviewer of team A
ask every URL pattern of the URLconf about benchmark B, team B's, which has a hidden label set,
a private submission, a bundle upload, an audit and a ground-truth candidate. Every host or
reviewer action on B answers 403 or 404 (once B is hidden, a 403 names no benchmark: B does
not exist for them); every other answer is the one a signed-in user with no role gets, status
for status; and no answer carries B's hidden labels' hash, its private submission, its upload
or its audit.

The surfaces are the leak test's (tests/presentation/hidden_worlds.py `surfaces`: every URL
pattern, the reads with each query that changes what is shown, and the writes), over one
world built once (the leak test's "exact" world: the toy bundle with the hidden label set
`secret` and the private submission `private`), given to team B.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.audits.models import Audit
from leaderboard.catalog.hosting.services import bundle_upload_create
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.teams.models import TeamRole
from leaderboard.review.ground_truth.services import ground_truth_candidate_create
from leaderboard.submissions.models import Submission
from tests import factories
from tests.presentation.hidden_worlds import Surface, secret_hashes, surfaces, world_build
from tests.presentation.test_hidden_leaks import URL_NAMES_NOT_COMPARED, _pattern_names

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# The host and reviewer actions, and the reads only a benchmark's team has: about B, each
# answers 403 or 404 to A's host and reviewer.
TEAM_ONLY = {
    "audit_detail", "audit_status", "audit_histogram_csv", "audit_histogram_svg",
    "bundle_upload_detail", "bundle_upload_status", "review_next", "ground_truth_next",
    "review_example_image", "hidden_reveal", "hidden_phase_open",
    "api-bundle-upload-detail", "api-audit-detail", "api-benchmark-hide", "api-benchmark-unhide",
    "api-ground-truth-queue", "api-ground-truth-votes", "api-review-queue", "api-review-item",
    "api-review-votes", "api-hidden-reveal", "api-hidden-phase-open",
    "api-submission-cancel", "api-submission-rerun", "api-submission-withdraw",
}
# (The submission pages' cancel, re-run and withdraw answer a refusal with the submission's page
# and a message, as to any user who is not its owner: compared with the plain user's below.)
# A team member's own lists and pages (their teams' work, none of B's): what they answer
# differs from a user with no role's (a 403 page), and carries nothing of B (the markers).
OWN_LISTS = {"audit_list", "review_home", "bundle_upload_list", "api-audit-list",
             "api-bundle-upload-list"}
PRIVATE_MODEL = "ZzPrivateModelOfB"  # no _ - . /: shown whole (the `breakable` filter)


def _answer(client: Client, surface: Surface) -> tuple[int, bytes]:
    if surface.method == "POST":
        data = {"reason": "cross-team"} if "withdraw" in surface.name else {}
        if surface.name == "submission_visibility":
            data = {"public": "1"}
        response = (client.post(surface.path, data, content_type="application/json")
                    if surface.path.startswith("/api/") else client.post(surface.path, data))
    else:
        response = client.get(surface.path)
    body = (b"".join(response.streaming_content)  # type: ignore[attr-defined]
            if response.streaming else response.content)
    return response.status_code, body


@pytest.fixture
def world(settings: Settings, tmp_path: Path, sent: list[tuple[str, int]]) -> dict[str, object]:
    settings.EVALSERVER_DAILY_QUOTA = 0

    def media(folder: Path) -> None:
        settings.MEDIA_ROOT = folder
        cache.clear()

    built = world_build("A", scenario="exact", folder=tmp_path / "world", media=media)
    team_a, team_b = factories.team_create("lab-a"), factories.team_create("lab-b")
    benchmark = built.benchmark
    Benchmark.objects.filter(pk=benchmark.pk).update(team=team_b)
    benchmark.refresh_from_db()
    host_b = factories.host_create("host-b", team=team_b)
    actors = {"host": factories.host_create("host-a", team=team_a),
              "reviewer": factories.reviewer_create("reviewer-a", team=team_a)}
    private = built.submissions["private"]
    Submission.objects.filter(pk=private.pk).update(model_name=PRIVATE_MODEL)
    # B's upload, audit and ground-truth candidate: the ids the surfaces ask for (1 each)
    upload = bundle_upload_create(uploader=host_b, bundle=SimpleUploadedFile(
        "b.zip", b"PK\x05\x06" + bytes(18)))
    corrected = LabelSet.objects.get(benchmark=benchmark, slug="corrected")
    audit = Audit.objects.create(benchmark=benchmark, example_set=corrected.example_set,
                                 label_set=corrected, kind=Audit.Kind.AUL, created_by=host_b)
    candidate = ground_truth_candidate_create(label_set=corrected, example_index=0, guessed=2)
    assert (upload.pk, upload.team_id, audit.pk, candidate.pk) == (1, team_b.pk, 1, 1)
    hashes = secret_hashes(tmp_path / "hashes")
    pins = {slug: [h] for slug, h in built.hashes.items()} | {"secret": hashes}
    cache.clear()
    return {"world": built, "actors": actors, "surfaces": surfaces(built, pins),
            "markers": [built.hashes["secret"][:12].encode(), PRIVATE_MODEL.encode(),
                        f"/submissions/{private.pk}/".encode(), b"/audits/1/",
                        b"/bundles/1/", b"b.zip"],
            "benchmark": benchmark, "owner": built.users["owner"]}


def _reach(world: dict[str, object], *, hidden: bool) -> None:
    asked: list[Surface] = world["surfaces"]  # type: ignore[assignment]
    markers: list[bytes] = world["markers"]  # type: ignore[assignment]
    plain = Client()
    plain.force_login(world["world"].users["other"])  # type: ignore[attr-defined]
    # what a signed-in user with no role gets (before any write: the writes come last and
    # are refused to everyone here)
    baseline = {(s.method, s.path): _answer(plain, s)[0] for s in asked}
    for role, user in world["actors"].items():  # type: ignore[attr-defined]
        client = Client()
        client.force_login(user)
        for surface in asked:
            status, body = _answer(client, surface)
            where = (role, hidden, surface.method, surface.path)
            assert status < 500, where
            if surface.name in TEAM_ONLY:
                assert status in (403, 404), (where, status)
                # hidden, B does not exist for them: a 403 is a gate's that names no benchmark
                # (the bundle pages, for a reviewer), never one that says it is B's
                assert not (hidden and status == 403 and b"toy" in body), (where, body[:300])
            elif surface.name not in OWN_LISTS:
                assert status == baseline[(surface.method, surface.path)], (where, status)
            leaked = [m for m in markers if m in body]
            assert not leaked, (where, leaked)


def test_it_lets_no_host_or_reviewer_of_another_team_reach_a_benchmark(
    world: dict[str, object],
) -> None:
    asked: list[Surface] = world["surfaces"]  # type: ignore[assignment]
    # every URL pattern is asked (or, as in the leak test, said not to apply)
    assert {s.name for s in asked} | set(URL_NAMES_NOT_COMPARED) == _pattern_names()
    # the markers can show: B's private submission and upload, to their own
    owner = Client()
    owner.force_login(world["owner"])  # type: ignore[arg-type]
    assert PRIVATE_MODEL.encode() in owner.get("/submissions/").content
    host_b = Client()
    host_b.force_login(factories.user_create("host-b2"))
    assert b"b.zip" not in host_b.get("/bundles/").content  # no team: a 403 page
    factories.team_role_give(host_b_user := factories.user_create("host-b3"), TeamRole.HOST,
                             world["benchmark"].team)  # type: ignore[attr-defined]
    host_b.force_login(host_b_user)
    assert b"b.zip" in host_b.get("/bundles/").content
    assert host_b.get("/api/audits/1/").status_code == 200

    _reach(world, hidden=False)
    Benchmark.objects.filter(slug="toy").update(hidden=True)
    cache.clear()
    _reach(world, hidden=True)
    # B's own hosts still reach it, hidden
    assert host_b.post("/api/benchmarks/toy/unhide/").json() == {"slug": "toy", "hidden": False}

