"""Reading a few rows of a stored .npz in place equals loading the array whole."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from workers.scoring.compact import npz_member_rows


@pytest.fixture
def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"topk": rng.integers(0, 1000, size=(500, 5)).astype(np.int16),
            "topk_scores": rng.random((500, 5)).astype(np.float32)}


@pytest.mark.parametrize("member", ["topk", "topk_scores"])  # first entry, and a later one
def test_it_reads_rows_equal_to_a_whole_load(tmp_path: Path, arrays: dict[str, np.ndarray],
                                             member: str) -> None:
    path = tmp_path / "c.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    rows = np.array([0, 7, 499, 7])
    got = npz_member_rows(path, member, rows)
    assert got.dtype == arrays[member].dtype
    assert np.array_equal(got, arrays[member][rows])


def test_it_refuses_a_compressed_member(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="topk is compressed; rows cannot be read in place"):
        npz_member_rows(path, "topk", np.array([1]))


def test_it_refuses_a_row_outside_the_array(tmp_path: Path,
                                            arrays: dict[str, np.ndarray]) -> None:
    path = tmp_path / "c.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="row 500 outside 0..499"):
        npz_member_rows(path, "topk", np.array([500]))


@pytest.mark.parametrize("member", ["topk", "topk_scores"])
def test_it_reads_the_same_rows_from_an_open_file(tmp_path: Path, arrays: dict[str, np.ndarray],
                                                  member: str) -> None:
    """A stored file opened through a storage (no path on disk) reads like the path does."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    buffer.seek(123)  # wherever the caller left it
    rows = np.array([3, 0, 498])

    got = npz_member_rows(buffer, member, rows)

    assert got.dtype == arrays[member].dtype
    assert got.tolist() == arrays[member][[3, 0, 498]].tolist()
    assert not buffer.closed
