"""The board's compare bar (leaderboard/_board.html, static/leaderboard/board.js) in Debian's
chromium: on a board of real CIFAR-10 models taller than the screen, the bar stays in view
while rows are picked, a third pick replaces the oldest, the board is driven from the keyboard
alone from a sort to the comparison, and without JavaScript the form still gets there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import scored_in_process
from tests.browser import NEEDS_CHROMIUM, browser_page
from tests.scored_models import MODELS

pytestmark = [NEEDS_CHROMIUM, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Eleven more published models, on the original test set only: with MODELS' three, a board
# taller than either screen below, so the bar's own place (after the table) is out of view.
FILLERS = ("alexnet_tf_ben", "cudaconvnet", "densenet_BC_100_12", "nas", "resnet_basic_32",
           "resnet_basic_44", "resnet_basic_56", "resnext_29_4x64d", "shake_drop",
           "vgg_15_BN_64", "wrn_28_10")
SCREENS = ({"width": 390, "height": 844}, {"width": 1366, "height": 900})


@pytest.fixture
def board(scored_models: dict[str, Submission], loaded: Settings, data_dir: Path
          ) -> dict[str, Submission]:
    """Fourteen public scored models by model name: MODELS' three and the fillers."""
    fillers = {m: scored_in_process(data_dir, m, factories.user_create(f"f-{m}"),
                                    example_sets=("cifar10-test",)) for m in FILLERS}
    return {**scored_models, **fillers}


def _box(s: Submission) -> str:
    return f'tr[data-submission="{s.pk}"] input[name="s"]'


def _name(s: Submission) -> str:
    return f"{s.model_name} (#{s.pk})"


def _rect(page: Any, selector: str) -> dict[str, float]:
    box: dict[str, float] = page.locator(selector).evaluate(
        "el => { const r = el.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }")
    return box


def _board_order(page: Any, *picked: Submission) -> list[Submission]:
    """`picked` in the order of their rows on the page (the order the form sends them)."""
    rows = [int(i) for i in page.locator("#leaderboard tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.submission)")]
    return sorted(picked, key=lambda s: rows.index(s.pk))


