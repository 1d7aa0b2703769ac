"""Small factories for tests: users, uploads of real prediction files, loaded benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet
from leaderboard.catalog.teams.models import HostTeam, TeamRole
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import host_team_member_set
from leaderboard.submissions.models import Submission
from leaderboard.submissions.participation.services import participation_rules_set
from leaderboard.submissions.services import submission_create

PREDICTIONS = "cifar10/model_predictions"
PASSWORD = "a-long-test-password"  # every user_create's


def user_create(username: str = "alice", *, staff: bool = False, email: str | None = None,
                verified: bool = True) -> User:
    """A user with PASSWORD and a primary email address (`<username>@example.org` unless
    given; "" for an account made before sign-up asked for one), verified as a sign-up that
    followed its verification link leaves it (`verified=False`: one that has not yet; with
    mandatory verification it cannot log in). `staff` is Django's flag only, which gives no
    right over benchmarks (docs/hosts/teams.md): host_create and reviewer_create give a team
    role."""
    from allauth.account.models import EmailAddress

    address = f"{username}@example.org" if email is None else email
    user = User.objects.create_user(username=username, password=PASSWORD, is_staff=staff,
                                    email=address)
    if address:
        EmailAddress.objects.create(user=user, email=address.lower(), primary=True,
                                    verified=verified)
    return user


def team_role_give(user: User, role: str, team: HostTeam | None = None) -> User:
    """`user` with `role` in `team` (the site team, which owns the built-in benchmarks, by
    default), as the operator's command gives it."""
    host_team_member_set(actor=None, team=team or host_team_site_get(), user=user, role=role)
    return user


def host_create(username: str = "host", *, team: HostTeam | None = None) -> User:
    """A host of `team` (default: the site team): its benchmarks' bundles, phases, audits,
    withdrawals, every submission, and review."""
    return team_role_give(user_create(username), TeamRole.HOST, team)


def reviewer_create(username: str = "reviewer", *, team: HostTeam | None = None) -> User:
    """A reviewer of `team` (default: the site team): its benchmarks' review queues."""
    return team_role_give(user_create(username), TeamRole.REVIEWER, team)


def team_create(slug: str, name: str | None = None) -> HostTeam:
    """A host team with no members (a test gives them: team_role_give)."""
    return HostTeam.objects.create(slug=slug, name=name or slug)


def upload_from_path(path: Path, name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes())


def upload_json(values: object, name: str = "preds.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, json.dumps(values).encode())


def upload_npy(array: np.ndarray, tmp_path: Path, name: str = "preds.npy") -> SimpleUploadedFile:
    path = tmp_path / name
    np.save(path, array)
    return upload_from_path(path)


def submission_scored(benchmark: str, example_set: str, array: np.ndarray, tmp_path: Path,
                      name: str, **kwargs: Any) -> Submission:
    """Submit `array` (a .npy) as the predictions on `example_set`, as a new user `owner-NAME`,
    and score it in this process (the cpu queue's task, run eagerly)."""
    # imported here: the tasks' module registers the job kinds' tasks with Celery on import
    from leaderboard.catalog.selectors import benchmark_get
    from leaderboard.tasks.cpu import score_submission

    submission = submission_create(
        owner=user_create(f"owner-{name}"), model_name=name,
        benchmark=benchmark_get(slug=benchmark),
        files={example_set: upload_npy(array, tmp_path, f"{name}.npy")}, **kwargs)
    assert score_submission.apply(args=[submission.pk], task_id=f"test-{submission.pk}") \
        .get() == "scored"
    submission.refresh_from_db()
    return submission


def cifar10_model_files(data_dir: Path, model: str) -> dict[str, Path]:
    """The real published predictions of one CIFAR-10 model, by example set slug."""
    base = data_dir / PREDICTIONS
    return {
        "cifar10-test": base / "original_predictions" / f"{model}_predictions.json",
        "cifar10.1-v4": base / "v4_predictions" / f"{model}_predictions.json",
        "cifar10.1-v6": base / "v6_predictions" / f"{model}_predictions.json",
    }


def cifar10() -> Benchmark:
    """The loaded CIFAR-10 benchmark (the `loaded` fixture loads it)."""
    return Benchmark.objects.get(slug="cifar10")


def submission_for_model(data_dir: Path, model: str, owner: User | None = None,
                         **kwargs: Any) -> Submission:
    """Submit one real CIFAR-10 model's published predictions (all three example sets)."""
    owner = owner or user_create(f"u-{model}")
    files = {slug: upload_from_path(path)
             for slug, path in cifar10_model_files(data_dir, model).items()}
    return submission_create(owner=owner, benchmark=cifar10(),
                                      model_name=model, files=files, **kwargs)


def toy_label_set(*, slug: str = "real", kind: str = "multi", family: str = "real") -> LabelSet:
    """A benchmark `toy` (10 classes, one example set of 100 examples) with one label set and no
    versions: enough for queues, audits and permissions, with nothing to score."""
    benchmark = Benchmark.objects.create(slug="toy", name="Toy", num_classes=10,
                                         main_example_set="toy-test")
    example_set = ExampleSet.objects.create(benchmark=benchmark, slug="toy-test", name="Toy test",
                                        size=100)
    return LabelSet.objects.create(benchmark=benchmark, example_set=example_set, slug=slug,
                                   kind=kind, family=family, name=f"Toy {slug}")


def participation_open(benchmark: Benchmark) -> Benchmark:
    """Open the benchmark to anyone signed in, as its hosts may: one with a hidden label set
    defaults to approval with a verified email (docs/hosts/participation.md)."""
    participation_rules_set(benchmark=benchmark, by=None, mode="open",
                            require_verified_email=False, terms="")
    return benchmark
