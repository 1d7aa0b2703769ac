"""Running an uploaded checkpoint in a child process that cannot take the worker down with it.

The parent (a Celery worker) never loads the model itself. It writes the preprocessed images
to a private temporary directory and starts `python -m workers.inference.child`:
- in a new session (its own process group), so that a timeout kills it and anything it
  started with one killpg;
- with an environment built from scratch (no DJANGO_*, DATABASE_URL, SECRET_KEY, REDIS_URL,
  AWS_*: nothing of the worker's leaks into a process that runs uploaded graphs);
- under rlimits: address space (memory), CPU seconds, file size, no core dumps. The child sets
  them on itself as the first thing it does, before importing numpy or reading the model; that
  is equivalent to preexec_fn for everything the model can reach, and unlike preexec_fn it is
  safe in a multi-threaded parent (Python code between fork and exec can deadlock on a lock
  another thread held);
- with a wall-clock deadline, after which the whole group gets SIGKILL; and it dies with the
  worker (PR_SET_PDEATHSIG) if the worker itself is killed first.
The child memory-maps the images, runs batched inference and writes float32 scores to an .npy
file, plus a small JSON status. Whatever happens in the child (crash, hang, out of memory,
garbage output) ends here as a CheckpointError; the parent carries on.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workers.inference.errors import CODES, CheckpointError
from workers.inference.formats import detect_and_validate
from workers.inference.preprocessing import Preprocessing

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MEMORY_LIMIT = 4 * 1024**3
DEFAULT_WALL_SECONDS = 3600.0
# Variables a child may inherit: library search paths and GPU selection, nothing that can hold
# a credential. Everything else is dropped.
PASSTHROUGH_ENV = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
OOM_MARKERS = (
    "memoryerror", "bad_alloc", "out of memory", "failed to allocate memory",
    "can't allocate memory", "cannot allocate memory",
)  # fmt: skip


@dataclass(frozen=True)
class RunReport:
    """The scores of one run, and how it went (for logs and the benchmark script)."""

    scores: np.ndarray  # float32 [N, num_classes]
    format: str
    device: str  # where it actually ran: "cpu" | "cuda"
    provider: str  # onnxruntime's execution provider, or "torch"
    batch_size: int
    threads: int
    wall_seconds: float  # the whole run as the parent saw it, child start-up included
    load_seconds: float  # in the child: re-validate and load the model
    inference_seconds: float  # in the child: the batched forward passes only


def default_threads() -> int:
    return len(os.sched_getaffinity(0))


def choose_batch_size(device: str, sample_shape: tuple[int, ...]) -> int:
    """A batch size for images of `sample_shape` (C, H, W); a power of two.

    CPU: at most 8 MiB of input and 16..64 images. Measured with bench/checkpoint.py on 2
    cores, onnxruntime ran the MNIST CNN at ~120,000 img/s with batches of 64 but ~85,000
    with 512 (activations of small batches stay in cache), ResNet-20 about 10% faster at
    64 than at 512, and torch was no faster above 64. GPU: 256 MiB of input, 64..4096, to
    keep the device busy.
    """
    sample_bytes = 4 * math.prod(sample_shape)
    budget, low, high = (256 * 2**20, 64, 4096) if device == "cuda" else (8 * 2**20, 16, 64)
    n = max(low, min(high, budget // sample_bytes))
    return 1 << (n.bit_length() - 1)


def child_env(home: Path, threads: int) -> dict[str, str]:
    """The child's whole environment, built from nothing."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        # glibc gives each thread a 64 MB malloc arena of address space; with RLIMIT_AS that
        # would count against the model, so keep the arenas few
        "MALLOC_ARENA_MAX": "2",
    }
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    for name in PASSTHROUGH_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _tail(path: Path, limit: int = 8192) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no error output"


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _spawn(args: list[str], *, work: Path, threads: int, wall_seconds: float) -> tuple[int, bool]:
    """Run the child to completion or deadline: (returncode, timed_out). The group is killed
    either way, before the leader is reaped, so the group id cannot have been reused."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    with open(work / "child.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-s", "-m", "workers.inference.child", *args,
             "--parent-pid", str(os.getpid())],
            env=child_env(home, threads),
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + wall_seconds
    timed_out, pause = False, 0.005
    try:
        # WNOWAIT: see that it exited without reaping it
        while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        returncode = process.wait()
    return returncode, timed_out


def _failure(
    returncode: int, timed_out: bool, status: dict[str, Any] | None, log: str, limits: str
) -> CheckpointError:
    """Turn how the child ended into the CheckpointError the submitter will see."""
    if timed_out:
        return CheckpointError("model_timeout", f"the model did not finish in time ({limits})")
    if status is not None and status.get("ok") is False:
        code = status.get("code")
        message = str(status.get("message", ""))[:1000]
        if code == "model_out_of_memory":
            message += f" ({limits})"
        return CheckpointError(code if code in CODES else "model_crashed", message)
    oom = any(marker in log.lower() for marker in OOM_MARKERS)
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return CheckpointError("model_timeout", f"the model used up its CPU time ({limits})")
        if sig == signal.SIGKILL or oom:  # SIGKILL we did not send: the kernel's OOM killer
            return CheckpointError(
                "model_out_of_memory",
                f"the model was killed by the system, most likely for memory ({limits})",
            )
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return CheckpointError("model_crashed", f"the model process crashed with signal {name}")
    if oom:
        return CheckpointError("model_out_of_memory", f"the model ran out of memory ({limits})")
    return CheckpointError(
        "model_crashed", f"the model process failed (exit {returncode}): {_last_line(log)}"
    )


def _read_scores(path: Path, n: int, k: int) -> np.ndarray:
    """The child's output, checked: float32 [n, k], every value finite."""
    if not path.is_file() or path.stat().st_size > n * k * 4 + 4096:
        raise CheckpointError("model_bad_output", "the model produced no usable score file")
    try:
        scores = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise CheckpointError("model_bad_output", f"unreadable score file ({exc})") from None
    if scores.dtype != np.float32 or scores.shape != (n, k):
        raise CheckpointError(
            "model_bad_output",
            f"expected float32 scores of shape [{n}, {k}], got {scores.dtype} {list(scores.shape)}",
        )
    bad = ~np.isfinite(scores).all(axis=1)
    if bad.any():
        raise CheckpointError(
            "model_bad_output",
            f"{int(bad.sum())} image(s) got non-finite scores (NaN or infinity), "
            f"first image {int(np.argmax(bad))}",
        )
    return scores


