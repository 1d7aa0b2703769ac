"""The registry of job kinds (leaderboard/tasks/registry.py) is complete: every kind's tasks are
registered
under the names the web side sends (settings.JOB_TASKS), routed to the queue its entry names,
with its time limits and retries; its attempts setting is read; beat sweeps it. And the one
runner (leaderboard/tasks/runner.py `job_run`) stores every outcome the same way for every kind."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError
from pytest_django.fixtures import Settings

from evalserver.celery import app
from leaderboard.catalog.models import BundleUpload
from leaderboard.jobs.kinds import JobKind, JobTask
from leaderboard.jobs.lifecycle import ClaimedJob
from leaderboard.tasks import cpu as cpu_tasks
from leaderboard.tasks import gpu as gpu_tasks
from leaderboard.tasks import runner
from leaderboard.tasks.registry import JOBS
from tests import factories
from tests.helpers import PROJECT_ROOT
from workers.scoring.bundles import BundleError

assert cpu_tasks and gpu_tasks  # register the tasks of every queue


@pytest.mark.parametrize("name", sorted(JOBS))
def test_it_has_everything_a_kind_needs(name: str) -> None:
    kind = JOBS[name]
    assert kind.name == name and issubclass(kind.model, ClaimedJob)
    statuses = {value for value, _ in kind.model._meta.get_field("status").choices or ()}
    # "cancelled": a state a kind may offer (leaderboard/jobs/lifecycle.py `job_cancel`)
    assert {"queued", "running", "failed", kind.finished} == statuses - {"cancelled"}
    names = settings.JOB_TASKS[name]
    assert set(kind.tasks) == set(names)  # one task per variant, each named
    if kind.variant_field:  # a variant per value of the row's field
        field = kind.model._meta.get_field(kind.variant_field)
        assert set(kind.tasks) == {value for value, _ in field.choices or ()}
    else:
        assert list(kind.tasks) == [""]
    assert int(getattr(settings, kind.max_attempts_setting)) >= 1
    for variant, spec in kind.tasks.items():
        task = app.tasks[names[variant]]  # registered by leaderboard/tasks/cpu.py or gpu.py
        assert app.amqp.router.route({}, task.name)["queue"].name == spec.queue
        soft, hard = spec.limits()
        assert 0 < soft < hard
        assert (task.soft_time_limit, task.time_limit) == (soft, hard)
        assert task.max_retries == kind.max_retries
        assert set(task.autoretry_for) == set(runner.TRANSIENT)
    sweeps = [entry for entry in settings.CELERY_BEAT_SCHEDULE.values()
              if entry["task"] == "leaderboard.tasks.cpu.sweep_jobs"
              and tuple(entry["args"]) == (name,)]
    assert [entry["schedule"] for entry in sweeps] == [float(settings.EVALSERVER_SWEEP_INTERVAL)]
    assert "leaderboard.tasks.cpu.sweep_jobs" in app.tasks


def test_it_registers_every_kind_the_settings_name() -> None:
    assert sorted(JOBS) == sorted(settings.JOB_TASKS)


PRINT_ATTEMPTS = """
import json, django
django.setup()
from django.conf import settings as s
print(json.dumps([s.EVALSERVER_SCORING_MAX_ATTEMPTS, s.EVALSERVER_AUDIT_MAX_ATTEMPTS,
                  s.EVALSERVER_RESCORE_MAX_ATTEMPTS, s.EVALSERVER_BUNDLE_MAX_ATTEMPTS]))
