"""Two worlds for the differential leak test of hidden label sets
(tests/presentation/test_hidden_leaks.py; docs/metrics.md §17): the toy bundle of
tests/workers/scoring/bundles/bundle_files.py with one hidden label set, `secret`, on the main
example set, and the same participants and the same submissions in both, byte for byte. The worlds
differ in ONE hidden label: that of example K, class 0 in world A and class 1 in world B. The
participant's `diff` submission predicts 0 there (a hit in A, a miss in B); every other
submission predicts 2 there (a miss in both). Nothing public depends on a hidden label, so
every public figure, rank, gallery card and review item is the same in both worlds, and so are
the numbers each mechanism releases (worked out by hand below).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.review.models import ReviewItem
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.releases.models import Release
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import refresh_board_significance, score_submission
from tests import factories
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, npy_bytes, write_bundle
from workers.scoring.bundles import BundleData, compile_bundle_label_set, read_bundle

K = 2
SECRET = {"A": [0, 1, 0, 1, 2, 0], "B": [0, 1, 1, 1, 2, 0]}  # differ at K only
DIFF = [0, 1, 0, 0, 2, 1]  # on SECRET: 4 of 6 in A (loss 1/3), 3 of 6 in B (loss 1/2)
BEFORE = [0, 1, 2, 0, 2, 1]  # diff but for K: 3 of 6 in both
AFTER = [0, 1, 2, 1, 2, 0]  # 5 of 6 in both
WRONG = [1, 2, 2, 2, 0, 1]  # 0 of 6 in both
RIGHT = SECRET["A"]  # 6 of 6 in A (loss 0), 5 of 6 in B (loss 1/6)
RIVAL = [0, 1, 2, 0, 1, 2]  # another participant's (the original labels): 2 of 6 in both
NEW = [2, 1, 0, 1]  # the new test set, the same for everyone
PREDICTIONS = {"before": BEFORE, "diff": DIFF, "after": AFTER, "first": WRONG}

# The participant's submissions in order, per scenario (a release mechanism, and for one a
# split), and what each releases (by hand):
# - ladder, step 0.5: first (all wrong) is released as scored, 0: the rungs are losses
#   1, 0.5, 0; diff here predicts RIGHT, loss 0 in A and 1/6 in B, both below 1 - 0.5, and the
#   rung nearest either is 0 (1 - round(1 / 0.5) * 0.5 = 1 - round(5/3) * 0.5 = 0): 1.0 is
#   released in both worlds. Nothing can improve on it afterwards.
# - parameter_free: before releases 0.5 (the first always does); diff, against it as the
#   leader: in A one example only diff gets right (c = 1, b = 0: (c - b)^2 = 1 is not above
#   b + c = 1), in B the same hits (c = b = 0): nothing released in either.
# - exact: diff is private and releases its accuracy, 4/6 in A and 3/6 in B, which only its
#   owner may see; after (public) then releases 5/6, a new best in both.
# - exact-split: `secret` split (docs/metrics.md §17.4), K and 5 in the private part: every
#   release is over the public part 0, 1, 3, 4, the same in both worlds (diff 3/4, after 4/4),
#   and nothing of the private part may leave the server before the reveal, even under exact.
# Then the participant's private submission (after's predictions) and the rival's, the same
# in both worlds.
SCHEDULES: dict[str, dict[str, Any]] = {
    "ladder": {"release": "ladder", "step": 0.5, "order": ("first", "diff"), "private": (),
               "predictions": {"diff": RIGHT}},
    "parameter_free": {"release": "parameter_free", "step": None,
                       "order": ("before", "diff"), "private": ()},
    "exact": {"release": "exact", "step": None, "order": ("diff", "after"),
              "private": ("diff",)},
    "exact-split": {"release": "exact", "step": None, "order": ("diff", "after"), "private": (),
                    "split": [K, 5]},
}
TOKEN = "0123456789abcdef0123456789abcdef01234567"  # the participant's API token, both worlds


@dataclass(frozen=True)
class World:
    benchmark: Benchmark
    users: dict[str, User]  # owner, other, reviewer, lab_host, lab_reviewer
    submissions: dict[str, Submission]  # by model name
    hashes: dict[str, str]  # label set slug -> its current version's hash
    # per submission: (hits on `secret`, improved, released, best), as stored
    hidden: dict[str, tuple[int, bool, float | None, float]]


def toy_bundle(folder: Path, *, labels: list[int], release: str, step: float | None,
               split: list[int] | None = None) -> Path:
    """The toy bundle with the hidden label set `secret` (kind single, on the main set), its
    private part the examples `split` lists, if any."""
    document = manifest()
    secret: dict[str, Any] = {"slug": "secret", "kind": "single", "name": "Secret",
                              "labels": "secret.npy", "hidden": True, "release": release}
    if step is not None:
        secret["step"] = step
    files = {**data_files(), "secret.npy": npy_bytes(np.array(labels, dtype=np.int64))}
    if split is not None:
        secret["split"] = {"private": "private.json"}
        files["private.json"] = json.dumps(split).encode()
    document["label_sets"].append(secret)
    return write_bundle(folder, document, files)


def secret_hashes(folder: Path) -> list[str]:
    """The content hash `secret` compiles to in each world (no database): what a visitor who
    guesses the labels could compute."""
    hashes = []
    for world in ("A", "B"):
        bundle = read_bundle(toy_bundle(folder / world, labels=SECRET[world], release="exact",
                                        step=None))
        data = BundleData(bundle, data_dir=folder)
        hashes.append(compile_bundle_label_set(data, "secret").content_hash)
    return hashes


def _scored(benchmark: Benchmark, owner: User, name: str, predicted: list[int], *,
            public: bool = True) -> Submission:
    submission = submission_create(
        owner=owner, benchmark=benchmark, model_name=name, public=public,
        files={"toy-test": factories.upload_json(predicted), "toy-new": factories.upload_json(NEW)})
    assert score_submission.apply(args=[submission.pk], task_id=f"t-{name}").get() == "scored"
    submission.refresh_from_db()
    return submission


def world_build(world: str, *, scenario: str, folder: Path,
                media: Callable[[Path], None]) -> World:
    """Everything emptied (`flush`: every table, every id sequence), then the world built;
    `media` points the storage at a folder of the world's own."""
    call_command("flush", interactive=False, verbosity=0)
    media(folder / "media")
    schedule = SCHEDULES[scenario]
    path = toy_bundle(folder / "bundle", labels=SECRET[world], release=schedule["release"],
                      step=schedule["step"], split=schedule.get("split"))
    call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = factories.participation_open(Benchmark.objects.get(slug="toy"))
    owner = factories.user_create("researcher")
    Token.objects.create(user=owner, key=TOKEN)
    rival = factories.user_create("rival")
    other = factories.user_create("visitor")
    reviewer = factories.reviewer_create("maintainer")
    # a host and a reviewer of another team: no right over toy (docs/hosts/teams.md)
    lab = factories.team_create("lab")
    elsewhere = {"lab_host": factories.host_create("lab-host", team=lab),
                 "lab_reviewer": factories.reviewer_create("lab-reviewer", team=lab)}
    predictions = {**PREDICTIONS, **schedule.get("predictions", {})}
    submissions = {name: _scored(benchmark, owner, name, predictions[name],
                                 public=name not in schedule["private"])
                   for name in schedule["order"]}
    submissions["rival"] = _scored(benchmark, rival, "rival", RIVAL)
    submissions["private"] = _scored(benchmark, owner, "private", AFTER, public=False)
    refresh_board_significance.apply(args=(benchmark.pk,))
    benchmark.refresh_from_db()
    hashes = {v.label_set.slug: v.content_hash for v in LabelSetVersion.objects.filter(
        label_set__benchmark=benchmark).select_related("label_set")}
    correct = dict(Score.with_hidden.filter(label_set__slug="secret").values_list(
        "submission__model_name", "correct"))
    hidden = {r.submission.model_name: (correct[r.submission.model_name], r.improved, r.released,
                                        r.best)
              for r in Release.objects.select_related("submission")}
    return World(benchmark,
                 {"owner": owner, "other": other, "reviewer": reviewer, **elsewhere},
                 submissions, hashes, hidden)


