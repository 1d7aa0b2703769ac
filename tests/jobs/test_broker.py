"""The sweep asks a real broker which messages it still holds (leaderboard/jobs/sweep.py,
leaderboard/jobs/broker.py `broker_tasks_read`): a job queued past the short window whose message is
gone is sent again once, one whose message waits (on the queue or delivered to a worker) never
is, a running job whose message a worker took but no live worker holds (`worker_tasks_held`,
Celery's remote control) is queued again once, one a live worker runs never is, and a broker
that cannot be read leaves only the long cutoffs."""

from __future__ import annotations

import base64
import json
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.utils import timezone
from pytest_django.fixtures import Settings

from evalserver.celery import app
from leaderboard import queue
from leaderboard.jobs import broker as jobs_broker
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions.models import Score, Submission
from leaderboard.tasks.registry import JOBS
from tests import factories, task_names
from tests.conftest import (
    WorkerProcess,
    _point_celery_app,
    redis_database_empty,
    wait_for_status,
)
from tests.helpers import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_url(redis_url: str) -> Iterator[str]:
    """A Redis database of this module's own, empty before and after each test: these tests
    read every message the broker holds, so none of another test's may be there."""
    yield from redis_database_empty(redis_url, 13)


def _resent(broker: redis.Redis) -> list[tuple[str, int]]:
    """(task name, job id) of every message waiting on the cpu queue, oldest first (kombu's
    Redis transport pushes each onto the head of the list named after the queue)."""
    found = []
    for raw in reversed(broker.lrange("cpu", 0, -1)):
        message = json.loads(raw)
        args, _, _ = json.loads(base64.b64decode(message["body"]))
        found.append((message["headers"]["task"], args[0]))
    return found


def _submission(n: int, **fields: Any) -> Submission:
    submission = Submission.objects.create(
        owner=factories.user_create(f"owner{n}"), benchmark=factories.cifar10(),
        model_name=f"model {n}")
    Submission.objects.filter(pk=submission.pk).update(**fields)
    return submission


def test_it_resends_only_the_jobs_whose_message_the_broker_no_longer_holds(
    loaded: Settings, broker: redis.Redis,
) -> None:
    loaded.EVALSERVER_SWEEP_WINDOW = 60
    now = timezone.now()
    past_window, within_window = now - timedelta(seconds=61), now - timedelta(seconds=30)
    lost = _submission(0, queued_at=past_window)
    recent = _submission(1, queued_at=within_window)
    delivered = _submission(2, queued_at=past_window)
    waiting = _submission(3, queued_at=past_window)
    running_gone = _submission(4, status="running", claimed_by="gone", started=past_window,
                               attempts=1)
    running_held = _submission(5, status="running", started=past_window, attempts=1)

    # A worker has taken delivered's message and not acknowledged it (kombu keeps it in the
    # `unacked` hash until the task ends); waiting's message is still on the queue.
    queue.task_send(task_names.SCORE_SUBMISSION, delivered.pk)
    queue.task_send(task_names.SCORE_SUBMISSION, running_held.pk)
    with app.connection_for_read() as connection:
        channel = connection.default_channel
        taken = [channel.basic_get("cpu", no_ack=False) for _ in range(2)]
        assert [message.decode()[0] for message in taken] == [[delivered.pk],
                                                              [running_held.pk]]
        Submission.objects.filter(pk=running_held.pk).update(claimed_by=taken[1].headers["id"])
        queue.task_send(task_names.SCORE_SUBMISSION, waiting.pk)
        assert broker.hlen("unacked") == 2
        assert _resent(broker) == [(task_names.SCORE_SUBMISSION, waiting.pk)]

        # running_gone: the message of the task holding its claim is gone; lost: never sent;
        # running_held: its message is delivered and unacknowledged, but no worker is alive
        # to answer for its task (this test process took it, as a worker killed whole did)
        assert jobs_broker.worker_tasks_held([taken[1].headers["id"]]) == frozenset()
        assert jobs_sweep(JOBS["submission"]) == [running_gone.pk, running_held.pk, lost.pk]
        assert _resent(broker) == [(task_names.SCORE_SUBMISSION, waiting.pk),
                                   (task_names.SCORE_SUBMISSION, running_gone.pk),
                                   (task_names.SCORE_SUBMISSION, running_held.pk),
                                   (task_names.SCORE_SUBMISSION, lost.pk)]
        assert broker.hlen("unacked") == 2  # running_held's old message stays delivered
        assert jobs_sweep(JOBS["submission"]) == []  # once: all three were sent again just now

    def state(submission: Submission) -> tuple[Any, ...]:
        submission.refresh_from_db()
        return submission.status, submission.claimed_by, submission.attempts

    for requeued in (running_gone, running_held):
        assert state(requeued) == ("queued", "", 1)
        assert requeued.queued_at >= now
    assert state(lost) == ("queued", "", 0)
    assert lost.queued_at >= now
    for untouched, queued_at in ((recent, within_window), (delivered, past_window),
                                 (waiting, past_window)):
        assert state(untouched) == ("queued", "", 0)
        assert untouched.queued_at == queued_at


