"""The differential leak test of hidden label sets (docs/metrics.md §17): before its reveal,
the only thing the server releases about a submission on a hidden label set is the number its
release mechanism gives, with that number's interval.

Two worlds (tests/presentation/hidden_worlds.py) are identical except on ONE hidden example:
in world A the participant's `diff` submission predicts its hidden label, in world B it does
not. What differs is the hidden LABEL of that example, not the prediction: every uploaded file
is the same byte for byte in both worlds, so every public figure, rank, per-example card,
confusion and review item is the same by construction (a changed prediction would change those
legitimately), while the hits on the hidden set differ exactly as a changed prediction would
make them differ; and a leak of the labels themselves (their hash, an export) shows too. Each
mechanism's schedule is chosen so that A and B release the same numbers (worked out by hand
there): the Ladder with step 0.5, after a first release of 0, releases 1.0 for 6/6 (A) and
for 5/6 (B); the parameter-free Ladder releases nothing for diff in either. So any difference
between the worlds' answers, on any surface, for any visitor, is a leak. Under "exact" diff is
private and its own exact number is released to its owner, by design: there, those four
answers of the owner (the page, the API detail and list, the client's `status`) differ and
nothing else may. Under "exact-split" the example is in the private part of a split set: every
release is over the public part, so even exact releases are the same, and nothing may differ
before the reveal.

How the worlds are built: one test builds both, one after the other, in a transactional
database (`django_db(transaction=True)`). Each world starts with `manage.py flush`, which
empties every table and resets every id sequence (SQLite and PostgreSQL alike), with an empty
cache, a media folder of its own and the same fixed clock (`django.utils.timezone.now`), and
is built by the same calls. So the two worlds have the same ids, names, times, generation
counters and stored file names by construction, and nothing of a submission needs
normalising. Two things are: the CSRF token of a page's forms (random per response by design)
and the `Expires` header of `never_cache` answers (the wall-clock time of the answer, from
`time.time()`). Building both inside one test carries no state between tests; the collecting
is the same function for both.

Collected, as the participant (owner), another signed-in user, a reviewer (of the site team,
toy's), a host and a reviewer of another host team (docs/hosts/teams.md) and anonymously:
every URL pattern of leaderboard/urls.py and leaderboard/api_urls.py (and Django's admin, which
none of them may enter, and allauth's login, sign-up and email pages) that reads (GET, with
every query that changes what is shown: each sort, label set, pinned version (for `secret`,
both worlds' hashes: a right and a wrong guess), plot kind and format, gallery section) and
the refused writes (their refusals), each with its status, headers and body; and the
command-line client's `status` and `leaderboard` output against the live test server.
`URL_NAMES_NOT_COMPARED` says why each remaining pattern is not; a pattern added later in
neither list fails the test.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from allauth import urls as allauth_urls
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import URLPattern, URLResolver
from django.utils import timezone
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from evalserver import urls as root_urls
from evalserver_client import cli
from leaderboard import api_urls, urls
from leaderboard.catalog.models import Benchmark, ExampleSet, HiddenPhase, LabelSet, LabelSetVersion
from leaderboard.catalog.phases.services import hidden_phase_reveal
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.review.ground_truth.services import ground_truth_candidate_create
from leaderboard.review.models import ReviewItem
from leaderboard.review.panel.services import ReviewError
from leaderboard.submissions.models import Score
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.presentation.hidden_worlds import (
    SCHEDULES,
    TOKEN,
    Surface,
    World,
    secret_hashes,
    surfaces,
    toy_bundle,
    world_build,
)
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, write_bundle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# (lab_host, lab_reviewer: a host and a reviewer of another host team than toy's)
ROLES = ("owner", "other", "reviewer", "lab_host", "lab_reviewer", "anonymous")
# Every URL pattern not compared, and why (the rest are: hidden_worlds.surfaces).
URL_NAMES_NOT_COMPARED = {
    "logout": "ends the session (a write on the account; no benchmark in it)",
    "token_create": "makes a random API token (a write on the account)",
    "token_revoke": "deletes the API token (a write on the account)",
    "api-docs": "Swagger UI's static shell; the schema it loads is compared (api-schema)",
    # Notifications: the account's own settings and log; no visitor of these worlds opts in,
    # and an event tells public scores only (Score.objects: tests/notifications).
    "api-notification-preferences": "the account's own opt-ins (no benchmark figures)",
    "api-notification-delivery-list": "the account's own delivery log (empty: no opt-ins)",
    "api-webhook-list": "the account's own webhooks (no benchmark figures)",
    "api-webhook-detail": "deletes one of the account's webhooks (a write on the account)",
    "api-webhook-test": "sends a test event (a write; its payload names no benchmark)",
    "webhook_add": "adds a webhook (a write on the account)",
    "webhook_remove": "removes one of the account's webhooks (a write on the account)",
    "notification_preferences_save": "saves the account's opt-ins (a write on the account)",
    "webhook_test": "sends a test event (a write; its payload names no benchmark)",
    "client": "how to install the client: the first benchmark's slug, no figure of it",
    "client_wheel": "a file of the client's wheel folder (no benchmark in it)",
    # Host teams: no visitor of these worlds is in a team or asks to host; a team's page and
    # API answer are 404 to everyone outside it (tests/catalog/teams).
    "host_request": "the account's own requests to host (no benchmark figures)",
    "host_requests": "site admins' requests to host (no benchmark figures)",
    "team": "a team's page: 404 outside the team, its benchmarks' slugs only inside it",
    "api-host-request-list": "the account's own requests to host (no benchmark figures)",
    "api-host-request-decision": "decides a request to host (a write; site admins only)",
    "api-team-list": "the account's own teams and roles (no benchmark figures)",
    "api-team-detail": "a team: 404 outside the team, its benchmarks' slugs only inside it",
    "api-team-member": "sets or removes a team's member (a write; the team's admins only)",
}
FIXED_NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
_CSRF = re.compile(rb'(name="csrfmiddlewaretoken" value=")[^"]+(")')


def _pattern_names() -> set[str]:
    """Every URL pattern's name; Django's admin as one, `admin`, and django-allauth's
    accounts pages (allauth.urls) as one, `accounts`."""
    def names(patterns: Sequence[URLPattern | URLResolver]) -> Iterator[str]:
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.app_name == "admin":
                    yield "admin"
                elif p.urlconf_module is allauth_urls:
                    yield "accounts"
                else:
                    assert p.urlconf_module in (urls, api_urls), p
                    yield from names(p.url_patterns)
            else:
                assert p.name, p
                yield p.name

    return set(names(root_urls.urlpatterns))


Answer = tuple[int, list[tuple[str, str]], bytes]


def _answer(client: Client, surface: Surface) -> Answer:
    if surface.method == "POST":
        data = {"public": "1"} if surface.name == "submission_visibility" else {}
        response = client.post(surface.path, data)
    else:
        response = client.get(surface.path)
    if response.streaming:  # a download may stream
        body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    else:
        body = response.content
    # Expires is the time of the answer (never_cache): a time, the same kind in both worlds.
    headers = sorted((k, "-" if k == "Expires" else v) for k, v in response.headers.items())
    return response.status_code, headers, _CSRF.sub(rb"\1-\2", body)


def _client_output(url: str, *args: str, token: str | None) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(["--url", url, *(["--token", token] if token else []), *args])
        except SystemExit as exc:
            code = exc.code
    return f"exit {code}\n{out.getvalue()}\n{err.getvalue()}"


def _collect(world: World, pins: dict[str, list[str]], url: str
             ) -> dict[tuple[str, str], Answer]:
    asked = surfaces(world, pins)
    answers: dict[tuple[str, str], Answer] = {}
    for role in ROLES:
        client = Client()
        if role != "anonymous":
            client.force_login(world.users[role])
        for surface in asked:
            key = (role, f"{surface.method} {surface.path}")
            assert key not in answers, key
            try:
                answers[key] = _answer(client, surface)
            except Exception as exc:  # the test client re-raises a view's error: a 500
                raise AssertionError(f"{key}: 500") from exc
            assert answers[key][0] < 500, (key, answers[key][2][:2000])
    commands: list[tuple[str, ...]] = [("leaderboard", "toy", "--sort", slug)
                                       for slug in sorted(world.hashes)]
    commands += [("leaderboard", "toy", "--sort", "secret", "--version", h[:8])
                 for h in pins["secret"]]
    commands += [("benchmark", "toy")]  # the label sets' versions and hashes
    commands += [("status", str(s.pk)) for s in world.submissions.values()]
    subs = [str(s.pk) for s in world.submissions.values()]
    commands += [("compare", subs[0], subs[-1]),
                 ("compare", subs[0], subs[-1], "--json", "--label-set", "secret")]
    for role, token in (("owner", TOKEN), ("anonymous", None)):
        for command in commands:
            output = _client_output(url, *command, token=token)
            answers[(role, "client " + " ".join(command))] = (0, [], output.encode())
    return answers


def _difference(a: Answer, b: Answer) -> str:
    if a[:2] != b[:2]:
        return f"status/headers: {a[:2]} != {b[:2]}"
    lines = difflib.unified_diff(a[2].decode(errors="replace").splitlines(),
                                 b[2].decode(errors="replace").splitlines(), "A", "B",
                                 lineterm="", n=1)
    return "\n".join(list(lines)[:40])


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same time in both worlds, for every row and page (all read django.utils.timezone)."""
    monkeypatch.setattr(timezone, "now", lambda: FIXED_NOW)


