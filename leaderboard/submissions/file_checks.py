"""The checks a predictions upload passes before anything is stored: the files against the
benchmark (names, formats, sizes), then their content, parsed in the request when that is
quick (format, dtype, shape, ids in range, finite scores: all of
`workers.scoring.predictions.parse_predictions`).

A file refused here is answered at once (400, its error code, the field and where in the
file), and the request stores nothing. Files too large to parse in about a second are checked
by the worker instead, which parses every file again anyway (a failed submission keeps them
for `EVALSERVER_FAILED_FILES_RETENTION_DAYS` days: `retention.py`).

What "quick" means depends on the format (bench/inline_check.py measures it): NumPy arrays
stored as they are (.npy, an uncompressed .npz) cost 0.2-2 ns a byte, so ImageNet's
50,000 x 1000 float16 scores (100 MB) take about 0.1 s; text (.json, .csv) and compressed
.npz cost 7-50 ns a byte. Hence two limits, each about 0.6-0.8 s of parsing on a busy
2-core machine: EVALSERVER_INLINE_CHECK_BYTES (256 MiB) and EVALSERVER_INLINE_CHECK_TEXT_BYTES
(16 MiB: every text file of these benchmarks' usual shapes, top-5 ids or CIFAR/MNIST scores).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.common.errors import ServiceError
from workers.scoring.predictions import SUPPORTED_EXTENSIONS, PredictionError, parse_predictions


class SubmissionError(ServiceError):
    """A submission the server refuses (bad request, quota, size)."""


def submission_files_check(*, benchmark: Benchmark, files: Mapping[str, Any]) -> None:
    """One file per example set of the benchmark, the main one included, each in a supported
    format, not empty and under the upload cap; then the content of those small enough to
    parse now (`predictions_check`). Raises SubmissionError naming the file's field."""
    slugs = {s.slug: s for s in benchmark.example_sets.all()}
    if not files:
        raise SubmissionError(
            "no_files",
            f"attach one predictions file per example set; {benchmark.slug} has "
            + ", ".join(sorted(slugs)),
        )
    for name, upload in files.items():
        if name not in slugs:
            raise SubmissionError(
                "unknown_image_set",
                f"{name!r} is not an example set of {benchmark.slug}; use "
                + ", ".join(sorted(slugs)),
                field=name,
            )
        suffix = Path(upload.name or "").suffix.lower()
        if suffix not in SUPPORTED_EXTENSIONS:
            raise SubmissionError(
                "unsupported_format",
                f"{upload.name!r}: use one of {', '.join(SUPPORTED_EXTENSIONS)}",
                field=name,
            )
        if upload.size == 0:
            raise SubmissionError("empty_file", f"{upload.name!r} is empty", field=name)
        if upload.size > settings.EVALSERVER_MAX_UPLOAD_BYTES:
            raise SubmissionError(
                "file_too_large",
                f"{upload.name!r} is larger than {settings.EVALSERVER_MAX_UPLOAD_BYTES} bytes",
                field=name,
                http_status=413,
            )
    if benchmark.main_example_set not in files:
        raise SubmissionError(
            "missing_main_image_set",
            f"a {benchmark.slug} submission needs predictions for {benchmark.main_example_set}",
            field=benchmark.main_example_set,
        )
    for name, upload in files.items():
        predictions_check(benchmark=benchmark, example_set=slugs[name], upload=upload)


@contextmanager
def _upload_path(upload: Any) -> Iterator[Path]:
    """A path to the upload's bytes: Django's temporary file for a large upload, else a
    temporary copy (uploads under FILE_UPLOAD_MAX_MEMORY_SIZE are held in memory)."""
    if hasattr(upload, "temporary_file_path"):
        yield Path(upload.temporary_file_path())
        return
    suffix = Path(upload.name or "").suffix.lower()
    with tempfile.NamedTemporaryFile(prefix="evalserver-check-", suffix=suffix) as copy:
        upload.seek(0)
        shutil.copyfileobj(upload, copy, length=1 << 20)
        copy.flush()
        upload.seek(0)
        yield Path(copy.name)


def _quick_to_parse(path: Path, suffix: str) -> bool:
    """Whether the format is read at memory speed: a .npy, or a .npz whose members are all
    stored uncompressed (a zip that cannot be read is refused by the parser at once)."""
    if suffix == ".npy":
        return True
    if suffix != ".npz":
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return True


def inline_check_limit(*, path: Path, suffix: str) -> int:
    """The largest file of this kind that is parsed in the request (bytes)."""
    if _quick_to_parse(path, suffix):
        return int(settings.EVALSERVER_INLINE_CHECK_BYTES)
    return int(settings.EVALSERVER_INLINE_CHECK_TEXT_BYTES)


def predictions_check(*, benchmark: Benchmark, example_set: ExampleSet, upload: Any) -> bool:
    """Parse one upload as the worker will, when it is small enough to do so now; raises
    SubmissionError with the parser's code, the example set as the field, and the row and
    column where the parser names them. Returns whether the file was checked."""
    suffix = Path(upload.name or "").suffix.lower()
    with _upload_path(upload) as path:
        if upload.size > inline_check_limit(path=path, suffix=suffix):
            return False  # the worker checks it (the same parse, in its own process)
        try:
            parse_predictions(path, num_examples=example_set.size,
                              num_classes=benchmark.num_classes,
                              max_bytes=settings.EVALSERVER_MAX_UPLOAD_BYTES,
                              filename=upload.name)
        except PredictionError as exc:
            where = {name: value for name, value in (("row", exc.row), ("column", exc.column))
                     if value is not None}
            raise SubmissionError(exc.code, f"{example_set.slug}: {exc.message}",
                                  field=example_set.slug, details=where) from exc
    return True
