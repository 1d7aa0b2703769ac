"""Debian's chromium for the browser tests (driven by Playwright; no browser is downloaded).
The `browser` fixture itself is in tests/conftest.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.helpers import UNDER_CI

# EVALSERVER_TEST_CHROMIUM: another browser binary (tests/test_ci_never_skips.py names a
# missing one to see a browser test fail under CI).
CHROMIUM = Path(os.environ.get("EVALSERVER_TEST_CHROMIUM") or "/usr/bin/chromium")
# No sandbox (CI runs as root), and none of the background traffic this closed network refuses.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# Under CI=true a browser test never skips: the `browser` fixture fails instead.
NEEDS_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists() and not UNDER_CI,
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium); "
           "no browser is downloaded")


def browser_log_in(page: Page, base: str, username: str, password: str, *,
                   next_path: str = "") -> None:
    """Log in through the login page's form, as a visitor does (then on `next_path`, when
    given, else wherever the login page sends a user)."""
    page.goto(f"{base}/login/" + (f"?next={next_path}" if next_path else ""))
    page.fill("#id_login", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".nav-user .username")).to_have_text(username)


def browser_page(browser: Browser, *, width: int, height: int, errors: list[str] | None = None,
                 timeout_ms: float | None = None, **context_options: Any) -> Page:
    """A page in a new browser context of its own (closed with the browser, or by
    `page.context.close()`) at a `width` x `height` viewport; the page's uncaught script errors
    are appended to `errors` when it is given. `context_options` go to `new_context` (e.g.
    `java_script_enabled=False`)."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  **context_options)
    page = context.new_page()
    if timeout_ms is not None:
        page.set_default_timeout(timeout_ms)
    if errors is not None:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page