# What each scenario stores per submission, by hand (tests/presentation/hidden_worlds.py):
# (hits on `secret`, improved, released, best), in world A; world B differs only in diff's.
Stored = tuple[int, bool, float | None, float]
HALF = (True, 0.5, 0.5)
STORED: dict[str, dict[str, Stored]] = {
    # the first release is as scored (docs/metrics.md §17.1), then a whole number of steps
    "ladder": {"first": (0, True, 0.0, 0.0), "diff": (6, True, 1.0, 1.0),
               "rival": (2, True, 2 / 6, 2 / 6), "private": (5, False, None, 1.0)},
    "parameter_free": {"before": (3, *HALF), "diff": (4, False, None, 0.5),
                       "rival": (2, True, 2 / 6, 2 / 6), "private": (5, True, 5 / 6, 5 / 6)},
    "exact": {"diff": (4, True, 4 / 6, 4 / 6), "after": (5, True, 5 / 6, 5 / 6),
              "rival": (2, True, 2 / 6, 2 / 6), "private": (5, False, 5 / 6, 5 / 6)},
    # releases over the public part (0, 1, 3, 4); hits over all six
    "exact-split": {"diff": (4, True, 0.75, 0.75), "after": (5, True, 1.0, 1.0),
                    "rival": (2, True, 0.5, 0.5), "private": (5, False, 1.0, 1.0)},
}
STORED_B_DIFF: dict[str, Stored] = {
    "ladder": (5, True, 1.0, 1.0), "parameter_free": (3, False, None, 0.5),
    "exact": (3, True, 0.5, 0.5), "exact-split": (3, True, 0.75, 0.75)}
