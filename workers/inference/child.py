"""The child process that runs an uploaded checkpoint: `python -m workers.inference.child`.

Started only by sandbox.py, with a scrubbed environment. It limits itself (rlimits) before
importing anything heavy or touching the model, validates the checkpoint again from the very
bytes it then loads (no window between check and use), runs batched inference over the
memory-mapped images, and reports through two files: the scores (.npy) and a JSON status.
Failures it can see (invalid model, MemoryError, runtime errors) are reported by code; the
ones it cannot (signals, hangs) the parent infers from how the process ended.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when needed: the child starts before anything heavy
    from workers.inference.preprocessing import Preprocessing

EXIT_REPORTED = 3  # failed, and the status file says why


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when the worker that started it dies (a Celery hard
    time limit, an OOM kill of the worker): otherwise the child, in its own session, would
    outlive it until its CPU limit, or forever if it blocks without using CPU."""
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(EXIT_REPORTED)


def apply_limits(memory_bytes: int, cpu_seconds: int, file_bytes: int) -> None:
    """Limit this process before it reads anything uploaded. memory_bytes 0: no memory limit."""
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    # SIGXCPU at the soft limit ends the process; the hard limit is a SIGKILL backstop
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash must not write a huge core file
    os.umask(0o077)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, path)  # the parent sees a whole status or none


def _image_reader(path: Path) -> tuple[int, Any]:
    """(N, read(start, stop)) over an .npy of float32 [N, C, H, W].

    Each batch maps only its own window of the file: mapping all of ImageNet's 30 GB at once
    would count against the address-space limit meant for the model.
    """
    import numpy as np

    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):  # what np.save / open_memmap write for very wide headers
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f"images file {path}: unsupported .npy version {version}")
        offset = handle.tell()
    if dtype != np.float32 or fortran or len(shape) != 4:
        raise ValueError(f"images file {path} is not float32 C-order [N, C, H, W]")
    sample = shape[1:]
    row_bytes = 4 * int(np.prod(sample))

    def read(start: int, stop: int) -> Any:
        window = np.memmap(
            path, dtype=np.float32, mode="r", offset=offset + start * row_bytes,
            shape=(stop - start, *sample),
        )  # fmt: skip
        batch = np.array(window)  # one copy per batch; the mapping is released right away
        del window
        return batch

    return int(shape[0]), read


def _inputs(args: argparse.Namespace) -> Preprocessing:
    """The benchmark's declared inputs (workers.inference.preprocessing), sent as JSON."""
    from workers.inference.preprocessing import Preprocessing

    return Preprocessing.from_dict(json.loads(args.inputs))


def _run_onnx(args: argparse.Namespace, prep: Preprocessing, n: int, read: Any, scores: Any
              ) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort

    from workers.inference.onnx_format import inspect_onnx

    data = Path(args.model).read_bytes()  # validated and loaded from these same bytes
    _, summary = inspect_onnx(data, input_shape=prep.input_shape, num_classes=prep.num_classes)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = ["CPUExecutionProvider"]
    if args.device == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    # from bytes, not a path: the runtime then has no directory to resolve external files in
    session = ort.InferenceSession(data, sess_options=options, providers=providers)
    del data
    provider = session.get_providers()[0]
    batch = summary.fixed_batch or args.batch_size
    loaded = time.perf_counter()
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        x = read(start, stop)
        padded = summary.fixed_batch is not None and stop - start < batch
        if padded:  # a fixed-batch model gets a full last batch; the extra rows are dropped
            x = np.concatenate([x, np.zeros((batch - (stop - start), *x.shape[1:]), x.dtype)])
        y = session.run([summary.output_name], {summary.input_name: x})[0]
        _store(scores, start, stop, y[: stop - start] if padded and len(y) == batch else y)
    return {
        "provider": provider,
        "device": "cuda" if provider == "CUDAExecutionProvider" else "cpu",
        "batch_size": batch,
        "loaded_at": loaded,
    }


