"""Tests for workers.scoring.predictions: parsing and validating uploaded prediction files."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from workers.scoring import prediction_formats
from workers.scoring import predictions as predictions_module
from workers.scoring.predictions import (
    MAX_TOPK,
    SUPPORTED_EXTENSIONS,
    PredictionError,
    Predictions,
    parse_predictions,
)

DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"


class _Canary:
    """Unpickling this creates `target`: proof that a loader ran code from the file."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.target), "w"))


def _write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def _npy(tmp_path: Path, array: np.ndarray, name: str = "preds.npy") -> Path:
    path = tmp_path / name
    np.save(path, array)
    return path


def _error(path: Path, **kwargs: object) -> PredictionError:
    options = {"num_examples": 4, "num_classes": 10} | kwargs
    with pytest.raises(PredictionError) as info:
        parse_predictions(path, **options)  # type: ignore[arg-type]
    return info.value


IDS_4x3 = np.array([[3, 1, 2], [0, 9, 5], [7, 0, 1], [2, 3, 4]])


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


# ---- errors --------------------------------------------------------------------------------


def test_it_refuses_an_unsupported_extension(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.txt", "1\n2\n"))
    assert error.code == "unsupported_format"
    assert "'.txt'" in error.message and ".npy" in error.message and ".csv" in error.message


def test_it_refuses_a_file_over_the_size_limit_before_reading_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "preds.json", "[1, 2, 3, 4]")
    error = _error(path, max_bytes=5)
    assert error.code == "file_too_large"
    assert "12 bytes" in error.message and "5 bytes" in error.message


def test_it_refuses_empty_files(tmp_path: Path) -> None:
    cases: list[tuple[str, bytes | str]] = [
        ("a.npy", b""), ("b.json", "[]"), ("c.csv", "id\n"), ("d.json", " \n"), ("e.csv", "\n\n")
    ]
    for name, content in cases:
        error = _error(_write(tmp_path, name, content))
        assert error.code == "empty_file", name
    error = _error(_npy(tmp_path, np.zeros((0, 3), dtype=np.int64)))
    assert error.code == "empty_file" and "no rows" in error.message


def test_it_refuses_a_truncated_npy(tmp_path: Path) -> None:
    path = _npy(tmp_path, np.arange(400, dtype=np.int64).reshape(100, 4) % 10)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    error = _error(path, num_examples=100)
    assert error.code == "corrupt_file"
    assert ".npy" in error.message and "truncated" in error.message


def test_it_refuses_a_truncated_npy_header(tmp_path: Path) -> None:
    path = _npy(tmp_path, IDS_4x3)
    path.write_bytes(path.read_bytes()[:30])
    error = _error(path)
    assert error.code == "corrupt_file" and ".npy" in error.message