def test_it_lists_the_tasks_waiting_and_delivered_in_the_broker(broker: redis.Redis) -> None:
    assert jobs_broker.broker_tasks_read() == jobs_broker.BrokerTasks(jobs=frozenset(),
                                                          task_ids=frozenset())
    queue.task_send(task_names.SCORE_SUBMISSION, 7)
    queue.task_send(task_names.RUN_CHECKPOINT, 8)
    # With a priority (this project sends none) kombu keeps a message on another list.
    with_priority = app.send_task(task_names.RESCORE_VERSION, args=[9], priority=3,
                                  ignore_result=True)
    assert broker.llen("cpu\x06\x163") == 1
    broker.lpush("cpu", b"not a kombu message")
    with app.connection_for_read() as connection:
        gpu = connection.default_channel.basic_get("gpu", no_ack=False)  # now unacked
        assert broker.llen("gpu") == 0
        listed = jobs_broker.broker_tasks_read()
    cpu_ids = [json.loads(raw)["headers"]["id"] for raw in broker.lrange("cpu", 0, -1)
               if raw.startswith(b"{")]
    assert listed == jobs_broker.BrokerTasks(
        jobs=frozenset({(task_names.SCORE_SUBMISSION, 7), (task_names.RUN_CHECKPOINT, 8),
                        (task_names.RESCORE_VERSION, 9)}),
        task_ids=frozenset({*cpu_ids, gpu.headers["id"], with_priority.id}),
        delivered=frozenset({gpu.headers["id"]}))
    assert len(listed.task_ids) == 3


def test_it_falls_back_to_the_long_cutoff_when_the_broker_cannot_be_read(
    loaded: Settings, caplog: pytest.LogCaptureFixture, sent: list[tuple[str, int]],
) -> None:
    limit = loaded.EVALSERVER_SCORING_TIME_LIMIT
    now = timezone.now()
    past_window = now - timedelta(seconds=61)
    past_limit = now - timedelta(seconds=limit + 31)  # its hard time limit, then 30 s more
    maybe_lost = _submission(0, queued_at=past_window)
    lost = _submission(1, queued_at=past_limit)
    maybe_stuck = _submission(2, status="running", claimed_by="t2", started=past_window)
    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    _point_celery_app(app, broker_url=nobody, result_backend=nobody)
    try:
        assert jobs_broker.broker_tasks_read() is None
        with caplog.at_level(logging.WARNING, logger="leaderboard.queue"):
            assert jobs_broker.worker_tasks_held(["t2"]) is None  # the workers cannot be asked
            assert jobs_sweep(JOBS["submission"]) == [lost.pk]
    finally:
        _point_celery_app(app, **saved)
    assert sent == [(task_names.SCORE_SUBMISSION, lost.pk)]
    assert "the broker's messages cannot be read" in caplog.text
    assert "the workers cannot be asked which tasks they hold" in caplog.text
    for untouched, status in ((maybe_lost, "queued"), (maybe_stuck, "running")):
        untouched.refresh_from_db()
        assert untouched.status == status

    _point_celery_app(app, broker_url="memory://", result_backend=nobody)
    try:
        assert jobs_broker.broker_tasks_read() is None  # not Redis: not read
    finally:
        _point_celery_app(app, **saved)


