"""Speed of running a checkpoint submission on the 10,000 real MNIST test images.

    python bench/checkpoint.py            # full figures (3 repetitions, batch sweep, ResNet-20)
    python bench/checkpoint.py --quick    # one repetition of the main figures (what CI runs)

The timed path is the production one, run_checkpoint: the parent writes the preprocessed
images to a private .npy, starts the sandboxed child (`python -m workers.inference.child`),
which validates the file again, loads it, memory-maps the images, runs batched inference
and writes the scores, which the parent checks. Two figures per run: end to end (everything,
child start-up included) and inference only (the child's batched forward passes); "child
load" is the child's time to import the runtime, re-validate and load the model. The model
is the server's MNIST CNN (seeded weights: speed does not depend on training), as ONNX
(onnxruntime) and as safetensors (torch); the batch size is the worker's choice. Images are
preprocessed once beforehand, as a worker does.
On CUDA when a GPU is available (onnxruntime-gpu or a CUDA torch build).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from workers.inference import ImageSource, architectures, load_images  # noqa: E402
from workers.inference.preprocessing import Preprocessing, preprocessing_of  # noqa: E402
from workers.inference.sandbox import RunReport, default_threads, run_checkpoint_report  # noqa: E402
from workers.scoring import datasets  # noqa: E402


def inputs_of(slug: str) -> Preprocessing:
    """What the built-in benchmark's bundle declares a checkpoint receives."""
    from workers.scoring.bundles import builtin_bundle

    inputs = preprocessing_of(builtin_bundle(slug))
    assert inputs is not None
    return inputs


def export(inputs: Preprocessing, out: Path) -> dict[str, Path]:
    """The server's network the inputs name, seeded, as .onnx and .safetensors files."""
    torch.manual_seed(0)
    key, shape = str(inputs.architecture), inputs.input_shape
    model = architectures.build(key)
    paths = {"onnx": out / f"{key}.onnx", "safetensors": out / f"{key}.safetensors"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model, (torch.zeros(1, *shape),), str(paths["onnx"]), dynamo=False,
            input_names=["image"], output_names=["logits"],
            dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        )  # fmt: skip
    save_file(model.state_dict(), paths["safetensors"])
    return paths


def best_run(path: Path, inputs: Preprocessing, images: np.ndarray, device: str, repeats: int,
             batch_size: int | None = None) -> RunReport:
    runs = [
        run_checkpoint_report(path, inputs=inputs, images=images, device=device,
                              batch_size=batch_size)
        for _ in range(repeats)
    ]  # fmt: skip
    return min(runs, key=lambda r: r.wall_seconds)


def show(label: str, report: RunReport, n: int) -> None:
    wall, infer = report.wall_seconds, report.inference_seconds
    print(
        f"  {label:24s} {n / wall:8,.0f} img/s end to end ({wall:5.2f} s)"
        f"  {n / infer:8,.0f} img/s inference only ({infer:5.2f} s)"
        f"  child load {report.load_seconds:4.2f} s  batch {report.batch_size},"
        f" {report.threads} thread(s), on {report.device} [{report.provider}]"
    )


def in_process(paths: dict[str, Path], images: np.ndarray, batch: int) -> tuple[float, float]:
    """Seconds for the same inference in this process, no child: (onnxruntime, torch)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = default_threads()
    session = ort.InferenceSession(str(paths["onnx"]), options, providers=["CPUExecutionProvider"])
    start = time.perf_counter()
    for s in range(0, len(images), batch):
        session.run(None, {"image": images[s : s + batch]})
    onnx_s = time.perf_counter() - start
    torch.manual_seed(0)
    model = architectures.build("mnist-cnn").to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    start = time.perf_counter()
    with torch.inference_mode():
        for s in range(0, len(images), batch):
            x = torch.from_numpy(images[s : s + batch])
            model(x.contiguous(memory_format=torch.channels_last))
    return onnx_s, time.perf_counter() - start


UPLOAD_CHECK = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from workers.inference import detect_and_validate
from workers.inference.preprocessing import preprocessing_of
from workers.scoring.bundles import builtin_bundle
def rss(field):
    with open("/proc/self/status") as handle:
        return int(dict(line.split(":", 1) for line in handle)[field].split()[0]) * 1024
open("/proc/self/clear_refs", "w").write("5")  # reset the peak to here
before = rss("VmRSS")
detect_and_validate(sys.argv[2], inputs=preprocessing_of(builtin_bundle("mnist")),
                    original_name="big.onnx",
                    max_bytes=1 << 31, parse_onnx=sys.argv[3] == "parse")
print(rss("VmHWM") - before)
"""
TARGET_UPLOAD_MEMORY = 2.0  # the web process's peak rise, at most 2x the upload's size