# Per visitor (hidden_worlds.surfaces): the ladder's submissions make two more review items
# (on the public ReaL-like set), each read and voted on.
SURFACE_COUNT = {"ladder": 360, "parameter_free": 356, "exact": 356, "exact-split": 356}
CLIENT_COMMANDS = 16  # run by 2 visitors


def _rounded(stored: dict[str, Stored]) -> dict[str, Any]:
    return {name: (hits, improved, None if released is None else round(released, 9),
                   round(best, 9)) for name, (hits, improved, released, best) in stored.items()}


def _owner_sees_own_release(world: World) -> set[tuple[str, str]]:
    """Under "exact" the private diff's own accuracy is released to its owner: the answers
    that show it (and no others) differ, by design."""
    pk = world.submissions["diff"].pk
    return {("owner", f"GET /submissions/{pk}/"), ("owner", f"GET /api/submissions/{pk}/"),
            ("owner", "GET /api/submissions/"), ("owner", f"client status {pk}")}


@pytest.mark.parametrize("scenario", sorted(SCHEDULES))
def test_it_answers_byte_identically_whether_the_hidden_example_is_right_or_wrong(
    scenario: str, settings: Settings, tmp_path: Path, fixed_clock: None,
    sent: list[tuple[str, int]], live_server: LiveServer,
) -> None:
    settings.EVALSERVER_DAILY_QUOTA = 0

    def media(folder: Path) -> None:
        settings.MEDIA_ROOT = folder
        cache.clear()

    secret = secret_hashes(tmp_path / "hashes")
    answers, compared_surfaces, worlds = {}, {}, {}
    for world in ("A", "B"):
        built = world_build(world, scenario=scenario, folder=tmp_path / world, media=media)
        pins = {slug: [h] for slug, h in built.hashes.items()} | {"secret": secret}
        worlds[world], compared_surfaces[world] = built, surfaces(built, pins)
        answers[world] = _collect(built, pins, live_server.url)

    # the worlds differ as planned: in the hidden hits of diff, and nowhere public
    expected = STORED[scenario]
    assert _rounded(worlds["A"].hidden) == _rounded(expected)
    assert _rounded(worlds["B"].hidden) == _rounded({**expected,
                                                     "diff": STORED_B_DIFF[scenario]})
    assert [h for h in secret if h in worlds["A"].hashes.values()] == secret[:1]
    # every URL pattern is compared or said not to apply
    assert compared_surfaces["A"] == compared_surfaces["B"]
    compared = {s.name for s in compared_surfaces["A"]}
    assert compared | set(URL_NAMES_NOT_COMPARED) == _pattern_names()
    assert not compared & set(URL_NAMES_NOT_COMPARED)
    count = SURFACE_COUNT[scenario]
    assert (len(compared_surfaces["A"]), len(answers["A"])) == (
        count, count * len(ROLES) + 2 * CLIENT_COMMANDS)
    assert answers["A"].keys() == answers["B"].keys()
    differing = {key for key in answers["A"] if answers["A"][key] != answers["B"][key]}
    allowed = _owner_sees_own_release(worlds["A"]) if scenario == "exact" else set()
    print(f"{scenario}: {len(compared_surfaces['A'])} surfaces x {len(ROLES)} visitors + "
          f"client output: {len(answers['A'])} answers compared, {len(compared)} URL patterns; "
          f"{len(differing)} differ ({len(allowed)} by design)")
    leaks = {key: _difference(answers["A"][key], answers["B"][key]) for key in differing - allowed}
    assert not leaks, "\n\n".join(f"{role} {what}:\n{d}" for (role, what), d in leaks.items())
    assert differing == allowed


