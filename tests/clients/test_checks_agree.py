"""The client's file check (clients/python/evalserver_client/checks, plain Python) against the
server's parser (workers/scoring/predictions, NumPy): on every file of the parser's hostile
corpus (tests/prediction_files.py) both accept, or both refuse with the same code, message, row
and column; and on the real CIFAR-10 files and the usual mistakes made of them."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from evalserver_client.checks import Content, PredictionProblem, check_file
from tests.prediction_files import PredictionFile, npy_bytes, prediction_files
from workers.scoring.predictions import PredictionError, parse_predictions

N, C = 6, 8  # as the parser's fuzz: top-5 of 8 classes leaves three out
Verdict = tuple[str, str, int | None, int | None] | None  # None: accepted


def server_verdict(path: Path, name: str, n: int, c: int) -> Verdict:
    try:  # no size limit: the client cannot know the server's (docs/participants/client.md)
        parse_predictions(path, num_examples=n, num_classes=c, max_bytes=1 << 40,
                          filename=name)
    except PredictionError as error:
        return (error.code, error.message, error.row, error.column)
    return None


def client_verdict(path: Path, name: str, n: int, c: int) -> Verdict:
    try:
        check_file(path, num_examples=n, num_classes=c, filename=name)
    except PredictionProblem as problem:
        return (problem.code, problem.message, problem.row, problem.column)
    return None


def both(file: PredictionFile, n: int = N, c: int = C) -> tuple[Verdict, Verdict]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "upload"  # a neutral stored name, as the server keeps it
        path.write_bytes(file.content)
        return server_verdict(path, file.name, n, c), client_verdict(path, file.name, n, c)


@settings(max_examples=600, deadline=None)
@given(file=prediction_files(N, C))
def test_it_gives_the_servers_verdict_on_any_generated_file(file: PredictionFile) -> None:
    server, client = both(file)
    event("accepted" if server is None else server[0])

    assert client == server


def _ids(dtype: str) -> st.SearchStrategy[np.ndarray]:
    low = 0 if dtype[1] == "u" else -1  # ids in range and just out of it, duplicates likely
    return hnp.arrays(dtype, st.sampled_from([(N,), (N, 1), (N, 3), (N, 5), (N, C)]),
                      elements=st.integers(low, C))


def _scores(dtype: str) -> st.SearchStrategy[np.ndarray]:
    big = {2: 6e4, 4: 3e38, 8: 1e308}[np.dtype(dtype).itemsize]
    return hnp.arrays(dtype, (N, C), elements=st.one_of(
        st.floats(0, 1, width=16), st.sampled_from([np.nan, np.inf, -np.inf, big, -big, 4e38])
        .filter(lambda v: np.isnan(v) or abs(v) <= big or np.dtype(dtype).itemsize == 8)))


def _as(fmt: str, array: np.ndarray) -> bytes:
    if fmt == ".npy":
        return _npy(array)
    if fmt == ".npz":
        return _npz(predictions=array)
    rows = array.tolist()
    if fmt == ".json":
        return json.dumps(rows).encode()
    return "\n".join(",".join(map(repr, row if isinstance(row, list) else [row]))
                     for row in rows).encode()


@settings(max_examples=300, deadline=None)
@given(array=st.one_of(
           st.sampled_from(["<i8", ">i4", "<i2", "|u1", ">u8"]).flatmap(_ids),
           st.sampled_from(["<f2", ">f4", "<f4", "<f8", ">f8"]).flatmap(_scores)),
       fmt=st.sampled_from([".npy", ".npz", ".json", ".csv"]), fortran=st.booleans())
def test_it_finds_the_servers_first_bad_value_in_well_formed_files(
        array: np.ndarray, fmt: str, fortran: bool) -> None:
    array = np.asfortranarray(array) if fortran else array
    server, client = both(PredictionFile(f"p{fmt}", _as(fmt, array)))
    event("accepted" if server is None else server[0])

    assert client == server


def _npy(array: np.ndarray) -> bytes:
    return npy_bytes(array)


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


IDS = np.arange(N) % C
SCORES = np.eye(N, C, dtype=np.float32)
# Files NumPy writes that the corpus above draws rarely: the server accepts or refuses each.
MADE = {
    "float128 scores": ("p.npy", _npy(SCORES.astype(np.longdouble))),
    "big-endian float128": ("p.npy", _npy(SCORES.astype(">f16"))),
    "float16 scores, one NaN": ("p.npy", _npy(np.where(SCORES == 1, np.nan, SCORES)
                                              .astype(np.float16))),
    "Fortran-ordered top-3 with a duplicate": ("p.npy", _npy(np.asfortranarray(
        np.array([[0, 1, 2]] * (N - 1) + [[4, 7, 4]], dtype=">i2")))),
    "float64 beyond float32": ("p.npy", _npy(np.where(SCORES == 1, 1e39,
                                                     SCORES.astype(np.float64)))),
    "float64 summing past float64": ("p.npy", _npy(np.full((N, C), 1e308))),
    "uint64 ids": ("p.npy", _npy(IDS.astype(np.uint64))),
    "ids past int64 in JSON": ("p.json", json.dumps([2**64, *IDS[1:].tolist()]).encode()),
    "a huge whole number in a CSV of floats": (
        "p.csv", "\n".join(["1" + "0" * 400 + ",0.5"] + ["0.5,0.5"] * (N - 1)).encode()),
    "a huge whole number in a JSON of floats": (
        "p.json", json.dumps([[10**400] + [0.5] * (C - 1)] * N).encode()),
    "an npz of logits and ids": ("p.npz", _npz(ids=IDS, logits=SCORES)),
    "a structured array": ("p.npy", _npy(np.zeros(N, dtype=[("a", "<i4"), ("b", "<f8")]))),
    "datetimes": ("p.npy", _npy(np.zeros(N, dtype=">M8[25s]"))),
    "a version 3 header": ("p.npy", _npy(IDS).replace(b"NUMPY\x01\x00", b"NUMPY\x03\x00", 1)),
}


@pytest.mark.parametrize("case", sorted(MADE))
def test_it_gives_the_servers_verdict_on_rarer_numpy_files(case: str) -> None:
    name, content = MADE[case]

    server, client = both(PredictionFile(name, content))

    assert client == server


def test_it_accepts_the_real_cifar10_files_as_the_server_does(data_dir: Path,
                                                              tmp_path: Path) -> None:
    model = data_dir / "cifar10" / "model_predictions" / "original_predictions"
    top1 = model / "resnet_basic_110_predictions.json"
    probabilities = data_dir / "cifar10" / "cleanlab_cv_probabilities.npy"
    ids = json.loads(top1.read_text())
    as_csv = tmp_path / "top1.csv"
    as_csv.write_text("class\n" + "\n".join(map(str, ids)) + "\n")

    found = {path.name: check_file(path, num_examples=10_000, num_classes=10)
             for path in (top1, probabilities, as_csv)}

    assert found == {
        top1.name: Content("ids", 10_000, 1, "int64", ".json"),
        probabilities.name: Content("scores", 10_000, 10, str(np.load(probabilities).dtype),
                                    ".npy"),
        "top1.csv": Content("ids", 10_000, 1, "int64", ".csv"),
    }
    for path in (top1, probabilities, as_csv):
        assert server_verdict(path, path.name, 10_000, 10) is None