def test_it_refuses_files_that_are_not_what_their_extension_says(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.npy", b"just some text, no magic"))
    assert error.code == "corrupt_file" and ".npy" in error.message
    error = _error(_write(tmp_path, "preds.npz", b"not a zip archive at all"))
    assert error.code == "corrupt_file" and ".npz" in error.message


def test_it_refuses_a_truncated_npz(tmp_path: Path) -> None:
    path = tmp_path / "preds.npz"
    np.savez(path, ids=np.arange(4000) % 10)
    path.write_bytes(path.read_bytes()[:2000])
    error = _error(path, num_examples=4000)
    assert error.code == "corrupt_file" and ".npz" in error.message


def test_it_refuses_truncated_json(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.json", "[[1, 2], [3, 4], [5"))
    assert error.code == "corrupt_file"
    assert "JSON" in error.message and "line 1 column" in error.message


def test_it_refuses_a_wrong_row_count(tmp_path: Path) -> None:
    error = _error(_npy(tmp_path, np.array([1, 2, 3])))
    assert error.code == "wrong_row_count"
    assert "3 rows" in error.message and "expected 4" in error.message


def test_it_refuses_a_3d_array(tmp_path: Path) -> None:
    error = _error(_npy(tmp_path, np.zeros((4, 2, 2), dtype=np.int64)))
    assert error.code == "wrong_shape" and "(4, 2, 2)" in error.message


def test_it_refuses_a_score_matrix_with_the_wrong_number_of_columns(tmp_path: Path) -> None:
    error = _error(_npy(tmp_path, np.zeros((4, 9), dtype=np.float32)))
    assert error.code == "wrong_shape"
    assert "9 columns" in error.message and "num_classes = 10" in error.message


def test_it_refuses_more_ids_per_row_than_classes(tmp_path: Path) -> None:
    error = _error(_npy(tmp_path, np.array([[0, 1, 2], [2, 1, 0]])), num_examples=2,
                   num_classes=2)
    assert error.code == "wrong_shape" and "3 class ids per row" in error.message


def test_it_refuses_a_class_id_out_of_range(tmp_path: Path) -> None:
    ids = np.zeros(20, dtype=np.int64)
    ids[17] = 1003
    error = _error(_npy(tmp_path, ids), num_examples=20, num_classes=1000)
    assert error.code == "class_out_of_range"
    assert error.message == "row 17 (0-based) has class id 1003; ids must be in 0..999"


def test_it_refuses_a_negative_class_id_in_any_of_the_k_columns(tmp_path: Path) -> None:
    ids = np.array([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, -1]])  # beyond the kept top-5
    error = _error(_npy(tmp_path, ids), num_examples=2)
    assert error.code == "class_out_of_range"
    assert "row 1 (0-based)" in error.message and "-1" in error.message
    assert "0..9" in error.message


def test_it_refuses_a_duplicate_class_within_a_row(tmp_path: Path) -> None:
    ids = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [1, 9, 1]])
    error = _error(_npy(tmp_path, ids))
    assert error.code == "duplicate_class"
    assert "row 3 (0-based)" in error.message and "class id 1" in error.message


def test_it_refuses_non_finite_scores(tmp_path: Path) -> None:
    scores = np.full((4, 10), 0.1, dtype=np.float32)
    scores[2, 6] = np.nan
    error = _error(_npy(tmp_path, scores))
    assert error.code == "not_finite"
    assert "row 2 (0-based)" in error.message and "column 6" in error.message
    scores[2, 6] = -np.inf
    assert "row 2 (0-based)" in _error(_npy(tmp_path, scores)).message


def test_it_refuses_float64_scores_beyond_float32(tmp_path: Path) -> None:
    scores = np.zeros((4, 10))
    scores[1, 0] = 1e300
    error = _error(_npy(tmp_path, scores))
    assert error.code == "not_finite" and "row 1 (0-based)" in error.message


def test_it_refuses_json_nan_and_infinity_literals(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.json", "[[0.5, 0.5], [NaN, 1.0]]"), num_examples=2,
                   num_classes=2)
    assert error.code == "not_finite" and "row 1 (0-based)" in error.message
    error = _error(_write(tmp_path, "preds.json", "[1, Infinity]"), num_examples=2)
    assert error.code == "not_finite" and "row 1 (0-based)" in error.message


def test_it_refuses_arrays_of_the_wrong_dtype(tmp_path: Path) -> None:
    cases = {
        "bool": np.array([True, False, True, False]),
        "complex128": np.zeros((4, 10), dtype=np.complex128),
        "<U1": np.array(["a", "b", "c", "d"]),
        "[('a', '<i4')": np.zeros(4, dtype=[("a", "<i4"), ("b", "<f4")]),
    }
    for dtype_name, array in cases.items():
        error = _error(_npy(tmp_path, array))
        assert error.code == "wrong_dtype", dtype_name
        assert dtype_name in error.message, error.message


def test_it_refuses_1d_floats_as_top1_ids(tmp_path: Path) -> None:
    error = _error(_npy(tmp_path, np.array([1.0, 2.0, 3.0, 4.0])))
    assert error.code == "wrong_dtype" and "float64" in error.message


def test_it_refuses_json_booleans_as_class_ids(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.json", "[1, true, 0, 1]"))
    assert error.code == "wrong_dtype" and "row 1 (0-based)" in error.message
    error = _error(_write(tmp_path, "preds.json", "[[1, 2], [3, 4], [false, 1], [0, 1]]"))
    assert error.code == "wrong_dtype" and "row 2 (0-based)" in error.message


def test_it_refuses_ragged_json_rows(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.json", "[[1, 2], [3, 4], [5], [0, 1]]"))
    assert error.code == "wrong_shape" and "row 2 (0-based)" in error.message


def test_it_refuses_a_json_object_without_a_known_key(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.json", '{"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}'))
    assert error.code == "unknown_keys" and "'a', 'b'" in error.message


def test_it_refuses_an_npz_with_several_unknown_arrays(tmp_path: Path) -> None:
    path = tmp_path / "preds.npz"
    np.savez(path, first=IDS_4x3, second=IDS_4x3)
    error = _error(path)
    assert error.code == "unknown_keys" and "'first', 'second'" in error.message


def test_it_refuses_ragged_csv_rows(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "a,b\n1,2\n3,4\n5\n0,1\n"))
    assert error.code == "wrong_shape" and "line 4" in error.message


def test_it_refuses_empty_csv_cells(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "1,2\n3,4\n5, \n0,1\n"))
    assert error.code == "empty_cell"
    assert "line 3" in error.message and "column 2" in error.message


def test_it_refuses_non_numeric_csv_cells_after_the_header(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "x,y\n1,2\n3,4\n5,six\n0,1\n"))
    assert error.code == "not_a_number"
    assert "line 4" in error.message and "column 2" in error.message and "'six'" in error.message


