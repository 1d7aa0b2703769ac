"""A new account's whole life with its email, in a real browser (Debian's chromium through
Playwright) on a live server, the emails sent by a real Celery worker (the notify queue's
`send_account_email`) into a folder (Django's file-based mail backend, set by the worker's
environment): sign up with an email address, read the verification email, follow its link and
confirm; log out, ask for a password reset, follow the emailed link, set a new password, log
in with it, and submit a real CIFAR-10 model's predictions, which the same worker scores.
Nothing leaves the machine."""

from __future__ import annotations

import email
import email.policy
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission
from leaderboard.templatetags.leaderboard_extras import percent
from tests import factories
from tests.browser import NEEDS_CHROMIUM, browser_log_in, browser_page
from tests.conftest import WorkerProcess, _running_worker, scoring_worker_env

USERNAME, ADDRESS = "new-reader", "new-reader@example.org"
MODEL = "resnet_basic_32"  # one of the 30 real CIFAR-10 models (../shared/data)
PASSWORD, NEW_PASSWORD = "a-long-first-password", "a-long-second-password"
# the file-based backend writes each message followed by a line of 79 dashes
SEPARATOR = "\n" + "-" * 79 + "\n"


@pytest.fixture
def mail_worker(redis_url: str, catalog_settings: Settings, tmp_path: Path
                ) -> Iterator[tuple[WorkerProcess, Path]]:
    """A real worker (-Q cpu,notify) that scores this test's submissions and whose email goes
    to files in a folder of its own."""
    folder = tmp_path / "mail"
    folder.mkdir()
    env = {**scoring_worker_env(catalog_settings),
           "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
           "EMAIL_FILE_PATH": str(folder)}
    with _running_worker(redis_url, tmp_path / "mail-worker.log", env, "mail") as worker:
        yield worker, folder


def _emails(folder: Path) -> list[email.message.EmailMessage]:
    found = []
    for path in sorted(folder.glob("*.log")):
        for text in path.read_text().split(SEPARATOR):
            if text.strip():
                found.append(email.message_from_string(text.lstrip(),
                                                       policy=email.policy.default))
    return found  # type: ignore[return-value]


def _next_email(folder: Path, count: int, worker: WorkerProcess) -> Any:
    """The `count`th email the worker wrote, waiting for it (up to a minute)."""
    deadline = time.monotonic() + 60
    while len(found := _emails(folder)) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"no email {count} from the worker:\n{worker.log.read_text()}")
        time.sleep(0.2)
    return found[count - 1]


def _link(message: Any, base: str, path: str) -> str:
    body = message.get_body(preferencelist=("plain",)).get_content()
    (link,) = re.findall(rf"{re.escape(base)}{re.escape(path)}\S+/", body)
    return str(link)


@pytest.mark.slow
@NEEDS_CHROMIUM
@pytest.mark.django_db(transaction=True)
def test_it_verifies_a_new_accounts_address_and_resets_its_password_by_email(
    browser: Any, live_server: Any, mail_worker: tuple[WorkerProcess, Path],
    run_load_benchmarks: Callable[..., tuple[str, str]], data_dir: Path,
) -> None:
    from playwright.sync_api import expect

    run_load_benchmarks("--benchmark", "cifar10")

    worker, folder = mail_worker
    base = live_server.url
    page = browser_page(browser, width=1280, height=900, timeout_ms=20_000)

    page.goto(f"{base}/")
    page.locator(".nav-user").get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill(ADDRESS)
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label(re.compile(r"^Password \*$")).fill(PASSWORD)
    page.get_by_label("Password (again)").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{base}/accounts/confirm-email/")
    expect(page.locator("h1")).to_contain_text("Verify Your Email Address")
    assert EmailAddress.objects.filter(user__username=USERNAME, email=ADDRESS,
                                       verified=False).exists()

    verification = _next_email(folder, 1, worker)
    assert verification["To"] == ADDRESS
    assert verification["Subject"] == "[evalserver] Please Confirm Your Email Address"
    page.goto(_link(verification, base, "/accounts/confirm-email/"))
    page.get_by_role("button", name="Confirm").click()
    # verified, and sent to log in (through /login/, LOGIN_URL), which now lets the user in
    expect(page).to_have_url(f"{base}/accounts/login/")
    assert EmailAddress.objects.get(user__username=USERNAME).verified
    browser_log_in(page, base, USERNAME, PASSWORD)

    page.locator(".nav-user").get_by_role("button", name="Log out").click()
    expect(page.locator(".nav-user").get_by_role("link", name="Log in")).to_be_visible()
    page.goto(f"{base}/accounts/login/")
    page.get_by_role("link", name="Forgot your password?").click()
    page.get_by_label("Email").fill(ADDRESS)
    page.get_by_role("button", name="Reset My Password").click()
    expect(page).to_have_url(f"{base}/accounts/password/reset/done/")

    reset = _next_email(folder, 2, worker)
    assert reset["To"] == ADDRESS
    page.goto(_link(reset, base, "/accounts/password/reset/key/"))
    page.get_by_label(re.compile(r"^New Password \*$")).fill(NEW_PASSWORD)
    page.get_by_label("New Password (again)").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change Password").click()
    expect(page).to_have_url(f"{base}/accounts/password/reset/key/done/")
    assert User.objects.get(username=USERNAME).check_password(NEW_PASSWORD)

    browser_log_in(page, base, USERNAME, NEW_PASSWORD)

    # and submits: the worker scores it, and the page shows the model's original accuracy
    page.goto(f"{base}/submit/")
    page.select_option("select[name=benchmark]", "cifar10")
    page.fill("#id_model_name", MODEL)
    page.set_input_files("input[name='cifar10-test']",
                         str(factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]))
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url(re.compile(re.escape(base) + r"/submissions/\d+/$"))
    expect(page.locator("#status-text")).to_have_text("scored", timeout=240_000)
    labels = np.load(data_dir / "cifar10" / "original_labels.npy")
    predicted = json.loads(factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
                           .read_text())
    expected = f"{percent(float((np.array(predicted) == labels).mean()))}%"
    expect(page.locator("#score-original tr.headline td").first).to_have_text(expected)
    assert Submission.objects.get().owner.username == USERNAME
    page.context.close()
