"""Cache formats follow the source of what they cache (leaderboard/presentation/caching.py): a
release that changes a template, the JSON shape or the code building plot data asks for keys
no older release wrote, so a shared cache never serves it an older body."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from leaderboard.presentation import caching
from leaderboard.presentation.boards import api as board_api
from leaderboard.presentation.boards import views as board_views
from leaderboard.presentation.charts import selectors as plot_selectors


@pytest.fixture
def fresh_formats() -> Iterator[None]:
    """Formats computed afresh inside the test, and again after it (none keeps a patched one)."""
    caching.source_format.cache_clear()
    yield
    caching.source_format.cache_clear()


def _changed(real: Callable[[str], bytes], name: str) -> Callable[[str], bytes]:
    return lambda n: real(n) + (b"\n<!-- changed -->" if n == name else b"")


@pytest.mark.usefixtures("fresh_formats")
@pytest.mark.parametrize("template", board_views.BOARD_HTML_TEMPLATES)
def test_it_changes_the_board_format_when_a_template_changes(
    monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    before = board_views.board_html_format()
    assert board_views.board_html_format() == before  # stable within a release
    monkeypatch.setattr(caching, "_template_source", _changed(caching._template_source, template))
    caching.source_format.cache_clear()
    assert board_views.board_html_format() != before


@pytest.mark.usefixtures("fresh_formats")
def test_it_changes_the_json_format_when_the_serializer_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def json_format() -> str:
        return caching.source_format(modules=board_api.LEADERBOARD_JSON_MODULES)

    before = json_format()
    monkeypatch.setattr(caching, "_module_source", _changed(
        caching._module_source, "leaderboard.presentation.boards.serializers"))
    caching.source_format.cache_clear()
    assert json_format() != before


@pytest.mark.usefixtures("fresh_formats")
def test_it_changes_the_plot_data_format_when_the_code_building_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def plot_format() -> str:
        return caching.source_format(modules=plot_selectors.PLOT_DATA_MODULES)

    before = plot_format()
    monkeypatch.setattr(caching, "_module_source", _changed(
        caching._module_source, plot_selectors.__name__))
    caching.source_format.cache_clear()
    assert plot_format() != before


def test_it_tells_apart_texts_that_only_move_between_names() -> None:
    assert (caching.sources_digest([("a", b"xy"), ("b", b"")])
            != caching.sources_digest([("a", b"x"), ("b", b"y")]))
    assert caching.sources_digest([("a", b"x")]) == caching.sources_digest([("a", b"x")])
