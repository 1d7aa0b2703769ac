"""parse_predictions on hypothesis-generated files (issue 14): every file either parses into
valid Predictions or is refused with a PredictionError carrying a known code and a message;
no other exception escapes, whatever the bytes. Well-formed files parse to exactly the ids
(or the top-5 of exactly the scores) they were written from."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.prediction_files import PredictionFile, npy_bytes, prediction_files
from workers.scoring.predictions import PredictionError, Predictions, parse_predictions

N, C = 6, 8  # examples and classes: top-5 of 8 classes leaves three out
# The codes of the module's docstring (workers/scoring/predictions/__init__.py), and duplicate_key.
CODES = frozenset({
    "file_too_large", "empty_file", "corrupt_file", "unsupported_format", "pickle_refused",
    "object_array", "wrong_dtype", "wrong_shape", "wrong_row_count", "class_out_of_range",
    "duplicate_class", "not_finite", "unknown_keys", "empty_cell", "not_a_number",
    "duplicate_key",
})
MAX_BYTES = 1 << 20


def parsed(file: PredictionFile, *, max_bytes: int = MAX_BYTES) -> Predictions | PredictionError:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "upload"  # a neutral stored name, as the web process keeps it
        path.write_bytes(file.content)
        try:
            return parse_predictions(path, num_examples=N, num_classes=C, max_bytes=max_bytes,
                                     keep_scores=True, filename=file.name)
        except PredictionError as error:
            return error


def assert_valid(result: Predictions) -> None:
    """The contract of Predictions (workers/scoring/predictions/__init__.py)."""
    topk = result.topk
    assert topk.dtype == np.int32 and topk.ndim == 2 and topk.shape[0] == N
    assert 1 <= topk.shape[1] <= 5
    assert ((topk >= 0) & (topk < C)).all()
    assert all(len(set(row)) == len(row) for row in topk.tolist())
    assert not topk.flags.writeable
    if result.scores_kind is None:
        assert result.topk_scores is None and result.scores is None
        return
    assert result.scores_kind in ("probabilities", "logits")
    assert topk.shape == (N, 5)
    assert result.topk_scores is not None and result.topk_scores.dtype == np.float32
    assert np.isfinite(result.topk_scores).all()
    assert (np.diff(result.topk_scores, axis=1) <= 0).all()  # best first
    assert result.scores is not None and result.scores.shape == (N, C)
    np.testing.assert_array_equal(np.take_along_axis(result.scores, topk, axis=1),
                                  result.topk_scores)


@settings(max_examples=400, deadline=None)
@given(file=prediction_files(N, C),
       # now and then a limit under the file's size, or under what an .npz unpacks to
       max_bytes=st.integers(0, 4).map(lambda i: 100 if i == 0 else MAX_BYTES))
def test_it_parses_or_refuses_by_code_any_generated_file(file: PredictionFile,
                                                         max_bytes: int) -> None:
    result = parsed(file, max_bytes=max_bytes)
    event(result.code if isinstance(result, PredictionError) else "parsed")  # the statistics

    if isinstance(result, PredictionError):
        assert result.code in CODES, result
        assert isinstance(result.message, str) and result.message.strip()
        assert str(result) == result.message
    else:
        assert_valid(result)


@settings(max_examples=100, deadline=None)
@given(ids=st.integers(1, 5).flatmap(lambda k: st.lists(
           st.permutations(range(C)).map(lambda row: row[:k]), min_size=N, max_size=N)),
       dtype=st.sampled_from(["<i1", ">i2", "<i4", "<i8", "<u1", ">u4", "<u8"]),
       fmt=st.sampled_from([".npy", ".json", ".csv"]))
def test_it_parses_well_formed_class_ids_exactly(ids: list[list[int]], dtype: str,
                                                 fmt: str) -> None:
    array = np.array(ids, dtype=dtype)
    content = {".npy": lambda: npy_bytes(array), ".json": lambda: json.dumps(ids).encode(),
               ".csv": lambda: "\n".join(",".join(map(str, row)) for row in ids).encode()}[fmt]()

    result = parsed(PredictionFile(f"ids{fmt}", content))

    assert isinstance(result, Predictions), result
    assert_valid(result)
    np.testing.assert_array_equal(result.topk, np.array(ids))
    assert result.scores_kind is None


@settings(max_examples=100, deadline=None)
@given(scores=hnp.arrays(np.float32, (N, C), elements=st.floats(-1e6, 1e6, width=32)),
       fmt=st.sampled_from([".npy", ".npz", ".json"]))
def test_it_takes_the_top_five_of_well_formed_scores_exactly(scores: np.ndarray,
                                                             fmt: str) -> None:
    buffer = io.BytesIO()
    if fmt == ".npz":
        np.savez(buffer, logits=scores)
    content = {".npy": lambda: npy_bytes(scores), ".npz": buffer.getvalue,
               ".json": lambda: json.dumps(scores.tolist()).encode()}[fmt]()

    result = parsed(PredictionFile(f"scores{fmt}", content))

    assert isinstance(result, Predictions), result
    assert_valid(result)
    # best first; equal scores in ascending class id (a stable sort of the negated scores)
    expected = np.argsort(-scores.astype(np.float64), axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(result.topk, expected)
    np.testing.assert_array_equal(result.scores, scores)


def test_it_refuses_a_csv_cell_past_pythons_integer_digit_limit() -> None:
    """Found by the fuzz above: int() of a 4,301-digit cell raised ValueError (a 500)."""
    rows = ["0,1"] * N
    rows[2] = "0," + "9" * 4301

    result = parsed(PredictionFile("ids.csv", "\n".join(rows).encode()))

    assert isinstance(result, PredictionError)
    assert (result.code, result.message) == (
        "not_a_number", "line 3, column 2: a number with 4301 digits, far too large to be a "
        "class id or a score")
