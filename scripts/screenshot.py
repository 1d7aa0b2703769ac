"""Take the README's screenshot of the board (docs/images/leaderboard.png) and the pages a
participant sees first, on a phone and a desktop: docs/images/<page>-390.png (390x844) and
<page>-1366.png (1366x900) for the home page, the board, a submission, the comparison of the
board's first two rows and a review item (as a reviewer made here: `screenshot-reviewer`).

    .venv/bin/python scripts/screenshot.py [--benchmark cifar10] [--out docs/images/leaderboard.png]

Everything it starts is its own and stopped at the end: a throwaway SQLite database in a
temporary folder, one Celery worker (-Q cpu) and gunicorn on a free port of 127.0.0.1, on the
Redis at REDIS_URL (the default one of docs/operators/settings.md). It loads the benchmark
from the data directory (EVALSERVER_DATA_DIR), queues the demo submissions (`seed_demo --wait`:
the 30 published CIFAR-10 models of CIFAR-10.1, scored by the worker), waits until the worker
has stored the board's rank (UB), and photographs the board's first rows with Debian's chromium
through Playwright (no browser is downloaded). The PNG is reduced to a 256-colour palette so
that it stays small (under 300 KB) in the repository.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([str(PYTHON), "manage.py", *args], cwd=ROOT, env=env, check=True)


def _wait_for(url: str, *, until: str | None, timeout: float) -> str:
    """The body of `url` once it answers (and holds `until`, when given)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                body = answer.read().decode()
            if until is None or until in body:
                return body
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{url} did not answer{' with ' + until if until else ''} "
                             f"within {timeout:.0f} s")
        time.sleep(1)


SIZES = ((390, 844), (1366, 900))
REVIEWER, REVIEWER_PASSWORD = "screenshot-reviewer", secrets.token_urlsafe(16)


def _small(out: Path) -> None:
    """The PNG reduced to a 256-colour palette, so that it stays small in the repository."""
    from PIL import Image

    with Image.open(out) as image:
        image.convert("RGB").quantize(colors=256).save(out, optimize=True)


def _photograph(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1180}, device_scale_factor=1)
        page.goto(url, wait_until="networkidle")
        page.screenshot(path=str(out), full_page=False)
        browser.close()
    _small(out)


def _photograph_pages(base: str, benchmark: str, review_benchmark: str, folder: Path
                      ) -> list[Path]:
    """The first screen of each page at each size, signed in as the reviewer."""
    from playwright.sync_api import sync_playwright

    taken = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in SIZES:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{base}/login/")
            page.fill("#id_username", REVIEWER)
            page.fill("#id_password", REVIEWER_PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url(lambda url: "/login/" not in url)
            page.goto(f"{base}/benchmarks/{benchmark}/")
            first, second = page.locator("table#leaderboard tbody tr").evaluate_all(
                "rows => rows.slice(0, 2).map(row => row.dataset.submission)")
            review = f"/review/{review_benchmark}/next/"
            pages = {"home": "/", "board": f"/benchmarks/{benchmark}/",
                     "submission": f"/submissions/{first}/",
                     "compare": f"/submissions/{first}/compare/{second}/", "review": review}
            for name, path in pages.items():
                page.goto(f"{base}{path}", wait_until="networkidle")
                out = folder / f"{name}-{width}.png"
                page.screenshot(path=str(out), full_page=False)
                _small(out)
                taken.append(out)
            page.close()
        browser.close()
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="cifar10")
    parser.add_argument("--review-benchmark", default="imagenet",
                        help="also loaded and seeded: the review item photographed is its")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "leaderboard.png")
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="evalserver-screenshot-") as folder:
        work = Path(folder)
        port = _free_port()
        env = {**os.environ, "DEBUG": "true", "SECRET_KEY": secrets.token_urlsafe(50),
               "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
               "MEDIA_ROOT": str(work / "media"), "EVALSERVER_UPLOAD_TEMP_DIR": str(work / "up"),
               "PROMETHEUS_MULTIPROC_DIR": str(work / "metrics"),
               "ALLOWED_HOSTS": "127.0.0.1,localhost", "DJANGO_SETTINGS_MODULE":
               "evalserver.settings"}
        (work / "metrics").mkdir()
        _manage(env, "migrate", "--verbosity", "0")
        _manage(env, "load_benchmarks", "--benchmark", options.benchmark,
                "--benchmark", options.review_benchmark)
        processes = [
            subprocess.Popen([str(ROOT / ".venv" / "bin" / "celery"), "-A", "evalserver",
                              "worker", "-Q", "cpu", "--concurrency", "1", "--loglevel",
                              "WARNING"], cwd=ROOT, env=env),
            subprocess.Popen([str(ROOT / ".venv" / "bin" / "gunicorn"), "-c",
                              "evalserver/gunicorn_conf.py", "evalserver.wsgi", "--bind",
                              f"127.0.0.1:{port}"], cwd=ROOT, env=env),
        ]
        try:
            _manage(env, "seed_demo", "--wait", "--timeout", str(options.timeout))
            board = f"http://127.0.0.1:{port}/benchmarks/{options.benchmark}/"
            # rank (UB) reads "computing" until the worker has stored it
            deadline = time.monotonic() + options.timeout
            while "computing" in _wait_for(board, until=None, timeout=options.timeout):
                if time.monotonic() > deadline:
                    raise SystemExit("the worker did not store the board's rank (UB)")
                time.sleep(2)
            options.out.parent.mkdir(parents=True, exist_ok=True)
            _photograph(board, options.out)
            # a reviewer of the site team (docs/hosts/teams.md), its address verified
            _manage(env, "shell", "-c", (
                "from allauth.account.models import EmailAddress; "
                "from django.contrib.auth.models import User; "
                f"user = User.objects.create_user({REVIEWER!r}, password={REVIEWER_PASSWORD!r}, "
                f"email='{REVIEWER}@example.org'); "
                "EmailAddress.objects.create(user=user, email=user.email, primary=True, "
                "verified=True)"))
            _manage(env, "role", "grant", "--username", REVIEWER, "--role", "reviewer")
            taken = _photograph_pages(f"http://127.0.0.1:{port}", options.benchmark,
                                      options.review_benchmark, options.out.parent)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=60)
    for out in (options.out, *taken):
        print(f"{out}: {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
