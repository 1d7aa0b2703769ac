"""Hypothesis strategies for uploaded prediction files, well formed and not.

For N examples and C classes: .npy arrays of any dtype (objects included), shape and byte
order; .npz archives of one to three named arrays; JSON values of any nesting; CSV text with
headers, blanks, words and numbers of thousands of digits; random bytes and pickles; any of these
cut short; names whose extension matches the content, another format's, or none accepted. The
parser fuzz (tests/workers/scoring/test_prediction_fuzz.py) and the upload fuzz
(tests/test_api_fuzz.py) draw from them.
"""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FORMATS = (".npy", ".npz", ".json", ".csv")
# Python refuses int(text) past 4,300 digits (sys.int_info.default_max_str_digits): numbers
# just below, at and past that limit, and the widths where int64 and float64 stop.
LONG_NUMBER_DIGITS = (19, 20, 309, 310, 4300, 4301, 5001)
ARRAY_KEYS = ("scores", "logits", "probabilities", "topk", "ids", "predictions", "x")


@dataclass(frozen=True, repr=False)
class PredictionFile:
    name: str  # the uploader's file name; its extension picks the reader
    content: bytes

    def __repr__(self) -> str:  # hypothesis prints the falsifying example
        return f"PredictionFile({self.name!r}, {self.content[:200]!r} ({len(self.content)} B))"


def _dtypes() -> st.SearchStrategy[np.dtype]:
    """Mostly the dtypes people save predictions in (both byte orders); then anything."""
    usual = st.sampled_from(["<i8", "<i4", ">i2", "|u1", "<u8", "<f4", ">f8", "<f2", "|b1", "|O"])
    rare = st.one_of(
        hnp.integer_dtypes(endianness="?"), hnp.unsigned_integer_dtypes(endianness="?"),
        hnp.floating_dtypes(endianness="?"), hnp.complex_number_dtypes(),
        hnp.datetime64_dtypes(), hnp.timedelta64_dtypes(), hnp.byte_string_dtypes(max_len=4),
        hnp.unicode_string_dtypes(max_len=4), st.just(np.dtype([("a", "<i4"), ("b", "<f4")])),
    )
    return st.one_of(usual.map(np.dtype), usual.map(np.dtype), rare)


def _shapes(n: int, c: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Mostly the layouts the server accepts ([N], [N, k], [N, C]) and their near misses."""
    layouts = st.sampled_from([(n,), (n, 1), (n, 3), (n, 5), (n, 6), (n, c), (n, c), (n, c + 1),
                               (n - 1,), (n + 1, c), (n, 0), (0,), (), (n, c, 1)])
    return st.one_of(layouts, layouts, hnp.array_shapes(min_dims=0, max_dims=3, max_side=n + 2))


def _elements(dtype: np.dtype, c: int) -> st.SearchStrategy[object] | None:
    """Class ids near the valid range for integers; NumPy's own values for everything else."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.one_of(st.integers(max(int(info.min), -2), min(int(info.max), c + 1)),
                         hnp.from_dtype(dtype))
    if dtype.kind == "O":
        return st.one_of(st.integers(0, c - 1), st.none(), st.text(max_size=3))
    return None


@st.composite
def arrays(draw: st.DrawFn, n: int, c: int) -> np.ndarray:
    dtype = draw(_dtypes())
    array = draw(hnp.arrays(dtype, _shapes(n, c), elements=_elements(dtype, c)))
    return np.asfortranarray(array) if draw(st.booleans()) else array


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=array.dtype.hasobject)
    return buffer.getvalue()


@st.composite
def npz_bytes(draw: st.DrawFn, n: int, c: int) -> bytes:
    keys = draw(st.lists(st.one_of(st.sampled_from(ARRAY_KEYS), st.text(min_size=1, max_size=5)),
                         min_size=1, max_size=3, unique=True))
    members = {key: draw(arrays(n, c)) for key in keys}
    buffer = io.BytesIO()
    try:
        save = np.savez_compressed if draw(st.booleans()) else np.savez
        save(buffer, allow_pickle=True, **members)
    # a key NumPy cannot use as a member name (or `file`, savez's own argument): an empty zip
    except (ValueError, OSError, TypeError):
        buffer = io.BytesIO()
        np.savez(buffer)
    return buffer.getvalue()