def _run_torch(args: argparse.Namespace, prep: Preprocessing, n: int, read: Any, scores: Any
               ) -> dict[str, Any]:
    import torch
    from safetensors.torch import load

    from workers.inference import architectures
    from workers.inference.errors import CheckpointError
    from workers.inference.safetensors_format import inspect_safetensors

    torch.set_num_threads(args.threads)
    data = Path(args.model).read_bytes()  # checked and loaded from these same bytes
    inspect_safetensors(data, prep.architecture)
    try:
        tensors = load(data)
    except Exception as exc:  # the library refused what our check accepted
        raise CheckpointError("safetensors_load_failed", f"could not load it: {exc}") from None
    del data
    model = architectures.build(str(prep.architecture))
    state = model.state_dict()
    for key, value in state.items():
        if key in tensors:  # F16/BF16 weights run in float32, as the images are float32
            state[key] = tensors[key].to(value.dtype)
    model.load_state_dict(state, strict=True)
    device = "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu"
    # channels-last lets oneDNN skip layout conversions: about twice as fast on CPU here
    layout = torch.channels_last if device == "cpu" else torch.contiguous_format
    model.to(device)
    model.to(memory_format=layout)  # accepted by Module.to, though its typed overloads omit it
    loaded = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, n, args.batch_size):
            stop = min(start + args.batch_size, n)
            x = torch.from_numpy(read(start, stop)).to(device).contiguous(memory_format=layout)
            _store(scores, start, stop, model(x).float().cpu().numpy())
    return {"provider": "torch", "device": device, "batch_size": args.batch_size,
            "loaded_at": loaded}  # fmt: skip


def _store(scores: Any, start: int, stop: int, y: Any) -> None:
    """Check one batch's output and put it in place (float32)."""
    from workers.inference.errors import CheckpointError

    expected = (stop - start, scores.shape[1])
    if tuple(y.shape) != expected:
        raise CheckpointError(
            "model_bad_output",
            f"for a batch of {expected[0]} images the model returned shape {list(y.shape)}; "
            f"expected {list(expected)}",
        )
    scores[start:stop] = y


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    began = time.perf_counter()
    n, read = _image_reader(Path(args.images))
    prep = _inputs(args)  # parsed once, for the scores' shape and the runner
    scores = np.empty((n, prep.num_classes), dtype=np.float32)
    runner = _run_onnx if args.format == "onnx" else _run_torch
    facts = runner(args, prep, n, read, scores)
    finished = time.perf_counter()
    partial = Path(args.scores + ".partial.npy")
    np.save(partial, scores)
    os.replace(partial, args.scores)
    loaded_at = facts.pop("loaded_at")
    return {
        "ok": True,
        **facts,
        "images": n,
        "load_seconds": loaded_at - began,
        "inference_seconds": finished - loaded_at,
    }


def _is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, MemoryError) or any(
        marker in text
        for marker in ("bad_alloc", "out of memory", "failed to allocate", "allocate memory")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workers.inference.child")
    parser.add_argument("command", choices=("run", "diagnose"))
    parser.add_argument("--format", choices=("onnx", "safetensors"))
    parser.add_argument("--model")
    parser.add_argument("--inputs")  # the benchmark's declared inputs, as JSON
    parser.add_argument("--images")
    parser.add_argument("--scores")
    parser.add_argument("--status", required=True)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory-limit", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--file-limit", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    die_with_parent(args.parent_pid)
    apply_limits(args.memory_limit, args.cpu_seconds, args.file_limit)
    status = Path(args.status)

    if args.command == "diagnose":  # what a model would see; used by tests and operators
        limits = {
            name: list(resource.getrlimit(getattr(resource, name)))
            for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_CORE")
        }
        _write_json(status, {
            "env": dict(os.environ), "limits": limits, "cwd": os.getcwd(),
            "session_leader": os.getsid(0) == os.getpid(),
        })  # fmt: skip
        return 0

    from workers.inference.errors import CheckpointError

    try:
        _write_json(status, run(args))
        return 0
    except CheckpointError as exc:
        _write_json(status, {"ok": False, "code": exc.code, "message": exc.message})
    except BaseException as exc:  # every failure must reach the parent by code
        if _is_oom(exc):
            code = "model_out_of_memory"
            message = f"the model ran out of memory: {type(exc).__name__}: {str(exc)[:300]}"
        else:
            code = "model_crashed"
            message = f"the model failed: {type(exc).__name__}: {str(exc)[:500]}"
        try:
            _write_json(status, {"ok": False, "code": code, "message": message})
        except BaseException:  # e.g. MemoryError again: the exit code still tells
            pass
    return EXIT_REPORTED


if __name__ == "__main__":
    sys.exit(main())
