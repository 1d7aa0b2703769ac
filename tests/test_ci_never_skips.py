"""Under CI=true nothing skips for want of a real service: a browser test without its browser
fails (elsewhere it skips). Run in a child pytest, with a browser path that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT

BROWSER_TEST = '''
from tests.browser import NEEDS_CHROMIUM

@NEEDS_CHROMIUM
def test_it_opens_the_browser(browser):
    pass
'''


def _run_browser_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "test_needs_a_browser.py"
    test_file.write_text(BROWSER_TEST)
    (tmp_path / "conftest.py").write_text("from tests.conftest import browser  # noqa: F401\n")
    environment = {k: v for k, v in os.environ.items() if k != "CI"}
    environment.update(env, EVALSERVER_TEST_CHROMIUM=str(tmp_path / "no-chromium-here"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "--rootdir", str(PROJECT_ROOT), "-c", str(PROJECT_ROOT / "pyproject.toml"),
         str(test_file)],
        cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_it_fails_a_browser_test_without_its_browser_under_ci(tmp_path: Path) -> None:
    done = _run_browser_test(tmp_path, CI="true")

    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout
    assert (f"the browser tests need Debian's chromium at {tmp_path / 'no-chromium-here'} "
            "(apt-get install chromium); CI=true: a browser test never skips") in done.stdout


@pytest.mark.slow
def test_it_skips_a_browser_test_without_its_browser_elsewhere(tmp_path: Path) -> None:
    done = _run_browser_test(tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "needs Debian's chromium at /usr/bin/chromium" in done.stdout
