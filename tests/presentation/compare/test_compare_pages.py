"""The comparison page, the pick forms that lead to it (the board's rows, the submission
page; the board's compare bar in a browser: tests/presentation/boards/
test_board_compare_bar.py), and the client's `compare` command; figures against the real
CIFAR-10 files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from pytest_django.live_server_helper import LiveServer
from scipy.stats import binomtest

from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_visibility_set
from leaderboard.templatetags.leaderboard_extras import percent
from tests.browser import NEEDS_CHROMIUM
from tests.clients.test_cli import run_client
from tests.presentation.compare.test_compare_api import direct_hits
from tests.scored_models import MODELS


def _cells(html: str, slug: str) -> list[str]:
    row = re.search(rf'<tr data-label-set="{re.escape(slug)}">(.*?)</tr>', html, re.S)
    assert row is not None, slug
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row.group(1), re.S)]


@pytest.mark.django_db
def test_it_renders_the_figures_and_the_first_page_of_examples(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    a, b = MODELS[0], MODELS[1]
    response = client.get(f"/submissions/{scored_models[a].pk}/compare/"
                          f"{scored_models[b].pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    ha, hb = direct_hits(data_dir, a, "original"), direct_hits(data_dir, b, "original")
    only_a, only_b = int((ha & ~hb).sum()), int((hb & ~ha).sum())
    p = binomtest(only_a, only_a + only_b, 0.5).pvalue
    cells = _cells(html, "original")
    assert cells[1].startswith(percent(float(ha.mean())))
    assert cells[2].startswith(percent(float(hb.mean())))
    assert cells[3] == f"{(ha.mean() - hb.mean()) * 100:+.2f} pt"
    assert cells[4] == f"{only_a:,} / {only_b:,}"
    assert cells[5] == ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")
    listed = [int(i) for i in re.findall(r'<tr data-index="(\d+)"', html)]
    assert listed == np.flatnonzero(ha != hb)[:50].tolist()
    second = client.get(f"/submissions/{scored_models[a].pk}/compare/"
                        f"{scored_models[b].pk}/?set=original&page=2").content.decode()
    assert [int(i) for i in re.findall(r'<tr data-index="(\d+)"', second)] == \
        np.flatnonzero(ha != hb)[50:100].tolist()
    for bad in ("?page=0", "?page=x", "?page=99", "?set=nope"):
        assert client.get(f"/submissions/{scored_models[a].pk}/compare/"
                          f"{scored_models[b].pk}/{bad}").status_code == 404


@pytest.mark.django_db
def test_it_goes_from_two_picked_ids_to_the_page_and_hides_a_private_one(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    a, b = scored_models[MODELS[0]], scored_models[MODELS[1]]
    picked = client.get("/submissions/compare/", {"s": [str(a.pk), f"#{b.pk}"]})
    assert picked.status_code == 302
    assert picked["Location"] == f"/submissions/{a.pk}/compare/{b.pk}/"
    for wrong in ([str(a.pk)], [str(a.pk), "x"], [str(a.pk), str(b.pk), "3"]):
        assert client.get("/submissions/compare/", {"s": wrong}).status_code == 400
    page = client.get(f"/submissions/{a.pk}/").content.decode()
    assert 'action="/submissions/compare/"' in page
    assert f'name="s" value="{a.pk}"' in page
    board = client.get("/benchmarks/cifar10/").content.decode()
    assert 'id="compare-pick"' in board
    assert sorted(int(i) for i in re.findall(r'name="s" value="(\d+)" form="compare-pick"',
                                              board)) == sorted(s.pk for s in
                                                                scored_models.values())
    submission_visibility_set(submission=b, public=False)
    assert client.get(f"/submissions/{a.pk}/compare/{b.pk}/").status_code == 404
    client.force_login(b.owner)
    assert client.get(f"/submissions/{a.pk}/compare/{b.pk}/").status_code == 200
    queued = Submission.objects.create(owner=b.owner, benchmark=b.benchmark, model_name="q")
    refused = client.get(f"/submissions/{a.pk}/compare/{queued.pk}/")
    assert refused.status_code == 400
    assert "not scored" in refused.content.decode()


def _ticked(html: str) -> list[int]:
    return [int(i) for i in re.findall(
        r'name="s" value="(\d+)" form="compare-pick" data-model="[^"]*" checked', html)]


def _pick_error(html: str) -> str | None:
    found = re.search(r'<div class="alert alert-error pick-error" role="alert" id="pick-error">'
                      r"<p>(.*?)</p>", html)
    return None if found is None else found.group(1)


@pytest.mark.django_db
def test_it_sends_other_than_two_picked_rows_back_to_the_board_still_ticked(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    a, b, c = (scored_models[m] for m in MODELS)
    board = client.get("/benchmarks/cifar10/?sort=cifar10h").content.decode()
    # the form names its board page; the cached board ticks nothing and says nothing
    assert re.search(r'<input type="hidden" name="board" value="cifar10">'
                     r'<input type="hidden" name="sort" value="cifar10h">', board)
    assert (_ticked(board), _pick_error(board)) == ([], None)
    order = [int(i) for i in re.findall(r'<tr data-submission="(\d+)"', board)]
    names = {s.pk: f"{s.model_name} (#{s.pk})" for s in (a, b, c)}
    first, second, third = (names[pk] for pk in order)

    three = client.get("/submissions/compare/", {
        "s": [str(a.pk), str(b.pk), str(c.pk)], "board": "cifar10", "sort": "cifar10h",
        "page": "1"})
    assert three.status_code == 302
    assert three["Location"] == (f"/benchmarks/cifar10/?sort=cifar10h&page=1&picked={a.pk}"
                                 f"&picked={b.pk}&picked={c.pk}")
    back = client.get(three["Location"])
    assert back.status_code == 200
    html = back.content.decode()
    assert _ticked(html) == order
    assert _pick_error(html) == (f"Pick exactly two rows to compare: 3 are ticked ({first}, "
                                 f"{second} and {third}). Untick one, then Compare.")
    one = client.get("/submissions/compare/", {"s": str(b.pk), "board": "cifar10"})
    assert one["Location"] == f"/benchmarks/cifar10/?picked={b.pk}"
    assert _pick_error(client.get(one["Location"]).content.decode()) == (
        f"Pick exactly two rows to compare: only {names[b.pk]} is ticked. Tick one more, "
        "then Compare.")
    none = client.get("/submissions/compare/", {"board": "cifar10", "version": "",
                                                "page": "x"})
    assert none["Location"] == "/benchmarks/cifar10/?picked="
    assert _pick_error(client.get(none["Location"]).content.decode()) == (
        "Pick exactly two rows to compare: none is ticked. Tick the Pick box of two rows, "
        "then Compare.")
    # two ticked from a board: their comparison, whatever else the form names
    two = client.get("/submissions/compare/", {"s": [str(c.pk), str(a.pk)], "board": "cifar10",
                                               "sort": "cifar10h"})
    assert two["Location"] == f"/submissions/{c.pk}/compare/{a.pk}/"
    # the cached board is untouched by a page that ticked rows
    assert _ticked(client.get("/benchmarks/cifar10/?sort=cifar10h").content.decode()) == []
    # no board, or one that is not a slug: the page that says why; an id int() refuses too
    for query in ({"s": str(a.pk), "board": "../admin"}, {"s": [str(a.pk), "9" * 5000]}):
        refused = client.get("/submissions/compare/", query)
        assert refused.status_code == 400
        assert "Pick exactly two submissions" in refused.content.decode()


@pytest.mark.django_db(transaction=True)
def test_it_prints_the_table_and_the_json_with_the_client(
    scored_models: dict[str, Submission], data_dir: Path, live_server: LiveServer
) -> None:
    a, b = MODELS[0], MODELS[2]
    first, second = scored_models[a].pk, scored_models[b].pk
    done = run_client("compare", str(first), str(second), url=live_server.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split()[:3] == ["label", "set", f"#{first}"]
    ha, hb = direct_hits(data_dir, a, "original"), direct_hits(data_dir, b, "original")
    only_a, only_b = int((ha & ~hb).sum()), int((hb & ~ha).sum())
    p = binomtest(only_a, only_a + only_b, 0.5).pvalue
    row = next(line for line in lines if line.startswith("original ")).split()
    assert row[1] == f"{100 * ha.mean():.2f}%" and row[3] == f"{100 * hb.mean():.2f}%"
    assert row[5:] == [f"{100 * (ha.mean() - hb.mean()):+.2f}", "pt", str(only_a), "/",
                       str(only_b), "<0.001" if p < 0.001 else f"{p:.3f}"]
    as_json = run_client("compare", str(first), str(second), "--json", "--label-set",
                         "cifar10.1-v6", "--page", "2", url=live_server.url)
    assert as_json.returncode == 0, as_json.stderr
    body: Any = json.loads(as_json.stdout)
    assert (body["examples"]["label_set"], body["examples"]["page"]) == ("cifar10.1-v6", 2)
    refused = run_client("compare", str(first), str(first), url=live_server.url)
    assert refused.returncode == 5
    assert refused.stderr.startswith("error: same_submission")


@NEEDS_CHROMIUM
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_opens_the_comparison_of_two_rows_picked_on_the_board(
    browser: Any, live_server: LiveServer, scored_models: dict[str, Submission]
) -> None:
    from playwright.sync_api import expect

    a, b = scored_models[MODELS[0]], scored_models[MODELS[2]]
    page = browser.new_page()
    page.goto(f"{live_server.url}/benchmarks/cifar10/")
    page.check(f'tr[data-submission="{a.pk}"] input[name="s"]')
    page.check(f'tr[data-submission="{b.pk}"] input[name="s"]')
    page.click("#compare-pick button")
    expect(page.locator("#compare-title")).to_contain_text(MODELS[0])
    # the board lists rows best first: the picked ids arrive in board order
    assert re.search(rf"/submissions/({a.pk}|{b.pk})/compare/({a.pk}|{b.pk})/$", page.url)
    expect(page.locator('#compare tr[data-label-set="original"] .p-value')).to_contain_text("p")
    assert page.locator("#compare-examples tr[data-index]").count() == 50
