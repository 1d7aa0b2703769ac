"""How long the in-request check of a predictions upload takes, per format (the parse of
`workers.scoring.predictions.parse_predictions`, as leaderboard/submissions/file_checks.py runs
it), and so which file sizes the web process can check in about a second.

    python bench/inline_check.py            # every format, best of 3, peak memory of each
    python bench/inline_check.py --quick    # ImageNet float16 .npy and a top-5 .json, once

Inputs are generated at their real sizes: ImageNet's 50,000 x 1000 scores as float16 and
float32 .npy (100 and 200 MB, the largest real upload), the same float16 matrix in an
uncompressed and a compressed .npz, float16 softmax probabilities compressed (they compress
well, so cost the most per stored byte), top-5 ids as .npy/.json/.csv, CIFAR-10's 10,000 x 10
scores as .json/.csv, and 5,000 rows of ImageNet scores as .json/.csv (text costs the most per
byte). Each parse runs in a fresh process so that its peak resident memory (the rise over the
process's peak just before parsing, from /proc: Linux only) is its own. Prints seconds, ns per
byte, peak memory, and the time a file of the configured limit for its kind would take.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The defaults of evalserver/settings/core.py (EVALSERVER_INLINE_CHECK_BYTES, _TEXT_BYTES).
FAST_LIMIT = 256 * 2**20
SLOW_LIMIT = 16 * 2**20

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from workers.scoring.predictions import parse_predictions

def peak_kib():  # VmHWM: this process's own peak (ru_maxrss would include the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

path, n, c, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
before = peak_kib()
times = []
for _ in range(reps):
    start = time.perf_counter()
    parse_predictions(path, num_examples=n, num_classes=c, max_bytes=2**30)
    times.append(time.perf_counter() - start)
peak = peak_kib() - before
print(json.dumps({{"best": min(times), "peak_kib": peak}}))
"""


def make_inputs(out: Path, quick: bool) -> list[tuple[str, Path, int, int]]:
    rng = np.random.default_rng(0)
    made: list[tuple[str, Path, int, int]] = []

    def add(name: str, path: Path, n: int, c: int) -> None:
        made.append((name, path, n, c))

    scores = np.empty((50_000, 1000), dtype=np.float16)
    for start in range(0, 50_000, 5000):
        scores[start:start + 5000] = rng.standard_normal((5000, 1000)).astype(np.float16)
    np.save(out / "imagenet_f16.npy", scores)
    add("ImageNet scores float16 .npy", out / "imagenet_f16.npy", 50_000, 1000)
    top5 = np.argsort(rng.random((50_000, 1000)), axis=1)[:, :5]
    (out / "top5.json").write_text(json.dumps(top5.tolist()))
    add("ImageNet top-5 ids .json", out / "top5.json", 50_000, 1000)
    if quick:
        return made
    np.save(out / "imagenet_f32.npy", scores.astype(np.float32))
    add("ImageNet scores float32 .npy", out / "imagenet_f32.npy", 50_000, 1000)
    np.savez(out / "imagenet_f16.npz", scores=scores)
    add("ImageNet scores float16 .npz (stored)", out / "imagenet_f16.npz", 50_000, 1000)
    np.savez_compressed(out / "imagenet_f16_deflate.npz", scores=scores)
    add("ImageNet scores float16 .npz (compressed)", out / "imagenet_f16_deflate.npz",
        50_000, 1000)
    logits = scores.astype(np.float32) * 4
    logits -= logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    np.savez_compressed(out / "probabilities.npz", probabilities=probabilities.astype(np.float16))
    add("ImageNet probabilities float16 .npz (compressed)", out / "probabilities.npz",
        50_000, 1000)
    np.save(out / "top5.npy", top5)
    add("ImageNet top-5 ids .npy", out / "top5.npy", 50_000, 1000)
    np.savetxt(out / "top5.csv", top5, fmt="%d", delimiter=",")
    add("ImageNet top-5 ids .csv", out / "top5.csv", 50_000, 1000)
    cifar = rng.random((10_000, 10)).astype(np.float32)
    (out / "cifar.json").write_text(json.dumps(cifar.tolist()))
    add("CIFAR-10 scores .json", out / "cifar.json", 10_000, 10)
    np.savetxt(out / "cifar.csv", cifar, delimiter=",")
    add("CIFAR-10 scores .csv", out / "cifar.csv", 10_000, 10)
    part = scores[:5000].astype(np.float32)
    np.savetxt(out / "imagenet_5000.csv", part, fmt="%.6g", delimiter=",")
    add("ImageNet scores, 5,000 rows .csv", out / "imagenet_5000.csv", 5000, 1000)
    (out / "imagenet_5000.json").write_text(
        json.dumps(np.round(part.astype(float), 6).tolist()))
    add("ImageNet scores, 5,000 rows .json", out / "imagenet_5000.json", 5000, 1000)
    return made


def quick_kind(path: Path) -> bool:
    """As file_checks._quick_to_parse: .npy, or .npz with every member stored."""
    if path.suffix == ".npy":
        return True
    if path.suffix != ".npz":
        return False
    with zipfile.ZipFile(path) as archive:
        return all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two formats, one repetition")
    args = parser.parse_args()
    reps = 1 if args.quick else 3
    load = " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    print(f"in-request check of prediction uploads (best of {reps}; load average {load})")
    print(f"{'input':<50} {'MB':>7} {'s':>6} {'ns/B':>6} {'peak MB':>8} {'at limit':>9}")
    worst = {True: 0.0, False: 0.0}
    with tempfile.TemporaryDirectory(prefix="bench-inline-") as folder:
        for name, path, n, c in make_inputs(Path(folder), args.quick):
            done = subprocess.run(
                [sys.executable, "-c", CHILD.format(root=str(ROOT)), str(path), str(n), str(c),
                 str(reps)], check=True, capture_output=True, text=True)
            result = json.loads(done.stdout)
            size = path.stat().st_size
            per_byte = result["best"] / size
            fast = quick_kind(path)
            worst[fast] = max(worst[fast], per_byte)
            limit = FAST_LIMIT if fast else SLOW_LIMIT
            print(f"{name:<50} {size / 1e6:7.1f} {result['best']:6.3f} {per_byte * 1e9:6.1f} "
                  f"{result['peak_kib'] / 1024:8.0f} {per_byte * limit:8.2f}s")
    for fast, limit in ((True, FAST_LIMIT), (False, SLOW_LIMIT)):
        kind = ".npy / stored .npz" if fast else ".json / .csv / compressed .npz"
        print(f"slowest {kind}: {worst[fast] * 1e9:.1f} ns/B -> {limit / 2**20:.0f} MiB "
              f"limit in {worst[fast] * limit:.2f} s")
    rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"children's CPU: {rusage.ru_utime + rusage.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