def test_it_names_the_csv_line_for_value_errors(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "id\n1\n2\n12\n3\n"))
    assert error.code == "class_out_of_range"
    assert "row 2 (0-based; line 4 of the file)" in error.message
    error = _error(_write(tmp_path, "preds.csv", "0.5,0.5\ninf,0.1\n"), num_examples=2,
                   num_classes=2)
    assert error.code == "not_finite" and "line 2" in error.message


def test_it_refuses_an_object_array_without_unpickling_it(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    path = tmp_path / "preds.npy"
    np.save(path, np.array([_Canary(canary)] * 4, dtype=object), allow_pickle=True)
    error = _error(path)
    assert error.code == "object_array"
    path = tmp_path / "preds.npz"
    np.savez(path, ids=np.array([_Canary(canary)] * 4, dtype=object))
    assert _error(path).code == "object_array"
    assert not canary.exists()


def test_it_uses_a_pickle_payload_that_really_runs_code(tmp_path: Path) -> None:
    # guards the next test: this payload does create its file when unpickled
    target = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Canary(target))).close()
    assert target.exists()


def test_it_refuses_pickles_renamed_to_any_format_and_never_runs_them(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    payload = pickle.dumps(_Canary(canary))
    for name in ("preds.npy", "preds.npz", "preds.json", "preds.csv"):
        error = _error(_write(tmp_path, name, payload))
        assert error.code == "pickle_refused", name
        assert "pickle" in error.message
    assert not canary.exists()


def test_it_refuses_a_zip_bomb_npz_by_its_declared_size(tmp_path: Path) -> None:
    # a real bomb: 8 MB of zeros compresses to a few KB, far under the on-disk limit
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, scores=np.zeros((1000, 1000), dtype=np.float64))
    assert path.stat().st_size < 100_000
    error = _error(path, num_examples=1000, num_classes=1000, max_bytes=1_000_000)
    assert error.code == "file_too_large" and ".npz" in error.message


def test_it_refuses_an_npz_member_declaring_a_huge_uncompressed_size(tmp_path: Path) -> None:
    path = tmp_path / "forged.npz"
    np.savez(path, ids=IDS_4x3)
    blob = bytearray(path.read_bytes())
    central = blob.index(b"PK\x01\x02")  # central directory entry: uncompressed size at +24
    struct.pack_into("<I", blob, central + 24, 0xF0000000)
    struct.pack_into("<I", blob, 22, 0xF0000000)  # and the local header's, at +22
    path.write_bytes(bytes(blob))
    error = _error(path)
    assert error.code == "file_too_large" and str(0xF0000000) in error.message


def test_it_error_survives_pickling_for_the_task_queue() -> None:
    error = pickle.loads(pickle.dumps(PredictionError("wrong_row_count", "expected 4, got 3")))
    assert (error.code, error.message, str(error)) == (
        "wrong_row_count", "expected 4, got 3", "expected 4, got 3",
    )


# ---- real data -----------------------------------------------------------------------------


@pytest.mark.slow  # the project marks real-data tests slow; these take well under a second
def test_it_parses_a_real_cifar10_model_prediction_json() -> None:
    predictions_dir = DATA_DIR / "cifar10/model_predictions/original_predictions"
    path = predictions_dir / "resnet_basic_110_predictions.json"
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    result = parse_predictions(path, num_examples=10000, num_classes=10)
    expected = np.array(json.loads(path.read_text()))
    np.testing.assert_array_equal(result.topk[:, 0], expected)
    assert result.scores_kind is None


@pytest.mark.slow
def test_it_parses_real_cifar10_cross_validated_probabilities() -> None:
    path = DATA_DIR / "cifar10/cleanlab_cv_probabilities.npy"
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    result = parse_predictions(path, num_examples=10000, num_classes=10)
    probabilities = np.load(path)
    assert result.scores_kind == "probabilities"
    assert result.k == 5
    np.testing.assert_array_equal(result.topk[:, 0], probabilities.argmax(axis=1))
