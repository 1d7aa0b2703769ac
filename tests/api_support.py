"""Helpers of the API tests: authenticated clients, uploads, polling, direct computations."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIClient

from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from tests import factories

SUBMISSIONS = "/api/submissions/"
LABEL_FILES = {
    "cifar10-test": "cifar10/original_labels.npy",
    "cifar10.1-v4": "cifar10/cifar10.1_v4_labels.npy",
    "cifar10.1-v6": "cifar10/cifar10.1_v6_labels.npy",
}


def api_client(user: User | None = None) -> APIClient:
    """A DRF test client, authenticated as `user` (anonymous without one)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def token_client(user: User) -> APIClient:
    """A client that sends `Authorization: Token <key>` for this user."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def post_files(client: APIClient, files: dict[str, Path], **fields: Any) -> Response:
    """POST /api/submissions/ as multipart with real file handles, one per example set slug."""
    with ExitStack() as stack:
        handles = {slug: stack.enter_context(path.open("rb")) for slug, path in files.items()}
        return client.post(SUBMISSIONS, {**fields, **handles}, format="multipart")


def write_json(path: Path, values: object) -> Path:
    path.write_text(json.dumps(values))
    return path


def poll(client: APIClient, submission_id: int, *, timeout: float = 90,
         log: Path | None = None) -> dict[str, Any]:
    """GET the submission until it is scored or failed; fail with the worker's log."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"{SUBMISSIONS}{submission_id}/")
        assert response.status_code == 200, response.content
        body: dict[str, Any] = response.json()
        if body["status"] in ("scored", "failed"):
            return body
        if time.monotonic() > deadline:
            detail = log.read_text() if log and log.exists() else ""
            pytest.fail(f"submission {submission_id} still {body['status']} after {timeout} s"
                        f"\n{detail}")
        time.sleep(0.2)


def top1_accuracy(data_dir: Path, model: str, example_set: str) -> tuple[float, int, int]:
    """(accuracy, correct, total) of a real CIFAR-10 model, computed directly with numpy."""
    path = factories.cifar10_model_files(data_dir, model)[example_set]
    preds = np.array(json.loads(path.read_text()))
    labels = np.load(data_dir / LABEL_FILES[example_set])
    hits = preds == labels
    return float(hits.mean()), int(hits.sum()), int(labels.shape[0])


def scored_in_process(data_dir: Path, model: str, owner: User, *,
                      example_sets: tuple[str, ...] = ("cifar10-test", "cifar10.1-v6"),
                      public: bool = True) -> Submission:
    """Create a submission of a real model through the services and score it in this process
    (the task body, without a worker)."""
    paths = factories.cifar10_model_files(data_dir, model)
    files = {slug: factories.upload_from_path(paths[slug]) for slug in example_sets}
    submission = submission_create(
        owner=owner, benchmark=factories.cifar10(), model_name=model, files=files,
        public=public)
    assert score_submission.apply(args=[submission.pk], task_id=f"t-{submission.pk}").get() \
        == "scored"
    submission.refresh_from_db()
    return submission