def test_it_publishes_no_hash_of_a_hidden_label_set_and_pins_none(
    settings: Settings, tmp_path: Path, sent: list[tuple[str, int]],
) -> None:
    """The hash of the hidden labels would let anyone check a guess of them: 3^6 guesses here
    (docs/metrics.md §17.5); so would a board pinned by it. Nor after the reveal of its
    private part, whose column is the same label set's."""
    settings.MEDIA_ROOT = tmp_path / "media"
    world = world_build("A", scenario="exact-split", folder=tmp_path, media=lambda _: None)
    secret = world.hashes["secret"]
    api = Client()
    label_sets = {ls["slug"]: ls for ls in api.get("/api/benchmarks/toy/").json()["label_sets"]}
    assert (label_sets["secret"]["version"], label_sets["secret"]["version_hash"]) == (1, None)
    assert label_sets["original"]["version_hash"] == world.hashes["original"]
    about = {ls["slug"]: ls for ls in api.get("/api/benchmarks/toy/about/").json()["label_sets"]}
    assert [about["secret"][k] for k in ("version", "version_hash", "history_url",
                                         "versions_url")] == [1, None, None, None]
    pinned = api.get(f"/api/benchmarks/toy/leaderboard/?sort=secret&version={secret[:8]}")
    assert (pinned.status_code, pinned.json()["error"]["code"]) == (400, "unknown_version")
    assert api.get(f"/benchmarks/toy/?version={secret}").status_code == 400
    hidden_phase_reveal(phase=HiddenPhase.objects.get(), by=world.users["reviewer"])
    board = api.get("/api/benchmarks/toy/leaderboard/").json()
    assert {c["slug"]: c["version_hash"] for c in board["columns"]
            if c["slug"].startswith("secret")} == {"secret": None, "secret-private": None}
    for page in ("/", "/benchmarks/toy/", "/benchmarks/toy/?sort=secret",
                 "/benchmarks/toy/?sort=secret-private", "/benchmarks/toy/about/"):
        answer = api.get(page)
        assert answer.status_code == 200 and secret[:12].encode() not in answer.content, page


