"""Tests for workers.scoring.predictions: reading each upload format, including real files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT, skip_unless_ci
from tests.workers.scoring.support import IDS_4x3
from tests.workers.scoring.support import save_npy as _npy
from tests.workers.scoring.support import write_file as _write
from workers.scoring import predictions as predictions_module
from workers.scoring.predictions import (
    MAX_TOPK,
    SUPPORTED_EXTENSIONS,
    Predictions,
    parse_predictions,
)
from workers.scoring.predictions import formats as prediction_formats

DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"


# ---- happy paths ---------------------------------------------------------------------------


def test_it_exports_the_interface_constants() -> None:
    assert MAX_TOPK == 5
    assert set(SUPPORTED_EXTENSIONS) == {".npy", ".npz", ".json", ".csv"}


def test_it_reads_top1_ids_from_a_1d_npy(tmp_path: Path) -> None:
    path = _npy(tmp_path, np.array([3, 0, 9, 2], dtype=np.int64))
    result = parse_predictions(path, num_examples=4, num_classes=10)
    assert isinstance(result, Predictions)
    assert result.topk.dtype == np.int32
    np.testing.assert_array_equal(result.topk, [[3], [0], [9], [2]])
    assert (result.num_examples, result.k) == (4, 1)
    assert result.topk_scores is None and result.scores is None and result.scores_kind is None


def test_it_reads_topk_ids_from_a_2d_npy(tmp_path: Path) -> None:
    result = parse_predictions(_npy(tmp_path, IDS_4x3), num_examples=4, num_classes=10)
    np.testing.assert_array_equal(result.topk, IDS_4x3)
    assert result.k == 3


def test_it_keeps_only_the_first_five_of_longer_rankings(tmp_path: Path) -> None:
    ranking = np.array([[9, 8, 7, 6, 5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]])
    result = parse_predictions(_npy(tmp_path, ranking), num_examples=2, num_classes=10)
    np.testing.assert_array_equal(result.topk, [[9, 8, 7, 6, 5], [0, 1, 2, 3, 4]])


def test_it_accepts_unsigned_and_narrow_integer_ids(tmp_path: Path) -> None:
    for dtype in (np.uint8, np.int16, np.uint64, np.int32):
        path = _npy(tmp_path, np.array([[1, 2], [3, 4]], dtype=dtype), f"{dtype.__name__}.npy")
        result = parse_predictions(path, num_examples=2, num_classes=5)
        np.testing.assert_array_equal(result.topk, [[1, 2], [3, 4]])


def test_it_derives_topk_from_float32_logits(tmp_path: Path) -> None:
    logits = np.array(
        [[0.5, -1.0, 3.0, 2.0, 0.0, 1.0, -2.0], [-5.0, -4.0, -3.0, -2.0, -1.0, -0.5, -6.0]],
        dtype=np.float32,
    )
    result = parse_predictions(_npy(tmp_path, logits), num_examples=2, num_classes=7)
    np.testing.assert_array_equal(result.topk, [[2, 3, 5, 0, 4], [5, 4, 3, 2, 1]])
    np.testing.assert_array_equal(
        result.topk_scores, [[3.0, 2.0, 1.0, 0.5, 0.0], [-0.5, -1.0, -2.0, -3.0, -4.0]]
    )
    assert result.topk_scores is not None and result.topk_scores.dtype == np.float32
    assert result.scores_kind == "logits"
    assert result.scores is None


def test_it_derives_topk_from_float16_probabilities(tmp_path: Path) -> None:
    probs = np.array(
        [[0.1, 0.6, 0.05, 0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.125, 0.875]], dtype=np.float16
    )
    result = parse_predictions(_npy(tmp_path, probs), num_examples=2, num_classes=6)
    np.testing.assert_array_equal(result.topk, [[1, 3, 0, 2, 4], [5, 4, 0, 1, 2]])
    assert result.scores_kind == "probabilities"
    assert result.topk_scores is not None
    np.testing.assert_array_equal(result.topk_scores[1], np.array([0.875, 0.125, 0, 0, 0]))


def test_it_uses_every_class_when_there_are_fewer_than_five(tmp_path: Path) -> None:
    scores = np.array([[0.2, 0.5, 0.3], [0.4, 0.4, 0.2]])
    result = parse_predictions(_npy(tmp_path, scores), num_examples=2, num_classes=3)
    np.testing.assert_array_equal(result.topk, [[1, 2, 0], [0, 1, 2]])
    assert result.scores_kind == "probabilities"


def test_it_breaks_score_ties_by_the_lower_class_id(tmp_path: Path) -> None:
    scores = np.array(
        [
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],  # all equal: ids 0..4
            [0.0, 2.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0],  # tie at the cut among the zeros
            [5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0],  # tie at the top, then the cut
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0],
        ],
        dtype=np.float32,
    )
    result = parse_predictions(_npy(tmp_path, scores), num_examples=4, num_classes=8)
    np.testing.assert_array_equal(
        result.topk, [[0, 1, 2, 3, 4], [1, 3, 0, 2, 4], [0, 7, 1, 2, 3], [6, 7, 0, 1, 2]]
    )


def test_it_orders_ties_like_a_full_stable_sort_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # many ties (values 0..3) and tiny chunks, against a brute-force reference ordering
    monkeypatch.setattr(predictions_module, "CHUNK_VALUES", 64)
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 4, size=(300, 20)).astype(np.float32)
    result = parse_predictions(_npy(tmp_path, scores), num_examples=300, num_classes=20)
    classes = np.broadcast_to(np.arange(20), scores.shape)
    expected = np.lexsort((classes, -scores), axis=1)[:, :5]
    np.testing.assert_array_equal(result.topk, expected)
    assert result.scores_kind == "logits"


def test_it_reads_memory_mapped_npy_in_chunks_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    scores = rng.random((500, 30)).astype(np.float16)
    ids = np.argsort(rng.random((500, 30)), axis=1)[:, :7]
    score_path, ids_path = _npy(tmp_path, scores, "s.npy"), _npy(tmp_path, ids, "i.npy")

    def parse_both() -> list[Predictions]:
        return [
            parse_predictions(path, num_examples=500, num_classes=30, keep_scores=True)
            for path in (score_path, ids_path)
        ]

    in_memory = parse_both()
    monkeypatch.setattr(prediction_formats, "MMAP_MIN_BYTES", 0)
    monkeypatch.setattr(predictions_module, "CHUNK_VALUES", 1000)  # pages released as it goes
    mapped = parse_both()
    for a, b in zip(in_memory, mapped, strict=True):
        np.testing.assert_array_equal(a.topk, b.topk)
        assert a.scores_kind == b.scores_kind
    assert mapped[0].scores is not None
    np.testing.assert_array_equal(mapped[0].scores, scores.astype(np.float32))
    np.testing.assert_array_equal(mapped[1].topk, ids[:, :5])


def test_it_tells_probabilities_from_logits(tmp_path: Path) -> None:
    cases = {
        "probabilities": [[0.2, 0.8], [0.5, 0.5]],
        "logits": [[0.2, 0.7], [0.5, 0.5]],  # in [0, 1] but a row sums to 0.9
    }
    cases_negative = [[-0.5, 1.5], [0.5, 0.5]]  # rows sum to 1 but a value is negative
    for kind, rows in cases.items():
        result = parse_predictions(_npy(tmp_path, np.array(rows)), num_examples=2, num_classes=2)
        assert result.scores_kind == kind
    result = parse_predictions(_npy(tmp_path, np.array(cases_negative)), num_examples=2,
                               num_classes=2)
    assert result.scores_kind == "logits"
    within_tolerance = np.array([[0.3, 0.7005], [0.5, 0.4995]])
    result = parse_predictions(_npy(tmp_path, within_tolerance), num_examples=2, num_classes=2)
    assert result.scores_kind == "probabilities"


def test_it_keeps_scores_only_when_asked(tmp_path: Path) -> None:
    scores = np.array([[0.1, 0.9, 0.0], [0.7, 0.2, 0.1]], dtype=np.float64)
    path = _npy(tmp_path, scores)
    assert parse_predictions(path, num_examples=2, num_classes=3).scores is None
    kept = parse_predictions(path, num_examples=2, num_classes=3, keep_scores=True).scores
    assert kept is not None and kept.dtype == np.float32
    np.testing.assert_allclose(kept, scores.astype(np.float32))
    ids = parse_predictions(_npy(tmp_path, IDS_4x3, "ids.npy"), num_examples=4, num_classes=10,
                            keep_scores=True)
    assert ids.scores is None


def test_it_returns_read_only_arrays(tmp_path: Path) -> None:
    result = parse_predictions(_npy(tmp_path, IDS_4x3), num_examples=4, num_classes=10)
    with pytest.raises(ValueError):
        result.topk[0, 0] = 1


def test_it_reads_a_single_array_npz_of_any_name(tmp_path: Path) -> None:
    path = tmp_path / "preds.npz"
    np.savez(path, whatever=IDS_4x3)
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk, IDS_4x3
    )
    np.savez_compressed(path, np.array([1, 2, 3, 4]))  # stored as arr_0, compressed
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk[:, 0], [1, 2, 3, 4]
    )


def test_it_prefers_scores_over_ids_in_a_keyed_npz(tmp_path: Path) -> None:
    path = tmp_path / "preds.npz"
    logits = np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], dtype=np.float32)
    np.savez(path, ids=np.array([0, 0]), logits=logits, note=np.array([1]))
    result = parse_predictions(path, num_examples=2, num_classes=3)
    np.testing.assert_array_equal(result.topk, [[2, 1, 0], [0, 1, 2]])
    assert result.scores_kind == "logits"
    np.savez(path, topk=np.array([[2, 1], [0, 1]]), labels=np.array([5, 5]))
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=2, num_classes=3).topk, [[2, 1], [0, 1]]
    )


def test_it_reads_a_json_list_of_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.json", "[3, 0, 9, 2]")
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk, [[3], [0], [9], [2]]
    )


def test_it_reads_a_json_nested_list_of_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.json", json.dumps(IDS_4x3.tolist()))
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk, IDS_4x3
    )


def test_it_reads_json_score_rows_when_any_value_is_a_float(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.json", "[[0, 1, 0.5], [2, 0, 1]]")
    result = parse_predictions(path, num_examples=2, num_classes=3)
    np.testing.assert_array_equal(result.topk, [[1, 2, 0], [0, 2, 1]])
    assert result.scores_kind == "logits"


def test_it_reads_a_json_object_with_a_known_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.json", json.dumps({"probabilities": [[0.25, 0.75], [1, 0]],
                                                      "model": "resnet"}))
    result = parse_predictions(path, num_examples=2, num_classes=2)
    np.testing.assert_array_equal(result.topk, [[1, 0], [0, 1]])
    assert result.scores_kind == "probabilities"


def test_it_reads_a_csv_without_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.csv", "3,1,2\n0,9,5\n7,0,1\n2,3,4\n")
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk, IDS_4x3
    )


def test_it_reads_a_csv_with_a_header_and_crlf_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.csv", "top1,top2,top3\r\n3,1,2\r\n0,9,5\r\n7,0,1\r\n2,3,4\r\n")
    np.testing.assert_array_equal(
        parse_predictions(path, num_examples=4, num_classes=10).topk, IDS_4x3
    )


def test_it_reads_csv_scores_when_a_cell_has_a_decimal_point_or_exponent(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.csv", "cat,dog,bird\n0.1,0.7,0.2\n1e-1,0,9e-1\n")
    result = parse_predictions(path, num_examples=2, num_classes=3)
    np.testing.assert_array_equal(result.topk, [[1, 2, 0], [2, 0, 1]])
    assert result.scores_kind == "probabilities"


def test_it_picks_the_format_from_the_original_filename(tmp_path: Path) -> None:
    path = _write(tmp_path, "upload.tmp", "[1, 2]")
    result = parse_predictions(path, num_examples=2, num_classes=3, filename="Mine.JSON")
    np.testing.assert_array_equal(result.topk, [[1], [2]])


# ---- real data -----------------------------------------------------------------------------


@pytest.mark.slow  # the project marks real-data tests slow; these take well under a second
def test_it_parses_a_real_cifar10_model_prediction_json() -> None:
    predictions_dir = DATA_DIR / "cifar10/model_predictions/original_predictions"
    path = predictions_dir / "resnet_basic_110_predictions.json"
    if not path.exists():
        skip_unless_ci(f"shared data not present: {path}")
    result = parse_predictions(path, num_examples=10000, num_classes=10)
    expected = np.array(json.loads(path.read_text()))
    np.testing.assert_array_equal(result.topk[:, 0], expected)
    assert result.scores_kind is None


@pytest.mark.slow
def test_it_parses_real_cifar10_cross_validated_probabilities() -> None:
    path = DATA_DIR / "cifar10/cleanlab_cv_probabilities.npy"
    if not path.exists():
        skip_unless_ci(f"shared data not present: {path}")
    result = parse_predictions(path, num_examples=10000, num_classes=10)
    probabilities = np.load(path)
    assert result.scores_kind == "probabilities"
    assert result.k == 5
    np.testing.assert_array_equal(result.topk[:, 0], probabilities.argmax(axis=1))
