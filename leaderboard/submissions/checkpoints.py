"""Checkpoint submissions: a model instead of predictions.

The upload is checked before anything is stored (`checkpoint_validate`: size, format by
name and by bytes, no pickle; a safetensors header's structure and shapes; an ONNX graph is
left to the worker, whose sandboxed child refuses a bad one with a named reason; nothing is
loaded), stored with its submission, and run by a gpu-queue worker
(`submission_infer`) on every example set the server has images for. Each run's scores become a
SubmissionFile exactly like an uploaded predictions file, so scoring, re-scoring and the pages
treat both kinds the same. The model itself only ever runs in the sandboxed child process of
`workers.inference.sandbox`.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile, File
from django.db import transaction

from leaderboard.catalog.image_sources import (
    benchmark_preprocessing,
    example_set_names,
    example_set_source,
    example_set_source_problem,
)
from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.common.errors import ServiceError
from leaderboard.common.storage import stored_file_path
from leaderboard.jobs.lifecycle import job_held
from leaderboard.submissions.models import CheckpointFile, Submission, SubmissionFile
from workers import inference

CHECKPOINT_FIELD = "checkpoint"
# Errors that are the server's configuration, not the upload: 413 and 400 otherwise.
_STATUS = {"checkpoint_too_large": 413}


class CheckpointSubmissionError(ServiceError):
    """A checkpoint the server refuses at upload."""


def checkpoint_example_sets(*, benchmark: Benchmark) -> list[ExampleSet]:
    """The benchmark's example sets a checkpoint is run on: those whose images its bundle
    declares and the server has, when the bundle declares what a model receives."""
    if benchmark_preprocessing(benchmark=benchmark) is None:
        return []
    return [s for s in benchmark.example_sets.order_by("slug")
            if example_set_source(example_set=s) is not None]


def _local(upload: Any) -> tuple[Path, bool]:
    """A path to the upload's bytes (Django's temporary file, or a copy); True if a copy."""
    if hasattr(upload, "temporary_file_path"):
        return Path(upload.temporary_file_path()), False
    handle = tempfile.NamedTemporaryFile(suffix=Path(upload.name or "").suffix, delete=False)
    with handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    upload.seek(0)
    return Path(handle.name), True


def checkpoint_validate(*, benchmark: Benchmark, upload: Any) -> inference.CheckpointInfo:
    """Check an uploaded checkpoint without loading it; raises CheckpointSubmissionError."""
    inputs = benchmark_preprocessing(benchmark=benchmark)
    if inputs is None or not checkpoint_example_sets(benchmark=benchmark):
        raise CheckpointSubmissionError(
            "checkpoints_unavailable",
            f"this server has no images for {benchmark.slug}, so it cannot run a model on it; "
            "submit predictions instead", field=CHECKPOINT_FIELD)
    path, copied = _local(upload)
    try:
        # parse_onnx=False: an ONNX graph is parsed by the worker's sandboxed child, not in
        # the web process (it takes ~27x the file in memory); the child refuses a bad one.
        return inference.detect_and_validate(
            path, inputs=inputs, original_name=Path(upload.name or "").name,
            max_bytes=settings.EVALSERVER_CHECKPOINT_MAX_BYTES, parse_onnx=False)
    except inference.CheckpointError as exc:
        raise CheckpointSubmissionError(exc.code, exc.message, field=CHECKPOINT_FIELD,
                                        http_status=_STATUS.get(exc.code, 400)) from None
    finally:
        if copied:
            path.unlink(missing_ok=True)


def checkpoint_store(*, submission: Submission, upload: Any,
                     info: inference.CheckpointInfo) -> str:
    """Store the validated upload with its submission (inside the caller's transaction);
    returns the stored file's name, for clean-up should that transaction roll back."""
    row = CheckpointFile(submission=submission, format=info.format,
                         original_name=Path(upload.name or "").name[:255],
                         size=info.size_bytes, sha256=info.sha256)
    row.file.save(f"{submission.pk}.{info.format}", File(upload), save=False)
    row.save()
    return str(row.file.name)


def _device(checkpoint_format: str) -> str:
    wanted = settings.EVALSERVER_INFERENCE_DEVICE
    if wanted != "auto":
        return str(wanted)
    # the runtimes are imported by the gpu worker only, never by the web process
    if checkpoint_format == "onnx":
        import onnxruntime

        return "cuda" if "CUDAExecutionProvider" in onnxruntime.get_available_providers() \
            else "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _images(example_set: ExampleSet, inputs: inference.Preprocessing) -> Path:
    """The example set preprocessed once per worker host (a cached .npy, memory-mapped by the
    child), so loading images never paces the model; keyed by the declared inputs and
    source, so a changed declaration is preprocessed again."""
    source = example_set_source(example_set=example_set)
    if source is None:
        raise inference.CheckpointError(
            "images_invalid", f"no images for {example_set.slug}: "
            f"{example_set_source_problem(example_set=example_set)}")
    key = hashlib.sha256(repr((inputs, source, example_set.size)).encode()).hexdigest()[:12]
    folder = Path(settings.EVALSERVER_CACHE_DIR) / "images"
    path = folder / f"{example_set.slug}-{key}.npy"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{path.name}.{os.getpid()}.tmp.npy"
        names = example_set_names(example_set=example_set) if source.format == "folder" else None
        try:
            inference.load_images(source, inputs=inputs, size=example_set.size, names=names,
                                  out=partial)
            os.replace(partial, path)  # atomic: another worker may be writing the same
        finally:
            partial.unlink(missing_ok=True)
    return path


def submission_infer(*, submission_id: int, task_id: str) -> bool:
    """Run the checkpoint on every example set with images and store the scores as the
    submission's prediction files (replacing any from an earlier, interrupted attempt).

    Raises inference.CheckpointError when the model is refused, crashes, hangs or runs out of
    memory. Returns False when this task no longer holds the claim (nothing written then)."""
    submission = Submission.objects.select_related("benchmark", "checkpoint").get(
        id=submission_id)
    checkpoint: CheckpointFile = submission.checkpoint
    inputs = benchmark_preprocessing(benchmark=submission.benchmark)
    if inputs is None:
        raise inference.CheckpointError(
            "images_invalid", f"{submission.benchmark.slug}'s bundle no longer declares what "
            "a model receives")
    device = _device(checkpoint.format)
    runs: list[tuple[ExampleSet, np.ndarray]] = []
    rates = []
    # a path: the sandboxed child process opens the model file itself
    with stored_file_path(checkpoint.file) as path:
        for example_set in checkpoint_example_sets(benchmark=submission.benchmark):
            report = inference.run_checkpoint_report(
                path, inputs=inputs, images=_images(example_set, inputs),
                device=device, checkpoint_format=checkpoint.format,
                # CUDA maps tens of GB of address space: the GPU's memory is the bound there
                memory_limit_bytes=(None if device == "cuda"
                                    else settings.EVALSERVER_INFERENCE_MEMORY_BYTES),
                wall_seconds=settings.EVALSERVER_INFERENCE_WALL_SECONDS)
            runs.append((example_set, report.scores))
            rates.append(report.scores.shape[0] / max(report.inference_seconds, 1e-9))
            device = report.device
    with transaction.atomic():
        if not job_held(Submission, job_id=submission_id, task_id=task_id):
            return False
        for old in SubmissionFile.objects.filter(submission=submission):
            old.file.delete(save=False)
            if old.compact:
                old.compact.delete(save=False)
            old.delete()
        for example_set, scores in runs:
            buffer = io.BytesIO()
            np.save(buffer, scores.astype(np.float32), allow_pickle=False)
            data = buffer.getvalue()
            row = SubmissionFile(
                submission=submission, example_set=example_set, size=len(data),
                original_name=f"{Path(checkpoint.original_name).stem} on {example_set.slug}.npy",
                sha256=hashlib.sha256(data).hexdigest())
            row.file.save(f"{submission.pk}-{example_set.slug}.npy", ContentFile(data), save=False)
            row.save()
        CheckpointFile.objects.filter(pk=checkpoint.pk).update(
            device=device, images_per_second=min(rates) if rates else None)
    return True
