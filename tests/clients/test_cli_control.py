"""`python -m evalserver_client cancel | rerun | withdraw` against a live server: exit 0 and
the submission's new state, or exit 5 with the server's refusal (its code and words)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.submissions.models import Submission
from tests import factories
from tests.clients.test_cli import CLIENT_DIR, run_client
from tests.helpers import PROJECT_ROOT

MODEL = "resnet_basic_110"


@pytest.mark.django_db(transaction=True)
def test_it_cancels_reruns_and_withdraws_with_exit_codes(
    loaded: Settings, data_dir: Path, live_server: LiveServer, sent: list[tuple[str, int]]
) -> None:
    alice = factories.user_create("alice")
    token = str(Token.objects.create(user=alice).key)
    queued = factories.submission_for_model(data_dir, MODEL, owner=alice)
    lost = factories.submission_for_model(data_dir, "vgg16_keras", owner=alice)
    Submission.objects.filter(pk=lost.pk).update(
        status="failed", failure_code="worker_lost", failure_reason="gone",
        finished_at=timezone.now() - timedelta(minutes=5), attempts=3)
    bobs = factories.submission_for_model(data_dir, "nas", owner=factories.user_create("bob"))
    Submission.objects.filter(pk=bobs.pk).update(status="scored", finished_at=timezone.now())

    def client(*args: str) -> tuple[int, str, str]:
        done = run_client(*args, url=live_server.url, token=token)
        return done.returncode, done.stdout, done.stderr

    assert client("cancel", str(queued.pk)) == (
        0, f"submission {queued.pk}: {MODEL} on cifar10 - cancelled\n", "")
    assert client("cancel", str(queued.pk)) == (
        5, "", "error: not_cancellable: only a queued submission can be cancelled; this one "
               "is cancelled\n")
    assert client("rerun", str(lost.pk)) == (
        0, f"submission {lost.pk}: vgg16_keras on cifar10 - queued\n", "")
    lost.refresh_from_db()
    assert (lost.status, lost.attempts, lost.reruns) == ("queued", 0, 1)
    assert client("rerun", str(queued.pk)) == (
        5, "", "error: not_rerunnable: only a failed submission can be run again; this one "
               "is cancelled\n")
    assert client("withdraw", str(queued.pk), "--reason", "wrong model", "--yes") == (
        0, f"submission {queued.pk}: {MODEL} on cifar10 - cancelled, withdrawn (wrong model)\n",
        "")
    assert client("withdraw", str(bobs.pk), "--yes") == (
        5, "", "error: not_owner: only the submitter or a host of the benchmark's team can "
               "withdraw a submission\n")
    assert client("cancel", "999999") == (
        5, "", "error: not_found: no submission 999999 that you can see\n")
    assert Submission.objects.get(pk=bobs.pk).withdrawn is None
    done = run_client("cancel", str(lost.pk), url=live_server.url)  # no token
    assert done.returncode == 3 and done.stderr.startswith("error: no API token")


@pytest.mark.django_db(transaction=True)
def test_it_withdraws_only_when_confirmed(
    loaded: Settings, data_dir: Path, live_server: LiveServer, sent: list[tuple[str, int]]
) -> None:
    """Without --yes: refused before anything is sent where no one can answer (a pipe), and
    asked at a terminal, where only "y" withdraws."""
    alice = factories.user_create("alice")
    token = str(Token.objects.create(user=alice).key)
    submission = factories.submission_for_model(data_dir, MODEL, owner=alice)
    warning = (f"Withdrawing takes submission {submission.pk} off every board for good: it "
               "cannot be undone (its scores stay visible to you). On a Ladder's hidden label "
               "set your released best stays the figure a new submission must beat.")

    piped = run_client("withdraw", str(submission.pk), url=live_server.url, token=token)
    assert (piped.returncode, piped.stdout, piped.stderr) == (
        2, "", f"error: {warning} Pass --yes to withdraw it.\n")
    assert at_a_terminal(["withdraw", str(submission.pk)], "n\n", live_server.url, token) == (
        2, f"{warning}\nWithdraw submission {submission.pk}? [y/N] error: not withdrawn: "
           f"submission {submission.pk} is unchanged\n")
    submission.refresh_from_db()
    assert submission.withdrawn is None
    assert at_a_terminal(["withdraw", str(submission.pk)], "y\n", live_server.url, token) == (
        0, f"{warning}\nWithdraw submission {submission.pk}? [y/N] submission {submission.pk}: "
           f"{MODEL} on cifar10 - cancelled, withdrawn\n")
    submission.refresh_from_db()
    assert submission.withdrawn is not None


def at_a_terminal(args: list[str], typed: str, url: str, token: str) -> tuple[int, str]:
    """The client run with a pseudo-terminal as its stdin, stdout and stderr, `typed` typed
    at it: (exit code, everything it wrote there, with the terminal's CRLF as LF)."""
    main, child = pty.openpty()
    environment = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(CLIENT_DIR),
                   "EVALSERVER_URL": url, "EVALSERVER_TOKEN": token, "TERM": "dumb",
                   "HOME": tempfile.mkdtemp(prefix="evalserver-client-")}
    with subprocess.Popen([sys.executable, "-m", "evalserver_client", *args], cwd=PROJECT_ROOT,
                          env=environment, stdin=child, stdout=child, stderr=child) as process:
        os.close(child)
        os.write(main, typed.encode())
        output = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the client exited and the terminal closed
                break
            if not chunk:
                break
            output += chunk
        code = process.wait(timeout=60)
    os.close(main)
    # the terminal echoes what was typed; drop the echo
    text = output.decode().replace("\r\n", "\n").replace(typed, "", 1)
    return code, text