def upload_check_memory(tmp: Path, megabytes: int = 60) -> tuple[int, int, int]:
    """(file bytes, peak rise of a process checking it as the web does, and as it would with
    the graph parsed): a linear MNIST model padded with an unused initializer to `megabytes`."""
    import onnx
    from onnx import helper, numpy_helper

    features, classes = 28 * 28, 10
    weight = numpy_helper.from_array(np.zeros((features, classes), np.float32), "w")
    pad = numpy_helper.from_array(np.zeros(megabytes * 2**18, np.float32), "unused")
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("MatMul", ["f", "w"], ["y"])],
        "padded", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 1, 28, 28])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", classes])],
        [weight, pad])
    path = tmp / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    peaks = []
    for mode in ("web", "parse"):
        out = subprocess.run([sys.executable, "-c", UPLOAD_CHECK, str(ROOT), str(path), mode],
                             capture_output=True, text=True, check=True)
        peaks.append(int(out.stdout.strip().splitlines()[-1]))
    return path.stat().st_size, peaks[0], peaks[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, for CI")
    parser.add_argument("--data-dir", type=Path, default=datasets.default_data_dir())
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    devices = ["cpu"]
    if torch.cuda.is_available() or "CUDAExecutionProvider" in ort.get_available_providers():
        devices.append("cuda")

    start = time.perf_counter()
    mnist = inputs_of("mnist")
    images = load_images(ImageSource("idx", args.data_dir / "mnist/t10k-images-idx3-ubyte.gz"),
                         inputs=mnist, size=10000)
    n = len(images)
    print(
        f"MNIST test set, {n:,} real images, preprocessed once in "
        f"{time.perf_counter() - start:.2f} s; {os.cpu_count()} CPU core(s), "
        f"load average {os.getloadavg()[0]:.1f}; best of {repeats}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        size, web, parsed = upload_check_memory(Path(tmp))
        print(
            f"Upload check of a {size / 2**20:.0f} MB ONNX file as the web process does it: "
            f"peak memory +{web / 2**20:.0f} MB ({web / size:.2f}x the file; target < "
            f"{TARGET_UPLOAD_MEMORY:.0f}x: "
            f"{'met' if web < TARGET_UPLOAD_MEMORY * size else 'MISSED'}); parsing the graph "
            f"there would take +{parsed / 2**20:.0f} MB ({parsed / size:.1f}x)"
        )
        paths = export(mnist, Path(tmp))
        for device in devices:
            print(f"{device.upper()}, through run_checkpoint (sandboxed child process):")
            for fmt in ("onnx", "safetensors"):
                show(f"MNIST CNN, {fmt}", best_run(paths[fmt], mnist, images, device, repeats), n)
        if args.quick:
            return
        print("CPU, ONNX batch-size sweep (inference only):")
        for batch in (16, 64, 256, 512, 2048):
            report = best_run(paths["onnx"], mnist, images, "cpu", repeats, batch_size=batch)
            print(f"  batch {batch:5d}  {n / report.inference_seconds:9,.0f} img/s")
        onnx_s, torch_s = in_process(paths, images, 64)
        print(
            f"CPU, the same inference in this process without a child (batch 64): onnxruntime "
            f"{n / onnx_s:,.0f} img/s, torch {n / torch_s:,.0f} img/s"
        )
        cifar10 = inputs_of("cifar10")
        resnet = export(cifar10, Path(tmp))
        synthetic = np.random.default_rng(0).standard_normal((n, 3, 32, 32), dtype=np.float32)
        print(f"ResNet-20 on {n:,} synthetic CIFAR-10-shaped images (no CIFAR images here):")
        for device in devices:
            for fmt in ("onnx", "safetensors"):
                report = best_run(resnet[fmt], cifar10, synthetic, device, 1)
                show(f"{device} ResNet-20, {fmt}", report, n)


if __name__ == "__main__":
    main()