def _tab_to(page: Any, selector: str, *, limit: int = 200) -> None:
    """Press Tab until the focus is on `selector` (as a keyboard user moves through the page)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{limit} presses of Tab never reached {selector}")


def _focus_ring(page: Any) -> tuple[str, str]:
    ring: tuple[str, str] = tuple(page.evaluate(  # type: ignore[assignment]
        "() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, s.outlineWidth]; }"))
    return ring


def test_it_keeps_the_bar_in_view_and_clear_of_the_last_row_on_both_screens(
    browser: Any, live_server: LiveServer, board: dict[str, Submission]
) -> None:
    first_pick = board[MODELS[1]]
    errors: list[str] = []
    for screen in SCREENS:
        page = browser_page(browser, **screen, errors=errors)
        page.goto(f"{live_server.url}/benchmarks/cifar10/")
        assert page.locator("#leaderboard tbody tr").count() == len(MODELS) + len(FILLERS)
        assert page.locator("#compare-pick").is_hidden()  # nothing picked yet
        page.locator(_box(first_pick)).check()
        page.locator("#leaderboard tbody tr").first.evaluate("r => r.scrollIntoView()")
        bar = _rect(page, "#compare-pick")
        table = _rect(page, "#leaderboard")
        assert table["bottom"] > screen["height"], (screen, table)  # its own place is below
        assert 0 <= bar["top"] and bar["bottom"] <= screen["height"], (screen, bar)
        assert 0 <= bar["left"] and bar["right"] <= screen["width"], (screen, bar)
        assert page.locator("#compare-pick-status").inner_text() == \
            f"Picked: {_name(first_pick)}. Tick one more row to compare."
        assert page.locator("#compare-pick-submit").is_hidden()
        # at the end of the page the bar stands below the table: the last row is clear of it
        page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
        last = "#leaderboard tbody tr:last-child"
        assert _rect(page, last)["bottom"] <= _rect(page, "#compare-pick")["top"], screen
        # a keyboard user tabbing to the last row's box while the bar covers that row: the
        # page scrolls the box above the bar (scroll-padding), not just into the viewport
        page.locator(last).evaluate(
            "r => { window.scrollTo(0, r.getBoundingClientRect().bottom + window.scrollY"
            " - window.innerHeight); r.querySelector('.col-model a').focus({preventScroll:"
            " true}); }")
        assert _rect(page, last)["bottom"] > _rect(page, "#compare-pick")["top"], screen
        _tab_to(page, f"{last} input[name='s']", limit=1)
        row, bar = _rect(page, last), _rect(page, "#compare-pick")
        assert bar["bottom"] <= screen["height"], (screen, bar)
        assert row["bottom"] <= bar["top"], (screen, row, bar)
        assert errors == []
        page.context.close()


def test_it_unticks_the_oldest_when_a_third_is_ticked(
    browser: Any, live_server: LiveServer, board: dict[str, Submission]
) -> None:
    a, b, c = board[FILLERS[4]], board[MODELS[0]], board[FILLERS[0]]
    page = browser_page(browser, width=1366, height=900)
    page.goto(f"{live_server.url}/benchmarks/cifar10/")
    page.locator(_box(a)).check()
    page.locator(_box(b)).check()
    assert page.locator("#compare-pick-status").inner_text() == \
        f"Picked: {_name(a)} and {_name(b)}."
    assert page.locator("#compare-pick-submit").is_visible()
    page.locator(_box(c)).click()
    assert not page.locator(_box(a)).is_checked()
    assert page.locator(_box(b)).is_checked() and page.locator(_box(c)).is_checked()
    assert page.locator("#leaderboard input[name='s']:checked").count() == 2
    assert page.locator("#compare-pick-live").inner_text() == \
        f"Unticked {_name(a)}: two rows at most. Picked: {_name(b)} and {_name(c)}."
    assert page.locator("#compare-pick-status").inner_text() == \
        f"Picked: {_name(b)} and {_name(c)}."
    first, second = _board_order(page, b, c)
    page.locator("#compare-pick-submit").click()
    page.wait_for_url(f"**/submissions/{first.pk}/compare/{second.pk}/")
    assert page.locator("#compare-title").inner_text() == \
        f"{first.model_name} vs {second.model_name}"


def test_it_sorts_picks_and_compares_from_the_keyboard_alone(
    browser: Any, live_server: LiveServer, board: dict[str, Submission]
) -> None:
    a, b = board[MODELS[2]], board[FILLERS[6]]
    page = browser_page(browser, width=1366, height=900)
    page.goto(f"{live_server.url}/benchmarks/cifar10/")
    # every pick box is named after its row's model
    for s in (a, b):
        assert page.get_by_role("checkbox", name=f"Pick {_name(s)} to compare").count() == 1
    _tab_to(page, 'th[data-label-set="corrected"] a.sort-link')
    assert _focus_ring(page) == ("solid", "3px")
    page.keyboard.press("Enter")
    page.wait_for_url("**/benchmarks/cifar10/?sort=corrected")
    assert page.locator('th[aria-sort="descending"]').get_attribute("data-label-set") == \
        "corrected"
    first, second = _board_order(page, a, b)
    for s in (first, second):
        _tab_to(page, _box(s))
        assert _focus_ring(page) == ("solid", "3px")
        page.keyboard.press("Space")
        assert page.locator(_box(s)).is_checked()
    assert page.locator("#compare-pick-status").inner_text() == \
        f"Picked: {_name(first)} and {_name(second)}."
    _tab_to(page, "#compare-pick-submit")
    assert _focus_ring(page) == ("solid", "3px")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/submissions/{first.pk}/compare/{second.pk}/")
    assert page.locator("#compare-title").inner_text() == \
        f"{first.model_name} vs {second.model_name}"


def test_it_keeps_the_ticks_without_javascript(
    browser: Any, live_server: LiveServer, scored_models: dict[str, Submission]
) -> None:
    a, b, c = (scored_models[m] for m in MODELS)
    page = browser_page(browser, width=390, height=844, java_script_enabled=False)
    page.goto(f"{live_server.url}/benchmarks/cifar10/?sort=cifar10h")
    assert page.locator("#compare-pick").is_hidden()
    for s in (a, b, c):
        page.locator(_box(s)).check()
    assert page.locator("#compare-pick").is_visible()  # the stylesheet shows it
    page.locator("#compare-pick-submit").click()
    page.wait_for_url("**/benchmarks/cifar10/?sort=cifar10h&picked=*")
    listed = _board_order(page, a, b, c)
    assert page.locator("#pick-error").inner_text() == (
        "Pick exactly two rows to compare: 3 are ticked ("
        f"{_name(listed[0])}, {_name(listed[1])} and {_name(listed[2])}). "
        "Untick one, then Compare.")
    assert [page.locator(_box(s)).is_checked() for s in (a, b, c)] == [True] * 3
    page.locator(_box(listed[1])).uncheck()
    page.locator("#compare-pick-submit").click()
    page.wait_for_url(f"**/submissions/{listed[0].pk}/compare/{listed[2].pk}/")
