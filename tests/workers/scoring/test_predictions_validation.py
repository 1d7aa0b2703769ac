"""Tests for workers.scoring.predictions: refusing invalid, corrupt and hostile upload files."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.workers.scoring.support import IDS_4x3
from tests.workers.scoring.support import save_npy as _npy
from tests.workers.scoring.support import write_file as _write
from workers.scoring.predictions import PredictionError, parse_predictions


class _Canary:
    """Unpickling this creates `target`: proof that a loader ran code from the file."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.target), "w"))


def _error(path: Path, **kwargs: object) -> PredictionError:
    options = {"num_examples": 4, "num_classes": 10} | kwargs
    with pytest.raises(PredictionError) as info:
        parse_predictions(path, **options)  # type: ignore[arg-type]
    return info.value


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
    assert (error.row, error.column) == (17, 0)


def test_it_refuses_a_negative_class_id_in_any_of_the_k_columns(tmp_path: Path) -> None:
    ids = np.array([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, -1]])  # beyond the kept top-5
    error = _error(_npy(tmp_path, ids), num_examples=2)
    assert error.code == "class_out_of_range"
    assert "row 1 (0-based)" in error.message and "-1" in error.message
    assert "0..9" in error.message
    assert (error.row, error.column) == (1, 6)


def test_it_refuses_a_duplicate_class_within_a_row(tmp_path: Path) -> None:
    ids = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [1, 9, 1]])
    error = _error(_npy(tmp_path, ids))
    assert error.code == "duplicate_class"
    assert "row 3 (0-based)" in error.message and "class id 1" in error.message
    assert (error.row, error.column) == (3, 2)  # where the id comes the second time


def test_it_refuses_non_finite_scores(tmp_path: Path) -> None:
    scores = np.full((4, 10), 0.1, dtype=np.float32)
    scores[2, 6] = np.nan
    error = _error(_npy(tmp_path, scores))
    assert error.code == "not_finite"
    assert "row 2 (0-based)" in error.message and "column 6" in error.message
    assert (error.row, error.column) == (2, 6)
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
    assert (error.row, error.column) == (2, None)  # the data row; the header is line 1


def test_it_refuses_empty_csv_cells(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "1,2\n3,4\n5, \n0,1\n"))
    assert error.code == "empty_cell"
    assert "line 3" in error.message and "column 2" in error.message
    assert (error.row, error.column) == (2, 1)  # 0-based, where the message counts from 1


def test_it_refuses_non_numeric_csv_cells_after_the_header(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "preds.csv", "x,y\n1,2\n3,4\n5,six\n0,1\n"))
    assert error.code == "not_a_number"
    assert "line 4" in error.message and "column 2" in error.message and "'six'" in error.message
    assert (error.row, error.column) == (2, 1)


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
    placed = pickle.loads(pickle.dumps(PredictionError("not_finite", "row 2", row=2, column=6)))
    assert (placed.code, placed.message, placed.row, placed.column) == ("not_finite", "row 2",
                                                                        2, 6)