FORMATS = ("svg", "csv", "json")


@dataclass(frozen=True)
class Surface:
    name: str  # the URL pattern's name
    path: str
    method: str = "GET"


def surfaces(world: World, pins: dict[str, list[str]]) -> list[Surface]:
    """`pins`: the version hashes to pin each label set's board at (for `secret`, the hash
    of both worlds' labels: a visitor's right and wrong guess)."""
    slugs = sorted(pins)
    subs = [s.pk for s in world.submissions.values()]
    ids = ",".join(str(s.pk) for s in world.submissions.values() if s.public)
    out = [Surface("home", "/"), Surface("signup", "/signup/"), Surface("login", "/login/"),
           Surface("account_login", "/accounts/login/"),
           Surface("accounts", "/accounts/signup/"), Surface("accounts", "/accounts/email/"),
           Surface("profile", "/profile/"), Surface("submit", "/submit/"),
           Surface("submit", "/submit/?benchmark=toy"),
           Surface("submission_list", "/submissions/"),
           Surface("benchmark_about", "/benchmarks/toy/about/"),
           Surface("plots", "/benchmarks/toy/plots/"),
           Surface("plots", f"/benchmarks/toy/plots/?ids={ids}&nmax=100"),
           Surface("plots", f"/benchmarks/toy/plots/?ids={','.join(map(str, subs))}"),
           Surface("audit_list", "/audits/"), Surface("audit_detail", "/audits/1/"),
           Surface("audit_status", "/audits/1/status.json"),
           Surface("audit_histogram_csv", "/audits/1/histogram.csv"),
           Surface("audit_histogram_svg", "/audits/1/histogram.svg"),
           Surface("bundle_upload_list", "/bundles/"),
           Surface("bundle_upload_detail", "/bundles/1/"),
           Surface("bundle_upload_status", "/bundles/1/status.json"),
           Surface("review_home", "/review/"), Surface("review_next", "/review/toy/next/"),
           Surface("ground_truth_next", "/review/toy/ground-truth/next/"),
           Surface("review_example_image", "/review/toy/examples/toy-test/0/image"),
           Surface("review_example_image", "/review/toy/examples/toy-new/3/image"),
           Surface("leaderboard", "/benchmarks/toy/?page=2"),
           Surface("api-auth-token", "/api/auth/token/", "POST"),
           Surface("api-me", "/api/me/"),
           Surface("api-bundle-upload-list", "/api/bundles/"),
           Surface("api-bundle-upload-list", "/api/bundles/", "POST"),
           Surface("api-bundle-upload-detail", "/api/bundles/1/"),
           Surface("api-audit-list", "/api/audits/"),
           Surface("api-audit-list", "/api/audits/", "POST"),
           Surface("api-audit-detail", "/api/audits/1/"),
           Surface("api-benchmark-list", "/api/benchmarks/"),
           Surface("api-benchmark-detail", "/api/benchmarks/toy/"),
           Surface("api-benchmark-hide", "/api/benchmarks/toy/hide/", "POST"),
           Surface("api-benchmark-unhide", "/api/benchmarks/toy/unhide/", "POST"),
           Surface("api-benchmark-about", "/api/benchmarks/toy/about/"),
           Surface("participation", "/benchmarks/toy/participation/"),
           Surface("participation_hosts", "/benchmarks/toy/participation/hosts/"),
           Surface("api-participation-rules", "/api/benchmarks/toy/participation/rules/"),
           Surface("api-participation-requests",
                   "/api/benchmarks/toy/participation/requests/"),
           Surface("api-participation-requests",
                   "/api/benchmarks/toy/participation/requests/", "POST"),
           Surface("api-participation-decision",
                   "/api/benchmarks/toy/participation/requests/1/decision/", "POST"),
           Surface("api-participation-terms",
                   "/api/benchmarks/toy/participation/terms/acceptance/", "POST"),
           Surface("api-ground-truth-queue", "/api/review/toy/ground-truth/"),
           Surface("api-ground-truth-votes", "/api/review/ground-truth/1/votes/", "POST"),
           Surface("api-review-queue", "/api/review/toy/queue/"),
           Surface("api-review-queue", "/api/review/toy/queue/?label_set=secret"),
           Surface("api-submission-list", "/api/submissions/"),
           Surface("api-submission-list", "/api/submissions/", "POST"),
           Surface("api-schema", "/api/schema/"), Surface("admin", "/admin/"),
           Surface("admin", "/admin/leaderboard/score/"),
           Surface("admin", "/admin/leaderboard/release/"),
           Surface("admin_login", "/admin/login/")]
    for item in ReviewItem.objects.order_by("pk").values_list("pk", flat=True):
        out += [Surface("api-review-item", f"/api/review/items/{item}/"),
                Surface("api-review-votes", f"/api/review/items/{item}/votes/", "POST")]
    for slug in slugs:
        for pin in ("", *(f"&version={h[:8]}" for h in pins[slug])):
            out += [Surface("leaderboard", f"/benchmarks/toy/?sort={slug}{pin}"),
                    Surface("api-leaderboard",
                            f"/api/benchmarks/toy/leaderboard/?sort={slug}{pin}"),
                    Surface("api-leaderboard",
                            f"/api/benchmarks/toy/leaderboard/?sort={slug}{pin}&page=2"
                            "&page_size=1"),
                    Surface("leaderboard_csv",
                            f"/benchmarks/toy/leaderboard.csv?sort={slug}{pin}")]
        out += [Surface("label_set_history", f"/benchmarks/toy/label-sets/{slug}/history/"),
                Surface("label_set_history",
                        f"/benchmarks/toy/label-sets/{slug}/history/?compare=1&against=1"),
                Surface("api-label-set-versions",
                        f"/api/benchmarks/toy/label-sets/{slug}/versions/"),
                Surface("api-label-set-version",
                        f"/api/benchmarks/toy/label-sets/{slug}/versions/1/"),
                Surface("plots", f"/benchmarks/toy/plots/?labels={slug}"),
                Surface("plots", f"/benchmarks/toy/plots/?new={slug}&scale=logit"),
                Surface("review_next", f"/review/toy/next/?label_set={slug}"),
                Surface("hidden_reveal", f"/benchmarks/toy/label-sets/{slug}/reveal/", "POST"),
                Surface("hidden_phase_open", f"/benchmarks/toy/label-sets/{slug}/phases/",
                        "POST"),
                Surface("api-hidden-reveal",
                        f"/api/benchmarks/toy/label-sets/{slug}/reveal/", "POST"),
                Surface("api-hidden-phase-open",
                        f"/api/benchmarks/toy/label-sets/{slug}/phases/", "POST")]
        for kind in ("new-test-set", "label-set", "ranks"):
            out += [Surface("plot_download", f"/benchmarks/toy/plots/{kind}/{slug}.{fmt}")
                    for fmt in FORMATS]
        out.append(Surface("plot_download",
                           f"/benchmarks/toy/plots/new-test-set/{slug}.csv?part=band"))
    for fmt in FORMATS:
        out += [Surface("noise_prevalence_download", f"/benchmarks/toy/plots/noise-prevalence."
                        f"{fmt}{query}") for query in ("", f"?ids={ids}")]
    out.append(Surface("noise_prevalence_download",
                       f"/benchmarks/toy/plots/noise-prevalence.csv?ids={ids}&part=crossings"))
    for pk in subs:
        out += [Surface("submission_detail", f"/submissions/{pk}/"),
                Surface("submission_status", f"/submissions/{pk}/status.json"),
                Surface("api-submission-detail", f"/api/submissions/{pk}/")]
        out += [Surface("submission_mistakes", f"/submissions/{pk}/mistakes/{query}")
                for query in ("", "?set=corrected", "?set=corrected&match=original",
                              "?set=corrected&match=corrected", "?set=corrected&match=neither",
                              "?set=secret", "?set=imagenet-m")]
    # Every pair compared (docs/metrics.md §10.5), the hidden label set asked for by name too
    for i, pk in enumerate(subs):
        for other in subs[i + 1:]:
            out += [Surface("submission_compare", f"/submissions/{pk}/compare/{other}/{query}")
                    for query in ("", "?set=secret")]
            out += [Surface("api-submission-compare",
                            f"/api/submissions/{pk}/compare/{other}/{query}")
                    for query in ("", "?label_set=secret")]
    out.append(Surface("submission_compare_pick", f"/submissions/compare/?s={subs[0]}&s={subs[1]}"))
    # Writes last: the owner's public switch on a public submission of theirs (it stays so),
    # and the leaderboard page read again after it; then the controls on it: cancel and re-run
    # (refused: it is scored), withdraw (the owner's takes it off the board), the board again.
    public = next(s.pk for s in world.submissions.values()
                  if s.public and s.owner_id == world.users["owner"].pk)
    out += [Surface("submission_visibility", f"/submissions/{public}/visibility/", "POST"),
            Surface("leaderboard", "/benchmarks/toy/")]
    for action in ("cancel", "rerun", "withdraw"):
        out += [Surface(f"submission_{action}", f"/submissions/{public}/{action}/", "POST"),
                Surface(f"api-submission-{action}", f"/api/submissions/{public}/{action}/",
                        "POST")]
    out += [Surface("leaderboard", "/benchmarks/toy/?page=1"),
            Surface("api-leaderboard", "/api/benchmarks/toy/leaderboard/")]
    return out
