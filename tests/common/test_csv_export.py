"""The one CSV writer: text a spreadsheet would run as a formula is quoted, numbers (negative
ones included) read back exactly, and every plot download goes through it."""

from __future__ import annotations

import csv
import io

import pytest

from leaderboard.common.csv_export import csv_cell
from leaderboard.presentation.charts.exports import points_csv


@pytest.mark.parametrize(("value", "written"), [
    ('=HYPERLINK("http://example.invalid","x")', '\'=HYPERLINK("http://example.invalid","x")'),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("\tTAB", "'\tTAB"),
    ("\rCR", "'\rCR"),
    ("-0.0125", "-0.0125"),  # a number written as text stays a number
    ("resnet-50", "resnet-50"),
    ("", ""),
])
def test_it_quotes_cells_that_start_a_formula(value: str, written: str) -> None:
    assert csv_cell(value) == written


def test_it_writes_numbers_exactly_and_none_as_empty() -> None:
    assert csv_cell(-0.1) == "-0.1"
    assert csv_cell(0.1 + 0.2) == repr(0.1 + 0.2)
    assert csv_cell(None) == ""
    assert csv_cell(7) == "7"


def test_it_quotes_a_hostile_model_name_in_a_plot_download() -> None:
    point = {"submission_id": 3, "model_name": "=1+1", "x": 0.9, "x_low": 0.89, "x_high": 0.91,
             "y": 0.8, "y_low": 0.79, "y_high": 0.81, "rank_x": 1, "rank_y": 1, "shift": 0,
             "direction": "same"}
    text = points_csv({"kind": "label_set", "x": {"label_set": "original"},
                       "y": {"label_set": "corrected"}, "points": [point], "fit": None})
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["submission_id", "model_name", "original_accuracy"]
    assert rows[1] == ["3", "'=1+1", "0.9", "0.89", "0.91", "0.8", "0.79", "0.81", "1", "1",
                       "0", "same"]
