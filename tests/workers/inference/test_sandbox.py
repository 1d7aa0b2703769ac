"""Tests for running checkpoints in the child process: limits, failures, environment."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.workers.inference import builders
from tests.workers.inference.support import MNIST
from workers.inference import CheckpointError, choose_batch_size, run_checkpoint
from workers.inference.sandbox import PROJECT_ROOT, diagnose_child, run_checkpoint_report

GIB = 2**30
SECRETS = {
    "SECRET_KEY": "django-insecure-do-not-leak",
    "DATABASE_URL": "postgres://user:hunter2@db/evalserver",
    "REDIS_URL": "redis://:hunter2@redis:6379/0",
    "AWS_SECRET_ACCESS_KEY": "hunter2-aws",
    "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing",
}


def onnx_file(tmp_path: Path, model_name: str) -> Path:
    return builders.save(getattr(builders, model_name)(), tmp_path / f"{model_name}.onnx")


def run_error(path: Path, images: np.ndarray, **kwargs: object) -> CheckpointError:
    with pytest.raises(CheckpointError) as caught:
        run_checkpoint(path, inputs=MNIST, images=images, **kwargs)  # type: ignore[arg-type]
    return caught.value


def linear_reference(images: np.ndarray) -> np.ndarray:
    model = builders.linear_model()
    weight = np.frombuffer(model.graph.initializer[0].raw_data, np.float32).reshape(784, 10)
    bias = np.frombuffer(model.graph.initializer[1].raw_data, np.float32)
    return images.reshape(len(images), -1) @ weight + bias


def test_it_runs_an_onnx_model_in_a_child_and_returns_its_scores(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    path = onnx_file(tmp_path, "linear_model")
    report = run_checkpoint_report(path, inputs=MNIST, images=mnist_images[:1000],
                                   batch_size=300, threads=1)
    assert report.scores.dtype == np.float32
    assert report.scores.shape == (1000, 10)
    np.testing.assert_allclose(report.scores, linear_reference(mnist_images[:1000]), atol=1e-4)
    assert (report.format, report.device, report.provider) == ("onnx", "cpu",
                                                               "CPUExecutionProvider")
    assert (report.batch_size, report.threads) == (300, 1)
    assert 0 < report.inference_seconds < report.wall_seconds


def test_it_runs_a_fixed_batch_model_at_its_batch_size_and_reads_images_from_a_path(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    path = builders.save(builders.linear_model(batch=4), tmp_path / "fixed.onnx")
    npy = tmp_path / "images.npy"
    np.save(npy, mnist_images[:7])  # two batches of 4, the last one padded
    report = run_checkpoint_report(path, inputs=MNIST, images=npy, device="cuda")
    assert report.batch_size == 4
    assert report.device == "cpu"  # no GPU here: CUDA requests fall back to the CPU
    np.testing.assert_allclose(report.scores, linear_reference(mnist_images[:7]), atol=1e-4)


def test_it_ends_a_model_past_the_memory_limit_as_out_of_memory_and_keeps_working(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    greedy = onnx_file(tmp_path, "greedy_model")  # 160 MB per image on the way to [N, 10]
    error = run_error(greedy, mnist_images[:64], memory_limit_bytes=GIB, threads=1)
    assert error.code == "model_out_of_memory"
    assert "memory" in error.message
    fine = onnx_file(tmp_path, "linear_model")
    scores = run_checkpoint(fine, inputs=MNIST, images=mnist_images[:64],
                            memory_limit_bytes=GIB, threads=1)
    np.testing.assert_allclose(scores, linear_reference(mnist_images[:64]), atol=1e-4)


def _children_of_this_process(parent: int | None = None) -> list[int]:
    """Live (not zombie) checkpoint children of `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            if int(ppid) == parent and state != "Z" and b"workers.inference.child" in cmdline:
                pids.append(int(entry.name))
    return pids


def test_it_kills_a_model_that_never_returns_and_hides_the_parents_secrets_from_it(
    tmp_path: Path, mnist_images: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    endless = onnx_file(tmp_path, "endless_model")
    errors: list[CheckpointError] = []

    def run() -> None:
        errors.append(run_error(endless, mnist_images[:8], wall_seconds=4.0, threads=1))

    started = time.monotonic()
    thread = threading.Thread(target=run)
    thread.start()
    environ = b""
    while not environ and thread.is_alive():  # read the live child's environment from /proc
        for pid in _children_of_this_process():
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                pass
        time.sleep(0.05)
    thread.join(timeout=30)
    elapsed = time.monotonic() - started
    assert [e.code for e in errors] == ["model_timeout"]
    assert "4 s wall clock" in errors[0].message
    assert 4.0 <= elapsed < 12.0
    assert _children_of_this_process() == []
    variables = dict(item.split(b"=", 1) for item in environ.split(b"\0") if item)
    assert variables[b"PYTHONPATH"] == str(PROJECT_ROOT).encode()
    for name, value in SECRETS.items():
        assert name.encode() not in variables
        assert value.encode() not in environ


def test_it_kills_the_child_when_the_worker_that_started_it_dies(tmp_path: Path) -> None:
    endless = onnx_file(tmp_path, "endless_model")
    code = (
        "import numpy as np, sys\n"
        "from workers.inference import run_checkpoint\n"
        "from tests.workers.inference.support import MNIST\n"
        "run_checkpoint(sys.argv[1], inputs=MNIST, threads=1, wall_seconds=120,\n"
        "               images=np.zeros((4, 1, 28, 28), np.float32), work_dir=sys.argv[2])\n"
    )  # a killed worker cannot remove its private directory: keep it under tmp_path
    worker = subprocess.Popen([sys.executable, "-c", code, str(endless), str(tmp_path)],
                              cwd=PROJECT_ROOT)
    try:
        deadline = time.monotonic() + 30
        children: list[int] = []
        while not children and time.monotonic() < deadline:
            children = _children_of_this_process(worker.pid)
            time.sleep(0.05)
        assert len(children) == 1
    finally:
        worker.kill()  # as a Celery hard time limit would
        worker.wait()
    child = children[0]
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_it_ends_a_model_past_its_cpu_time_as_a_timeout(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    endless = onnx_file(tmp_path, "endless_model")
    error = run_error(endless, mnist_images[:8], cpu_seconds=2, wall_seconds=60, threads=1)
    assert error.code == "model_timeout"
    assert "CPU time" in error.message


def test_it_reports_crashes_and_bad_output_by_code(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    images = mnist_images[:16]
    failing = run_error(onnx_file(tmp_path, "failing_model"), images, threads=1)
    nan = run_error(onnx_file(tmp_path, "nan_model"), images, threads=1)
    lying = run_error(onnx_file(tmp_path, "lying_model"), images, threads=1)
    assert failing.code == "model_crashed"
    assert "Reshape" in failing.message or "reshape" in failing.message
    assert nan.code == "model_bad_output"
    assert nan.message == "16 image(s) got non-finite scores (NaN or infinity), first image 0"
    assert lying.code == "model_bad_output"
    assert lying.message == (
        "for a batch of 16 images the model returned shape [16, 5]; expected [16, 10]")


def test_it_refuses_images_of_the_wrong_shape_before_starting_a_child(tmp_path: Path) -> None:
    path = onnx_file(tmp_path, "linear_model")
    wrong = np.zeros((4, 3, 28, 28), np.float32)
    assert run_error(path, wrong).code == "images_invalid"
    assert run_error(path, wrong[:, :1].astype(np.float64)).code == "images_invalid"
    assert run_error(path, wrong[:0, :1]).message == (
        "images must be float32 [N, 1, 28, 28] with N > 0, got float32 [0, 1, 28, 28]")
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        run_checkpoint(path, inputs=MNIST, images=wrong[:, :1], device="gpu")


def test_it_starts_children_with_a_scrubbed_environment_and_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    seen = diagnose_child(memory_limit_bytes=3 * GIB, cpu_seconds=77, threads=3)
    env = seen["env"]
    assert sorted(env) == sorted([
        "PATH", "HOME", "TMPDIR", "PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE",
        "LANG", "MALLOC_ARENA_MAX", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
    ])
    assert env["OMP_NUM_THREADS"] == "3"
    assert env["HOME"].startswith(seen["cwd"])
    assert seen["limits"] == {"RLIMIT_AS": [3 * GIB, 3 * GIB], "RLIMIT_CPU": [77, 82],
                              "RLIMIT_FSIZE": [2**20, 2**20], "RLIMIT_CORE": [0, 0]}
    assert seen["session_leader"] is True
    assert not Path(seen["cwd"]).exists()  # the private directory is gone afterwards


def test_it_chooses_batch_sizes_by_device_and_image_size() -> None:
    assert choose_batch_size("cpu", (1, 28, 28)) == 64
    assert choose_batch_size("cpu", (3, 32, 32)) == 64
    assert choose_batch_size("cpu", (3, 224, 224)) == 16
    assert choose_batch_size("cuda", (1, 28, 28)) == 4096
    assert choose_batch_size("cuda", (3, 224, 224)) == 256