def _prepare_images(images: np.ndarray | Path, work: Path, shape: tuple[int, int, int]) -> Path:
    """The images as an .npy file the child can map: a given .npy is used where it lies."""
    if isinstance(images, np.ndarray):
        given, path = images, work / "images.npy"
    else:  # a path: only the header is read here
        path = Path(images).resolve()
        given = np.load(path, mmap_mode="r", allow_pickle=False)
    if given.dtype != np.float32 or given.ndim != 4 or given.shape[1:] != shape or not len(given):
        raise CheckpointError(
            "images_invalid",
            f"images must be float32 [N, {', '.join(map(str, shape))}] with N > 0, got "
            f"{given.dtype} {list(given.shape)}",
        )
    if isinstance(images, np.ndarray):
        np.save(path, np.ascontiguousarray(images))
    return path


def run_checkpoint_report(
    path: Path | str,
    *,
    inputs: Preprocessing,
    images: np.ndarray | Path,
    device: str = "cpu",
    batch_size: int | None = None,
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
    cpu_seconds: int | None = None,
    wall_seconds: float = DEFAULT_WALL_SECONDS,
    threads: int | None = None,
    checkpoint_format: str | None = None,
    work_dir: Path | None = None,
) -> RunReport:
    """Run a checkpoint on preprocessed images in a sandboxed child; see run_checkpoint."""
    start = time.perf_counter()
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
    if checkpoint_format not in (None, "onnx", "safetensors"):
        raise ValueError(f"checkpoint_format must be 'onnx' or 'safetensors', not "
                         f"{checkpoint_format!r}")
    path = Path(path).resolve()
    prep = inputs
    if checkpoint_format is None:  # check again: the file may not be the one validated
        checkpoint_format = detect_and_validate(
            path, inputs=inputs, original_name=path.name
        ).format
    threads = threads or default_threads()
    batch_size = batch_size or choose_batch_size(device, prep.input_shape)
    # CPU time is shared by all threads: allow the wall time on every thread, plus start-up
    cpu_seconds = cpu_seconds or int(wall_seconds * threads) + 60
    # CUDA maps a huge virtual address space (tens of GB) at initialisation, so an address
    # space limit would stop any GPU run; there the GPU's own memory is the bound
    memory = None if device == "cuda" else memory_limit_bytes
    limits = (
        f"limits: {wall_seconds:g} s wall clock, {cpu_seconds} CPU seconds"
        + (f", {_gib(memory)} memory" if memory else "")
    )
    work = Path(tempfile.mkdtemp(prefix="evalserver-checkpoint-", dir=work_dir))  # mode 0700
    try:
        images_path = _prepare_images(images, work, prep.input_shape)
        n = int(np.load(images_path, mmap_mode="r", allow_pickle=False).shape[0])
        scores_path, status_path = work / "scores.npy", work / "status.json"
        args = [
            "run",
            "--format", checkpoint_format,
            "--model", str(path),
            "--inputs", json.dumps(inputs.as_dict()),
            "--images", str(images_path),
            "--scores", str(scores_path),
            "--status", str(status_path),
            "--device", device,
            "--batch-size", str(batch_size),
            "--threads", str(threads),
            "--memory-limit", str(memory or 0),
            "--cpu-seconds", str(cpu_seconds),
            "--file-limit", str(max(n * prep.num_classes * 4 + 2**20, 64 * 2**20)),
        ]  # fmt: skip
        returncode, timed_out = _spawn(args, work=work, threads=threads, wall_seconds=wall_seconds)
        status = _read_status(status_path)
        if timed_out or returncode != 0 or status is None or status.get("ok") is not True:
            raise _failure(returncode, timed_out, status, _tail(work / "child.log"), limits)
        scores = _read_scores(scores_path, n, prep.num_classes)
        return RunReport(
            scores=scores,
            format=checkpoint_format,
            device=str(status.get("device", device)),
            provider=str(status.get("provider", "")),
            batch_size=int(status.get("batch_size", batch_size)),
            threads=threads,
            wall_seconds=time.perf_counter() - start,
            load_seconds=float(status.get("load_seconds", 0.0)),
            inference_seconds=float(status.get("inference_seconds", 0.0)),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _read_status(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > 65536:
            return None
        status = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def run_checkpoint(
    path: Path | str,
    *,
    inputs: Preprocessing,
    images: np.ndarray | Path,
    device: str = "cpu",
    batch_size: int | None = None,
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
    cpu_seconds: int | None = None,
    wall_seconds: float = DEFAULT_WALL_SECONDS,
    threads: int | None = None,
    checkpoint_format: str | None = None,
    work_dir: Path | None = None,
) -> np.ndarray:
    """float32 scores [N, num_classes] of the checkpoint at `path` on `images`.

    images: preprocessed float32 [N, C, H, W] (load_images), or the path of an .npy holding
    them (used in place: the way to pass ImageNet's 30 GB). device: "cpu" or "cuda" (falls
    back to CPU where no GPU is available). batch_size: default choose_batch_size. Limits:
    memory (address space; not applied on CUDA), CPU seconds (default: wall_seconds on every
    thread), wall-clock seconds. checkpoint_format: "onnx" | "safetensors" from a previous
    detect_and_validate; if None the file is detected and validated again here.
    Raises CheckpointError (model_crashed, model_timeout, model_out_of_memory,
    model_bad_output, or a validation code); never lets the child's failure escape otherwise.
    """
    return run_checkpoint_report(
        path,
        inputs=inputs,
        images=images,
        device=device,
        batch_size=batch_size,
        memory_limit_bytes=memory_limit_bytes,
        cpu_seconds=cpu_seconds,
        wall_seconds=wall_seconds,
        threads=threads,
        checkpoint_format=checkpoint_format,
        work_dir=work_dir,
    ).scores


def diagnose_child(
    *, memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT, cpu_seconds: int = 60, threads: int = 1
) -> dict[str, Any]:
    """What a child started by this module sees: its environment and rlimits (for tests and
    for an operator checking a deployment). Uses exactly the start-up path of a real run."""
    work = Path(tempfile.mkdtemp(prefix="evalserver-checkpoint-"))
    try:
        out = work / "diagnosis.json"
        args = [
            "diagnose", "--status", str(out), "--memory-limit", str(memory_limit_bytes),
            "--cpu-seconds", str(cpu_seconds), "--file-limit", str(2**20),
        ]  # fmt: skip
        returncode, _ = _spawn(args, work=work, threads=threads, wall_seconds=60)
        if returncode != 0:
            raise RuntimeError(f"diagnose child failed: {_tail(work / 'child.log')}")
        result: dict[str, Any] = json.loads(out.read_text())
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
