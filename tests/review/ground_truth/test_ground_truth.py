"""Ground-truth review (Northcutt et al.) on MNIST's corrected label set: candidates,
answers from a panel of 5, the new version and the re-scoring it causes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.review.ground_truth.models import GroundTruthCandidate, GroundTruthVote
from leaderboard.review.ground_truth.services import (
    ground_truth_candidate_create,
    ground_truth_vote_cast,
)
from leaderboard.review.panel.services import ReviewError
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories
from tests.api_support import api_client
from tests.review.conftest import reviewers

pytestmark = pytest.mark.django_db


def _corrected() -> LabelSet:
    return LabelSet.objects.get(benchmark__slug="mnist", slug="corrected")


def _versions() -> list[LabelSetVersion]:
    return list(LabelSetVersion.objects.filter(label_set=_corrected()).order_by("number"))


def _example(data_dir: Path) -> tuple[int, int, int]:
    """(example, original label, guessed label) for a candidate outside the vote file.

    Every MNIST example where the real cleanlab CV model's argmax disagrees with the original
    label is in the vote file (87 of its 100), so the candidate is the unflagged example with
    the smallest margin between the model's two best classes, where the argmax is the
    original label; the guessed label is the model's second class. Correcting it turns a hit
    of the model into a miss."""
    probs = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy")
    original = np.load(data_dir / "mnist/original_labels.npy")
    flagged = {r["id"] for r in json.loads((data_dir / "mnist/cleanlab_mturk.json").read_text())}
    order = np.argsort(probs, axis=1)
    top1, second = order[:, -1], order[:, -2]
    margin = probs[np.arange(len(probs)), top1] - probs[np.arange(len(probs)), second]
    example = next(int(e) for e in np.argsort(margin, kind="stable")
                   if int(e) not in flagged and top1[e] == original[e])
    return example, int(original[example]), int(second[example])


def _submit_mnist(data_dir: Path, tmp_path: Path) -> Submission:
    probs = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy")
    submission = submission_create(
        owner=factories.user_create("owner"), model_name="cleanlab-cv",
        benchmark=benchmark_get(slug="mnist"),
        files={"mnist-test": factories.upload_npy(probs, tmp_path, "probs.npy")})
    assert score_submission.apply(args=[submission.pk], task_id=f"gt-{submission.pk}") \
        .get() == "scored"
    return submission


def _vote(candidate: GroundTruthCandidate, answers: list[str]) -> GroundTruthCandidate:
    for user, answer in zip(reviewers(len(answers), "gt"), answers, strict=True):
        candidate = ground_truth_vote_cast(candidate_id=candidate.pk, reviewer=user,
                                           answer=answer)
    return candidate


def test_it_lets_only_maintainers_answer(loaded: Settings, data_dir: Path) -> None:
    example, original, guess = _example(data_dir)
    candidate = ground_truth_candidate_create(label_set=_corrected(), example_index=example,
                                              guessed=guess, source="manual", evidence={})
    url = f"/api/review/ground-truth/{candidate.pk}/votes/"
    user = factories.user_create("plain")
    assert api_client().post(url, {"answer": "given"}, format="json").status_code == 401
    forbidden = api_client(user).post(url, {"answer": "given"}, format="json")
    assert (forbidden.status_code, forbidden.json()["error"]["code"]) == (403,
                                                                          "permission_denied")
    assert api_client(user).get("/api/review/mnist/ground-truth/").status_code == 403
    with pytest.raises(ReviewError) as refused:
        ground_truth_vote_cast(candidate_id=candidate.pk, reviewer=user, answer="given")
    assert (refused.value.code, refused.value.http_status) == ("permission_denied", 403)
    client = Client()
    client.force_login(user)
    assert client.get("/review/mnist/ground-truth/next/").status_code == 403
    assert GroundTruthVote.objects.count() == 0


def test_it_takes_one_answer_per_reviewer_and_lists_open_candidates(
    loaded: Settings, data_dir: Path
) -> None:
    example, original, guess = _example(data_dir)
    candidate = ground_truth_candidate_create(label_set=_corrected(), example_index=example,
                                              guessed=guess, source="audit:7",
                                              evidence={"margin": 0.5})
    boss = factories.host_create("boss")
    body = api_client(boss).get("/api/review/mnist/ground-truth/").json()
    assert body["count"] == 1
    assert body["results"] == [{
        "id": candidate.pk, "label_set": "corrected", "image_set": "mnist-test",
        "example_index": example, "file_name": f"mnist-test[{example}]",
        "given": {"class_id": original, "name": str(original)},
        "guessed": {"class_id": guess, "name": str(guess)},
        "source": "audit:7", "evidence": {"margin": 0.5}, "votes": 0, "panel_size": 5}]
    url = f"/api/review/ground-truth/{candidate.pk}/votes/"
    first = api_client(boss).post(url, {"answer": "guessed", "note": "a 7"}, format="json")
    assert (first.status_code, first.json()) == (201, {
        "candidate": candidate.pk, "status": "open", "category": "", "votes": 1,
        "panel_size": 5, "version": None})
    again = api_client(boss).post(url, {"answer": "given"}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_voted")
    bad = api_client(boss).post(url, {"answer": "maybe"}, format="json")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "answer")
    missing = api_client(boss).post("/api/review/ground-truth/999999/votes/",
                                    {"answer": "given"}, format="json")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert list(GroundTruthVote.objects.values_list("answer", "note")) == [("guessed", "a 7")]
    assert [v.number for v in _versions()] == [1]


def test_it_corrects_the_label_in_version_2_and_rescores_exactly(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    example, original, guess = _example(data_dir)
    submission = _submit_mnist(data_dir, tmp_path)
    (v1,) = _versions()
    before = Score.objects.get(submission=submission, label_set_version=v1)
    candidate = ground_truth_candidate_create(label_set=_corrected(), example_index=example,
                                              guessed=guess, source="manual", evidence={})
    assert (candidate.given, candidate.guessed) == (original, guess)
    candidate = _vote(candidate, ["guessed", "given", "guessed", "both", "guessed"])
    v1_, v2 = _versions()
    assert (candidate.status, candidate.category, candidate.version_id) == (
        "decided", "correctable", v2.pk)
    assert (v2.parent_id, v2.author.username) == (v1.pk, "gt4")  # type: ignore[union-attr]
    assert v2.summary["settled"] == [{
        "item": None, "candidate": candidate.pk, "example": example, "class": guess,
        "given": original, "verdict": "correctable", "problematic": False,
        "votes": {"guessed": 3, "given": 1, "both": 1}}]
    old, new = compiled_for_version(v1), compiled_for_version(v2)
    assert new.meta["threshold"] == 3
    assert (int(old.arrays["corrected_labels"][example]),
            int(new.arrays["corrected_labels"][example])) == (original, guess)
    assert (bool(old.arrays["correctable"][example]),
            bool(new.arrays["correctable"][example])) == (False, True)
    assert bool(new.arrays["pruned"][example])
    changed = np.flatnonzero(old.arrays["corrected_labels"] != new.arrays["corrected_labels"])
    assert changed.tolist() == [example]
    assert new.meta["correctable_size"] == old.meta["correctable_size"] + 1

    assert rescoring.label_set_version_rescore(version_id=v2.pk) == 1
    after = Score.objects.get(submission=submission, label_set_version=v2)
    top1 = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy").argmax(axis=1)
    pruned = new.arrays["pruned"]
    hits = int((top1 == new.arrays["corrected_labels"])[pruned].sum())
    assert (after.correct, after.total) == (before.correct - 1, before.total)
    assert (after.correct, after.total) == (hits, int(pruned.sum()))
    assert after.accuracy == pytest.approx(hits / int(pruned.sum()))
    correctable = new.arrays["correctable"]
    assert after.record["correctable"]["cacc1"]["correct"] == int(
        (top1 == new.arrays["corrected_labels"])[correctable].sum())
    history = api_client().get("/api/benchmarks/mnist/label-sets/corrected/versions/").json()
    assert history[0]["settled"][0]["reviewers"] == ["gt0", "gt1", "gt2", "gt3", "gt4"]
    closed = api_client(factories.host_create("late")).post(
        f"/api/review/ground-truth/{candidate.pk}/votes/", {"answer": "given"}, format="json")
    assert (closed.status_code, closed.json()["error"]["code"]) == (409, "already_decided")


def test_it_refuses_a_candidate_whose_given_label_is_not_the_original(
    loaded: Settings, data_dir: Path
) -> None:
    example, original, guess = _example(data_dir)
    with pytest.raises(ReviewError) as refused:
        ground_truth_candidate_create(label_set=_corrected(), example_index=example,
                                      given=guess, guessed=guess, source="manual", evidence={})
    assert (refused.value.code, refused.value.field, refused.value.message) == (
        "given_mismatch", "given",
        f"given label {guess} of example {example} is not its original label {original}")
    original_set = LabelSet.objects.get(benchmark__slug="mnist", slug="original")
    with pytest.raises(ReviewError, match="ground-truth review applies to corrected"):
        ground_truth_candidate_create(label_set=original_set, example_index=example,
                                      guessed=guess, source="manual", evidence={})
    with pytest.raises(ReviewError, match="example 10000 is outside 0..9999"):
        ground_truth_candidate_create(label_set=_corrected(), example_index=10_000,
                                      guessed=guess, source="manual", evidence={})
    assert GroundTruthCandidate.objects.count() == 0


def test_it_records_a_non_error_in_a_version_with_the_labels_unchanged(
    loaded: Settings, data_dir: Path
) -> None:
    example, original, guess = _example(data_dir)
    candidate = ground_truth_candidate_create(label_set=_corrected(), example_index=example,
                                              guessed=guess, source="manual", evidence={})
    candidate = _vote(candidate, ["given", "neither", "given", "neither", "given"])
    v1, v2 = _versions()
    assert (candidate.category, candidate.version_id) == ("non_error", v2.pk)
    old, new = compiled_for_version(v1), compiled_for_version(v2)
    for name in ("labels", "corrected_labels", "pruned", "correctable"):
        assert (old.arrays[name] == new.arrays[name]).all(), name
    assert int(new.arrays["review_category"][example]) == 0  # VOTE_CATEGORIES[0] = non_error
    assert new.meta["ground_truth"]["reviewed"] == 1
    assert v2.summary["settled"][0]["verdict"] == "non_error"


def test_it_opens_candidates_by_command_and_reviews_them_on_the_page(
    loaded: Settings, data_dir: Path
) -> None:
    example, original, guess = _example(data_dir)
    call_command("add_ground_truth_candidate", "mnist", "corrected", str(example), str(guess),
                 "--source", "audit:3")
    candidate = GroundTruthCandidate.objects.get()
    assert (candidate.source, candidate.given, candidate.guessed) == ("audit:3", original, guess)
    with pytest.raises(CommandError, match="already has an open candidate"):
        call_command("add_ground_truth_candidate", "mnist", "corrected", str(example),
                     str(guess))
    client = Client()
    client.force_login(factories.host_create("boss"))
    home = client.get("/review/").content.decode()
    assert '<a class="button button-small" href="/review/mnist/ground-truth/next/">' in home
    page = client.get("/review/mnist/ground-truth/next/").content.decode()
    assert f'name="candidate" value="{candidate.pk}"' in page
    assert 'class="review-image" src="data:image/png;base64,' in page
    assert f"<strong>{original}</strong> <span class=\"muted\">class {original}</span>" in page
    for key in "gsbn":
        assert f'data-key="{key}"' in page
    response = client.post("/review/mnist/ground-truth/next/",
                           {"candidate": candidate.pk, "answer": "both"})
    assert (response.status_code, response["Location"]) == (
        302, "/review/mnist/ground-truth/next/")
    assert GroundTruthVote.objects.get().answer == "both"
    assert "no open candidate you have not answered" in client.get(
        "/review/mnist/ground-truth/next/").content.decode()