"""
ATTEMPTS = ("EVALSERVER_SCORING_MAX_ATTEMPTS", "EVALSERVER_AUDIT_MAX_ATTEMPTS",
            "EVALSERVER_RESCORE_MAX_ATTEMPTS", "EVALSERVER_BUNDLE_MAX_ATTEMPTS")


def _attempts(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ATTEMPTS}
    env.update(variables, DJANGO_SETTINGS_MODULE="evalserver.settings", SECRET_KEY="x" * 50)
    return subprocess.run([sys.executable, "-c", PRINT_ATTEMPTS], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_it_reads_each_kinds_attempts_and_the_old_setting_as_their_default() -> None:
    assert json.loads(_attempts().stdout) == [3, 3, 3, 3]
    own = _attempts(EVALSERVER_SCORING_MAX_ATTEMPTS="2", EVALSERVER_AUDIT_MAX_ATTEMPTS="5",
                    EVALSERVER_RESCORE_MAX_ATTEMPTS="6", EVALSERVER_BUNDLE_MAX_ATTEMPTS="7")
    assert json.loads(own.stdout) == [2, 5, 6, 7] and "FutureWarning" not in own.stderr
    old = _attempts(EVALSERVER_SCORING_MAX_ATTEMPTS="4", EVALSERVER_BUNDLE_MAX_ATTEMPTS="1")
    assert json.loads(old.stdout) == [4, 4, 4, 1]
    assert "FutureWarning: EVALSERVER_SCORING_MAX_ATTEMPTS is read for " \
           "EVALSERVER_AUDIT_MAX_ATTEMPTS" in old.stderr
    bad = _attempts(EVALSERVER_RESCORE_MAX_ATTEMPTS="0")
    assert bad.returncode != 0
    assert "EVALSERVER_RESCORE_MAX_ATTEMPTS='0' is not valid" in bad.stderr


# -- the runner: one ladder for every kind (here on a bundle upload, with a stand-in work) --


def _kind(work: Any) -> JobKind:
    bundle = JOBS["bundle_upload"]
    task = bundle.tasks[""]
    return dataclasses.replace(bundle, tasks={"": JobTask(queue=task.queue, work=work,
                                                           time_limit=task.time_limit)})


def _upload() -> BundleUpload:
    author = User.objects.filter(username="maint").first() or factories.host_create(
        "maint")
    return BundleUpload.objects.create(original_name="b.zip", size=1, uploaded_by=author,
                                       bundle="bundles/1/b.zip")


def _raises(exc: BaseException) -> Any:
    def work(*, job_id: int, task_id: str) -> bool:
        raise exc

    return work


@pytest.mark.django_db
@pytest.mark.parametrize(("exc", "code", "reason"), [
    (BundleError("bad_zip", "not a zip", file="b.zip"), "bad_zip", "not a zip"),
    (SoftTimeLimitExceeded(), "time_limit", "adding the bundle took longer than 1799 s"),
    (KeyError("x"), "internal_error", "the server could not add this bundle (KeyError); the "
                                      "details are in the worker's log"),
])
def test_it_fails_a_job_with_the_code_of_how_its_work_failed(
    catalog_settings: Settings, exc: BaseException, code: str, reason: str
) -> None:
    catalog_settings.EVALSERVER_BUNDLE_TIME_LIMIT = 1800
    upload = _upload()
    assert runner.job_run(_kind(_raises(exc)), "", job_id=upload.pk, task_id="t") == "failed"
    upload.refresh_from_db()
    assert (upload.status, upload.failure_code, upload.failure_reason, upload.attempts) == (
        "failed", code, reason, 1)
    assert upload.finished_at is not None
    assert runner.job_run(_kind(_raises(exc)), "", job_id=upload.pk, task_id="t") == "skipped"


@pytest.mark.django_db
@pytest.mark.parametrize("exc", [OperationalError("gone"), OSError("storage away")])
def test_it_raises_transient_trouble_for_celery_to_retry_and_keeps_the_claim(
    catalog_settings: Settings, exc: Exception
) -> None:
    upload = _upload()
    with pytest.raises(type(exc)):
        runner.job_run(_kind(_raises(exc)), "", job_id=upload.pk, task_id="t")
    upload.refresh_from_db()
    assert (upload.status, upload.claimed_by, upload.failure_code) == ("running", "t", "")
    # the retry (same task id) takes its claim back and finishes
    finished = []

    def work(*, job_id: int, task_id: str) -> bool:
        finished.append(job_id)
        return True

    assert runner.job_run(_kind(work), "", job_id=upload.pk, task_id="t", retry=True) == "done"
    assert finished == [upload.pk]
