"""`--json` on every command against a live server (and a real scoring worker where it scores):
one JSON document on stdout with the server's fields and the submission's web page; a scoring
failure's document with exit 1; a quota refusal's error document with exit 5."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import top1_accuracy, write_json
from tests.clients.test_cli import run_client

MODEL = "resnet_basic_110"
SUBMISSION_KEYS = {"id", "kind", "benchmark", "model_name", "description", "paper_url",
                   "code_url", "public", "status", "failure_code", "failure_reason",
                   "withdrawn", "withdrawn_reason", "reruns", "created", "scored", "owner",
                   "files", "checkpoint", "scores", "releases", "page"}
BENCHMARKS = ["20news", "caltech256", "cifar10", "cifar100", "imagenet", "imdb", "mnist"]


def _json(*args: str, url: str, token: str | None = None,
          **env: str) -> tuple[int, Any]:
    done = run_client(*args, "--json", url=url, token=token, **env)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.django_db(transaction=True)
def test_it_prints_json_for_submit_status_submissions_leaderboard_and_benchmarks(
    loaded: Settings, data_dir: Path, scoring_worker: Path, live_server: LiveServer,
    tmp_path: Path,
) -> None:
    url = live_server.url
    token = str(Token.objects.create(user=factories.user_create("alice")).key)
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    accuracy, correct, total = top1_accuracy(data_dir, MODEL, "cifar10-test")

    code, scored = _json("submit", "--benchmark", "cifar10", "--model", MODEL,
                         f"cifar10-test={test_file}", url=url, token=token)

    assert code == 0, scoring_worker.read_text()
    pk = Submission.objects.get().pk
    assert set(scored) == SUBMISSION_KEYS
    assert (scored["id"], scored["status"], scored["page"]) == (
        pk, "scored", f"{url}/submissions/{pk}/")
    original = scored["scores"]["original"]
    assert (original["accuracy"], original["correct"], original["total"]) == (
        pytest.approx(accuracy, abs=1e-12), correct, total)
    assert _json("status", str(pk), url=url) == (0, scored)
    assert _json("submissions", url=url, token=token) == (0, [scored])
    code, board = _json("leaderboard", "cifar10", url=url)
    assert (code, board["benchmark"], board["next"]) == (0, "cifar10", None)
    assert [(r["submission_id"], r["model_name"], r["scores"]["original"]["accuracy"])
            for r in board["rows"]] == [(pk, MODEL, original["accuracy"])]
    code, benchmarks = _json("benchmarks", url=url)
    assert (code, [b["slug"] for b in benchmarks]) == (0, BENCHMARKS)
    assert set(benchmarks[0]) == {"slug", "name", "num_classes", "main_image_set",
                                  "image_sets", "label_sets"}

    # a file past the in-request check, refused by the worker's parse: exit 1, its document
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0
    preds = [3] * 10_000
    preds[17] = 10
    bad = write_json(tmp_path / "bad.json", preds)
    done = run_client("submit", "--benchmark", "cifar10", "--model", "bad", "--json",
                      f"cifar10-test={bad}", url=url, token=token)
    failed = json.loads(done.stdout)
    assert done.returncode == 1
    assert (failed["status"], failed["failure_code"], failed["model_name"]) == (
        "failed", "class_out_of_range", "bad")
    assert done.stderr == ("error: scoring failed: class_out_of_range: cifar10-test: row 17 "
                           "(0-based) has class id 10; ids must be in 0..9\n")


@pytest.mark.django_db(transaction=True)
def test_it_prints_json_for_the_participants_actions_and_a_quota_refusal(
    loaded: Settings, data_dir: Path, live_server: LiveServer, sent: list[tuple[str, int]],
) -> None:
    url = live_server.url
    alice = factories.user_create("alice")
    token = str(Token.objects.create(user=alice).key)
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    lost = factories.submission_for_model(data_dir, "vgg16_keras", owner=alice)
    Submission.objects.filter(pk=lost.pk).update(
        status="failed", failure_code="worker_lost", failure_reason="gone",
        finished_at=timezone.now() - timedelta(minutes=5), attempts=3)
    loaded.EVALSERVER_DAILY_QUOTA = 1  # the lost one is the server's fault: not counted

    code, created = _json("submit", "--benchmark", "cifar10", "--model", MODEL, "--no-wait",
                          f"cifar10-test={test_file}", url=url, token=token)
    pk = created["id"]
    assert (code, created) == (0, {"id": pk, "status": "queued",
                                   "url": f"{url}/api/submissions/{pk}/",
                                   "page": f"{url}/submissions/{pk}/"})
    refused = run_client("submit", "--benchmark", "cifar10", "--model", MODEL, "--json",
                         f"cifar10-test={test_file}", url=url, token=token)
    message = ("quota_exceeded: daily quota reached: 1 submissions per 24 hours on cifar10; "
               "try again later")
    assert (refused.returncode, json.loads(refused.stdout), refused.stderr) == (
        5, {"error": {"code": "quota_exceeded", "message": message, "status": 429,
                      "exit_code": 5}}, f"error: {message}\n")

    code, cancelled = _json("cancel", str(pk), url=url, token=token)
    assert (code, set(cancelled), cancelled["status"]) == (0, SUBMISSION_KEYS, "cancelled")
    code, withdrawn = _json("withdraw", str(pk), "--reason", "wrong model", "--yes", url=url,
                            token=token)
    assert (code, withdrawn["withdrawn_reason"], withdrawn["page"]) == (
        0, "wrong model", f"{url}/submissions/{pk}/")
    assert withdrawn["withdrawn"] is not None
    code, rerun = _json("rerun", str(lost.pk), url=url, token=token)
    assert (code, rerun["status"], rerun["reruns"], rerun["id"]) == (0, "queued", 1, lost.pk)
    code, mine = _json("submissions", url=url, token=token)
    assert (code, [(s["id"], s["status"]) for s in mine]) == (
        0, [(pk, "cancelled"), (lost.pk, "queued")])
    # the factory's, the new one and the re-run queued; the refused one not
    assert [job for name, job in sent if name == "leaderboard.tasks.cpu.score_submission"] == [
        lost.pk, pk, lost.pk]