@pytest.mark.slow
def test_it_leaves_a_job_alone_while_a_live_worker_holds_its_message(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest, broker: redis.Redis,
) -> None:
    # The task sleeps 6 s after its claim; meanwhile its message is delivered, unacknowledged.
    monkeypatch.setenv("EVALSERVER_SCORING_DELAY_MS", "6000")
    worker: WorkerProcess = request.getfixturevalue("scoring_worker_process")
    submission = factories.submission_for_model(data_dir, "resnet_basic_110")
    assert wait_for_status(submission.pk, ("running", "scored", "failed"),
                           log=worker.log) == "running"
    submission.refresh_from_db()
    claim = submission.claimed_by
    assert [json.loads(raw)[0]["headers"]["id"] for raw in broker.hvals("unacked")] == [claim]
    long_ago = timezone.now() - timedelta(seconds=loaded.EVALSERVER_SWEEP_WINDOW + 1)
    Submission.objects.filter(pk=submission.pk).update(started=long_ago, queued_at=long_ago)

    # The live worker answers for the task it runs, so the sweep leaves the job alone.
    assert jobs_broker.worker_tasks_held([claim, "another task"]) == frozenset({claim})
    assert jobs_sweep(JOBS["submission"]) == []
    assert wait_for_status(submission.pk, ("scored", "failed"), log=worker.log) == "scored"
    submission.refresh_from_db()
    assert (submission.attempts, submission.claimed_by) == (1, claim)
    scored_on = Score.objects.filter(submission=submission).values_list("label_set__slug",
                                                                         flat=True)
    assert sorted(scored_on) == ["cifar10.1-v4", "cifar10.1-v6", "cifar10h", "corrected",
                                 "original"]  # once each
    deadline = time.monotonic() + 10
    while broker.hlen("unacked"):  # acknowledged once the task returns
        assert time.monotonic() < deadline, worker.log.read_text()
        time.sleep(0.1)


@pytest.mark.slow
def test_it_requeues_once_a_running_job_whose_worker_was_killed_whole(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest, broker: redis.Redis,
) -> None:
    monkeypatch.setenv("EVALSERVER_SCORING_DELAY_MS", "60000")
    worker: WorkerProcess = request.getfixturevalue("scoring_worker_process")
    submission = factories.submission_for_model(data_dir, "resnet_basic_110")
    assert wait_for_status(submission.pk, ("running", "scored", "failed"),
                           log=worker.log) == "running"
    submission.refresh_from_db()
    claim = submission.claimed_by
    assert jobs_broker.worker_tasks_held([claim]) == frozenset({claim})
    # SIGKILL to the whole worker (its main process and pool child): nothing acknowledges
    # or gives back its message, which stays in the unacked hash (for the visibility timeout).
    os.killpg(worker.pid, signal.SIGKILL)
    worker.process.wait(timeout=10)
    assert [json.loads(raw)[0]["headers"]["id"] for raw in broker.hvals("unacked")] == [claim]
    assert jobs_broker.worker_tasks_held([claim]) == frozenset()  # no worker answers

    within = timezone.now() - timedelta(seconds=loaded.EVALSERVER_SWEEP_WINDOW - 5)
    Submission.objects.filter(pk=submission.pk).update(started=within)
    assert jobs_sweep(JOBS["submission"]) == []  # not yet past the window: not asked, not touched
    long_ago = timezone.now() - timedelta(seconds=loaded.EVALSERVER_SWEEP_WINDOW + 1)
    Submission.objects.filter(pk=submission.pk).update(started=long_ago)
    now = timezone.now()
    assert jobs_sweep(JOBS["submission"]) == [submission.pk]
    assert jobs_sweep(JOBS["submission"]) == []  # once
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by, submission.attempts) == ("queued", "", 1)
    assert submission.queued_at >= now
    assert _resent(broker) == [(task_names.SCORE_SUBMISSION, submission.pk)]


def _child_exit_codes(count: int) -> list[int | None]:
    """Fork `count` processes that do nothing (each runs the after-fork hooks on its way in,
    as a re-scoring pool's children do) and give each 20 s to exit; one still running is
    killed and reported as None."""
    children = [multiprocessing.get_context("fork").Process(target=time.sleep, args=(0,))
                for _ in range(count)]
    for child in children:
        child.start()
    codes = []
    for child in children:
        child.join(20)
        codes.append(child.exitcode)
        if child.exitcode is None:
            child.kill()
            child.join()
    return codes


def test_it_leaves_no_broker_connection_that_hangs_the_processes_forked_after_a_question(
    broker: redis.Redis,
) -> None:
    # Both questions go unanswered (no worker listens): each reply consumer waits its timeout,
    # which leaves a BRPOP outstanding on the connection it used. Were that connection the
    # app's pooled one, every forked child would read the one pending answer while closing it
    # after the fork, and all but the first would wait for ever.
    assert jobs_broker.worker_tasks_held(["t1"], timeout=0.3) == frozenset()
    assert jobs_broker.worker_queues_answering(timeout=0.3) == frozenset()
    assert _child_exit_codes(3) == [0, 0, 0]