def _json_values(n: int, c: int) -> st.SearchStrategy[object]:
    ids = st.integers(-1, c)
    scores = st.floats(allow_nan=True, allow_infinity=True)
    rows = st.one_of(
        st.lists(ids, min_size=n, max_size=n),
        st.integers(1, 6).flatmap(lambda k: st.lists(st.lists(ids, min_size=k, max_size=k),
                                                     min_size=n, max_size=n)),
        st.lists(st.lists(st.one_of(scores, st.integers(-3, 3)), min_size=c, max_size=c),
                 min_size=n, max_size=n),
    )
    anything = st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4)),
        lambda inner: st.lists(inner, max_size=n + 1)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=30,
    )
    named = st.dictionaries(st.sampled_from(ARRAY_KEYS), st.one_of(rows, anything),
                            min_size=1, max_size=2)
    return st.one_of(rows, named, anything)


@st.composite
def json_text(draw: st.DrawFn, n: int, c: int) -> bytes:
    choice = draw(st.sampled_from(["value", "value", "long_number", "duplicate_key", "text"]))
    if choice == "value":
        return json.dumps(draw(_json_values(n, c))).encode()
    if choice == "duplicate_key":  # json.dumps never writes one
        key = draw(st.sampled_from(ARRAY_KEYS))
        rows = json.dumps(draw(_json_values(n, c)))
        return f'{{"{key}": {rows}, "{key}": {rows}}}'.encode()
    if choice == "long_number":  # a number Python's json cannot turn into an int
        digits = "9" * draw(st.sampled_from(LONG_NUMBER_DIGITS))
        return f"[{digits}]".encode()
    return draw(st.text(alphabet='[]{}",:0123456789.-+eE NaInfityrulsf\n', max_size=40)).encode()


def _cells(c: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-1, c).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["", " ", "nan", "inf", "-Infinity", "1e999", "0x1", "1_0", "=1+1",
                         '"3"', "true"]),
        st.sampled_from(LONG_NUMBER_DIGITS).map(lambda digits: "9" * digits),
        st.text(max_size=4),
    )


@st.composite
def csv_text(draw: st.DrawFn, n: int, c: int) -> bytes:
    width = draw(st.sampled_from([1, 2, 5, c, c + 1]))
    row = st.lists(_cells(c), min_size=width, max_size=width).map(",".join)
    lines = draw(st.lists(row, min_size=0, max_size=n + 2))
    if draw(st.booleans()):
        lines.insert(0, ",".join(f"class_{i}" for i in range(width)))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + newline.join(lines) + newline * draw(st.integers(0, 2))).encode()


def _content(n: int, c: int) -> st.SearchStrategy[tuple[str, bytes]]:
    """(the format the content is in, its bytes): mostly arrays, then text, then the rest."""
    npy = arrays(n, c).map(lambda array: (".npy", npy_bytes(array)))
    npz = npz_bytes(n, c).map(lambda data: (".npz", data))
    json_file = json_text(n, c).map(lambda data: (".json", data))
    csv_file = csv_text(n, c).map(lambda data: (".csv", data))
    return st.one_of(
        npy, npy, npy, npz, npz, json_file, json_file, csv_file, csv_file,
        st.binary(max_size=200).map(lambda data: (".bin", data)),
        st.builds(pickle.dumps, _json_values(n, c), protocol=st.integers(2, 5)).map(
            lambda data: (".npy", data)),  # what np.save(allow_pickle=True) of a list writes
    )


@st.composite
def prediction_files(draw: st.DrawFn, n: int, c: int) -> PredictionFile:
    """Any file an uploader might send in place of N rows of predictions over C classes."""
    fmt, content = draw(_content(n, c))
    if len(content) > 1 and draw(st.integers(0, 4)) == 0:  # cut short (not to nothing)
        # hypothesis favours small numbers: fractions of the file, or a cut in its header
        cut = draw(st.one_of(
            st.sampled_from([0.25, 0.5, 0.75, 0.95]).map(lambda part: int(len(content) * part)),
            st.integers(8, 140)))
        content = content[: max(1, min(cut, len(content) - 1))]
    # mostly the content's own extension, else another format's, else one not accepted
    extension = draw(st.integers(0, 5).flatmap(lambda i: st.just(fmt) if i < 4 else (
        st.sampled_from(FORMATS) if i == 4 else st.sampled_from([".NPY", ".Json", ".txt", ""]))))
    return PredictionFile(f"preds{extension}", content)