def test_it_makes_no_review_item_of_a_hidden_label_set_not_declared_reviewable(
    settings: Settings, tmp_path: Path, sent: list[tuple[str, int]],
) -> None:
    """A hidden ReaL-layout label set, judged like the public one but not declared reviewable:
    a submission's unjudged predictions on it are novel pairs, and still none becomes a review
    item, while the public one's do (a reviewable hidden set's reach reviewers only:
    tests/review/test_hidden_review.py; docs/metrics.md §17.5)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.EVALSERVER_DAILY_QUOTA = 0
    document = manifest()
    document["label_sets"].append({"slug": "secret-real", "kind": "multi", "layout": "real",
                                   "name": "Secret ReaL", "accepted": "secret_real.json",
                                   "judged": "judged.npz", "hidden": True, "release": "exact"})
    files = {**data_files(), "secret_real.json": json.dumps([[0], [1], [2], [0], [1], [2]])
             .encode()}
    call_command("benchmark_add", str(write_bundle(tmp_path / "bundle", document, files)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = factories.participation_open(Benchmark.objects.get(slug="toy"))
    owner = factories.user_create("researcher")
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="novel",
                                   files={"toy-test": factories.upload_json([2, 0, 1, 2, 0, 1])})
    assert score_submission.apply(args=[submission.pk], task_id="t-novel").get() == "scored"

    hidden = Score.with_hidden.get(submission=submission, label_set__slug="secret-real")
    public = Score.objects.get(submission=submission, label_set__slug="real")
    assert (hidden.record["novel_count"], public.record["novel_count"]) == (6, 4)
    items = ReviewItem.objects.filter(label_set__benchmark=benchmark)
    assert sorted(items.values_list("label_set__slug", "example_index", "class_id")) == [
        ("real", 0, 2), ("real", 1, 0), ("real", 3, 2), ("real", 4, 0)]
    assert not ReviewItem.objects.filter(label_set__labels_hidden=True).exists()


@pytest.mark.parametrize("reviewable", [False, True])
def test_it_makes_ground_truth_candidates_on_a_hidden_label_set_only_if_reviewable(
    reviewable: bool, settings: Settings, tmp_path: Path,
) -> None:
    """A candidate shows reviewers the example's label: on a hidden label set, only where its
    bundle declares it reviewable, as its novel predictions (docs/metrics.md §17.5)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    document = manifest()
    hidden = {**document["label_sets"][1], "slug": "secret-corrected", "name": "Secret",
              "hidden": True, "release": "exact"}
    document["label_sets"].append(hidden)
    if reviewable:
        document["reviewable"] = ["real", "secret-corrected"]
    call_command("benchmark_add", str(write_bundle(tmp_path / "bundle", document)),
                 stdout=io.StringIO(), stderr=io.StringIO())
    label_set = LabelSet.objects.get(slug="secret-corrected")
    if reviewable:
        assert ground_truth_candidate_create(label_set=label_set, example_index=0,
                                             guessed=2).given == 0
        return
    with pytest.raises(ReviewError, match="does not declare reviewable") as refused:
        ground_truth_candidate_create(label_set=label_set, example_index=0, guessed=2)
    assert refused.value.code == "hidden_label_set"
    assert not GroundTruthCandidate.objects.exists()
    public = LabelSet.objects.get(slug="corrected")
    assert ground_truth_candidate_create(label_set=public, example_index=0,
                                         guessed=2).given == 0


def _stored_label_files() -> list[str]:
    if not default_storage.exists("labelsets"):
        return []
    return sorted(default_storage.listdir("labelsets")[1])


def _catalog_rows() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (Benchmark, ExampleSet, LabelSet,
                                                     LabelSetVersion))


@pytest.mark.parametrize("refusal", ["bad_labels", "conflict"])
def test_it_leaves_nothing_of_a_refused_bundle_with_a_hidden_label_set(
    refusal: str, settings: Settings, tmp_path: Path,
) -> None:
    """Refused while compiling (a label out of range), or after (its example set's slug is
    another benchmark's, found when the rows are written): no row and no stored file of it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    if refusal == "conflict":  # a benchmark that holds the example set slug `toy-test`
        other = manifest()
        other["slug"], other["label_sets"] = "other", other["label_sets"][:1]
        other["reviewable"] = []
        call_command("benchmark_add", str(write_bundle(tmp_path / "other", other)),
                     stdout=io.StringIO(), stderr=io.StringIO())
    rows, stored = _catalog_rows(), _stored_label_files()
    labels = [0, 1, 7, 1, 2, 0] if refusal == "bad_labels" else [0, 1, 0, 1, 2, 0]
    path = toy_bundle(tmp_path / "bundle", labels=labels, release="ladder", step=0.5)
    with pytest.raises(CommandError, match="secret" if refusal == "bad_labels" else "toy-test"):
        call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert not Benchmark.objects.filter(slug="toy").exists()
    assert (_catalog_rows(), _stored_label_files()) == (rows, stored)
