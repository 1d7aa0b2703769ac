"""Every page of the demo in a real browser (Debian's chromium, driven by Playwright) on a
phone (390x844) and a desktop (1366x900): the page itself never scrolls sideways (wide tables
scroll in their own container), a board's first row is within the first screen, and axe-core
(the copy `axe-playwright-python` ships) finds no serious or critical violation, touch targets
under 24 px included (axe's `target-size` rule, WCAG 2.2 §2.5.8).

The demo is the one scripts/serve.sh seeds (tests/presentation/conftest.py, `demo_seeded`),
read by a participant who also reviews. Screenshots are saved under /tmp/layout-shots/ (or
$LAYOUT_SHOTS_DIR) for a person to look at."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User

from leaderboard.catalog.teams.models import HostTeam
from leaderboard.catalog.teams.services import host_request_create, host_team_member_set
from leaderboard.review.models import ReviewItem
from leaderboard.submissions.models import Submission
from tests import factories
from tests.browser import NEEDS_CHROMIUM, browser_log_in, browser_page

SHOTS = Path(os.environ.get("LAYOUT_SHOTS_DIR", "/tmp/layout-shots"))
SIZES = ((390, 844), (1366, 900))
USERNAME, PASSWORD = "layout-reader", "a-long-layout-password"
# axe-core's impact levels that fail the test (docs/participants/pages.md, accessibility)
FAILING_IMPACTS = ("serious", "critical")

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.fixture(scope="module")
def pages(demo_seeded: dict[str, Any], django_db_blocker: Any) -> Iterator[dict[str, str]]:
    """Page name -> path, on the module's demo, with a reader who owns a CIFAR-10 submission
    and reviews (committed: the live server's thread reads it)."""
    with django_db_blocker.unblock():
        reader = User.objects.create_user(USERNAME, password=PASSWORD,
                                          email=f"{USERNAME}@example.org")
        EmailAddress.objects.create(user=reader, email=reader.email, primary=True,
                                    verified=True)
        factories.team_role_give(reader, "reviewer")
        first, second = Submission.objects.filter(
            benchmark__slug="cifar10", status="scored").order_by("pk")[:2]
        Submission.objects.filter(pk=first.pk).update(owner=reader)
        review = ReviewItem.objects.filter(status="open").select_related(
            "label_set__benchmark").order_by("pk").first()
        assert review is not None, "the demo opens review items"
        # the host teams' pages with every control: the reader admins the demo lab and the
        # site team (so decides requests to host), and a request waits
        for slug in ("demo-lab", "site"):
            host_team_member_set(actor=None, team=HostTeam.objects.get(slug=slug), user=reader,
                                 role="admin")
        host_request_create(user=User.objects.create_user("asking-lab"), slug="vision-lab",
                            name="A vision lab", reason="a new test set of 2,000 images")
        yield {
            "home": "/",
            "board": "/benchmarks/cifar10/",
            "hidden-board": "/benchmarks/cifar10-hidden/",
            "submission": f"/submissions/{first.pk}/",
            "submissions": "/submissions/",
            "compare": f"/submissions/{first.pk}/compare/{second.pk}/",
            "mistakes": f"/submissions/{first.pk}/mistakes/",
            "plots": "/benchmarks/cifar10/plots/",
            "about": "/benchmarks/cifar10/about/",
            "profile": "/profile/",
            "review": f"/review/{review.label_set.benchmark.slug}/next/",
            "submit": "/submit/",
            "audits": "/audits/",
            "client": "/client/",
            "label-set-history": "/benchmarks/cifar10/label-sets/corrected/history/",
            "host": "/host/",
            "host-requests": "/host/requests/",
            "team": "/teams/demo-lab/",
            # the account's pages (django-allauth's, in the site's layout)
            "account-email": "/accounts/email/",
            "account-password": "/accounts/password/change/",
            "account-2fa": "/accounts/2fa/",
        }


def _serious(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    # every rule axe runs by default, and `target-size`, which it leaves off by default
    options = {"resultTypes": ["violations"], "rules": {"target-size": {"enabled": True}}}
    violations = Axe().run(page, options=options).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}"
            for v in violations if v["impact"] in FAILING_IMPACTS]


def _look(page: Any, url: str) -> dict[str, Any]:
    page.goto(url)
    return page.evaluate("""() => {
        const CONTROLS = "button, select, summary, .button, nav a, "
            + "input:not([type=hidden]):not([type=text]):not([type=password])"
            + ":not([type=email]):not([type=url]):not([type=number]):not([type=search])";
        const row = document.querySelector("table#leaderboard tbody tr");
        return {scroll: document.documentElement.scrollWidth, width: window.innerWidth,
                height: window.innerHeight,
                firstRow: row ? row.getBoundingClientRect().top : null,
                // what sticks out past the screen's right edge, outside a scrolling box
                overflow: [...document.body.querySelectorAll("*")].filter(e =>
                    e.getBoundingClientRect().right > window.innerWidth + 1
                    && !e.parentElement.closest(".table-scroll")
                ).slice(0, 5).map(e => `${e.tagName.toLowerCase()}.${e.className}`),
                // controls (not links in a sentence, which WCAG 2.2 exempts) under 24 px
                small: [...document.querySelectorAll(CONTROLS)].filter(e => {
                    const box = e.getBoundingClientRect();
                    return box.width > 0 && (box.width < 24 || box.height < 24);
                }).map(e => {
                    const box = e.getBoundingClientRect();
                    return `${e.tagName.toLowerCase()}.${e.className || e.type || ""} `
                        + `${Math.round(box.width)}x${Math.round(box.height)}`;
                })};
    }""")


def _problems(browser: Any, base: str, pages: dict[str, str], width: int, height: int
              ) -> dict[str, Any]:
    """What is wrong on each page at this size (an empty dict when nothing)."""
    errors: list[str] = []
    page = browser_page(browser, width=width, height=height, errors=errors, timeout_ms=30_000)
    wide, low_rows, small, violations = {}, {}, {}, {}
    for name, path in {"login": "/login/", "signup": "/signup/",
                       "password-reset": "/accounts/password/reset/"}.items():
        look = _look(page, base + path)
        if look["scroll"] != width:
            wide[name] = [look["scroll"], look["overflow"]]
        if look["small"]:
            small[name] = sorted(set(look["small"]))
        violations[name] = _serious(page)
    browser_log_in(page, base, USERNAME, PASSWORD)
    for name, path in pages.items():
        look = _look(page, base + path)
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        if look["scroll"] != width:
            wide[name] = [look["scroll"], look["overflow"]]
        if name.endswith("board") and not 0 <= look["firstRow"] < height - 40:
            low_rows[name] = look["firstRow"]
        if look["small"]:
            small[name] = sorted(set(look["small"]))
        violations[name] = _serious(page)
    page.context.close()
    found = {"wider than the screen": wide, "first row below the first screen": low_rows,
             "controls under 24 px": small,
             "axe-core": {name: v for name, v in violations.items() if v},
             "script errors": errors}
    return {kind: what for kind, what in found.items() if what}


def test_it_fits_every_page_on_the_screen_with_no_serious_accessibility_violation(
    browser: Any, live_server: Any, demo: None, pages: dict[str, str],
) -> None:
    # One test for both sizes: a live server's test flushes the database when it ends
    # (pytest-django makes it transactional), and the demo is the module's.
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems = {f"{width}x{height}": _problems(browser, live_server.url, pages, width, height)
                for width, height in SIZES}
    failed = {size: found for size, found in problems.items() if found}
    assert failed == {}, json.dumps(failed, indent=1)
