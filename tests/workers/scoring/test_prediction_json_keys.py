"""A .json predictions file with one key twice: Python keeps the last, other readers the
first, so the file is refused by name rather than read one way or the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.scoring.predictions import PredictionError, parse_predictions


@pytest.mark.parametrize("text", [
    '{"predictions": [1, 2], "predictions": [2, 1]}',
    '{"ids": [[1, 0], [0, 1]], "meta": {"a": 1, "a": 2}}',
])
def test_it_refuses_a_json_object_with_a_key_twice(tmp_path: Path, text: str) -> None:
    path = tmp_path / "preds.json"
    path.write_text(text)
    with pytest.raises(PredictionError) as caught:
        parse_predictions(path, num_examples=2, num_classes=3)
    assert caught.value.code == "duplicate_key"
    key = "predictions" if text.count("predictions") == 2 else "a"
    assert caught.value.message == f"the .json file has the key {key!r} twice in one object"


def test_it_still_reads_an_object_whose_keys_differ(tmp_path: Path) -> None:
    path = tmp_path / "preds.json"
    path.write_text('{"predictions": [2, 0]}')
    assert parse_predictions(path, num_examples=2, num_classes=3).topk[:, 0].tolist() == [2, 0]
