"""Fixtures of the label-audit server tests: maintainers, real MNIST submissions (the
cross-validated probabilities of cleanlab/label-errors, or class ids), audits run in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth.models import User

from leaderboard.audits import services as audits
from leaderboard.audits.models import Audit
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import run_confident_learning_audit, score_submission
from leaderboard.tasks.gpu import run_aul_audit
from tests import factories
from tests.label_error_study import example_of


def maintainer(username: str = "maint") -> User:
    """A host of the site team (the same one when asked again)."""
    return (User.objects.filter(username=username).first()
            or factories.host_create(username))


def submit_mnist(values: np.ndarray, tmp_path: Path, name: str = "cleanlab-cv",
                 *, scored: bool = True) -> Submission:
    """Submit MNIST predictions as a new user; scored in this process unless told not to."""
    submission = submission_create(
        owner=factories.user_create(f"owner-{name}"), model_name=name,
        benchmark=benchmark_get(slug="mnist"),
        files={"mnist-test": factories.upload_npy(values, tmp_path, f"{name}.npy")})
    if scored:
        assert score_submission.apply(args=[submission.pk], task_id=f"audit-{submission.pk}") \
            .get() == "scored"
    return submission


def run_in_process(audit: Audit) -> str:
    """The audit's real Celery task body in this process (no broker)."""
    task = run_aul_audit if audit.kind == Audit.Kind.AUL else run_confident_learning_audit
    result: str = task.apply(args=[audit.pk], task_id=f"audit-task-{audit.pk}").get()
    return result


def start(author: User, benchmark: str = "mnist", **kwargs: Any) -> Audit:
    return audits.audit_create(author=author, benchmark=benchmark_get(slug=benchmark),
                               **kwargs)


def validated(data_dir: Path, benchmark: str = "mnist") -> tuple[set[int], set[int]]:
    """(validated errors, checked examples) of a built-in benchmark as 0-based example
    indices, straight from its vote file: an error is an example fewer than 3 of whose 5
    workers kept the given label. Vote ids are indices, except ImageNet's 1-based file
    numbers and IMDB's review names (MANIFEST.md of the data directory)."""
    records = json.loads((data_dir / benchmark / "cleanlab_mturk.json").read_text())
    named = example_of(data_dir, benchmark)

    def index(vote_id: Any) -> int:
        if benchmark == "imagenet":
            return int(vote_id) - 1
        return named[vote_id] if named else int(vote_id)

    errors = {index(r["id"]) for r in records if r["mturk"].get("given", 0) < 3}
    return errors, {index(r["id"]) for r in records}
