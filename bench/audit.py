"""Label audits on the real MNIST test set: AUL (probe trained on the images) and confident
learning (over the cross-validated probabilities of cleanlab/label-errors), with precision and
recall against the 15 errors human validators confirmed (mnist/cleanlab_mturk.json).

    python bench/audit.py            # full figures: 10,000 images, the default AulConfig
    python bench/audit.py --quick    # the first 1,000 images, 5 epochs (what CI runs)

Quick mode uses 5 epochs with batches of 64 (the configuration tests/workers/audits uses)
rather than 2: with only 2 epochs the mixture splits the clean examples and its figures mean
nothing.

Besides the real labels (about 0.15% wrong), the AUL audit is also run on the same images
with 10% of the labels flipped (seed 0), where the truth is known for every example: the real
set says how the flags compare with human judgement, the flipped one whether the method finds
noise when there is some. Times are wall-clock seconds on whatever machine runs this.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.audits import (  # noqa: E402
    AulConfig,
    load_validated_errors,
    precision_recall,
    run_aul_audit,
    run_confident_learning,
)
from workers.scoring import datasets  # noqa: E402


def flip_labels(labels: np.ndarray, fraction: float, seed: int = 0) -> tuple[np.ndarray, set[int]]:
    """A copy of `labels` with `fraction` of them moved to another class, and which ones."""
    rng = np.random.default_rng(seed)
    n = labels.shape[0]
    flipped = np.sort(rng.choice(n, size=int(n * fraction), replace=False))
    noisy = labels.copy()
    noisy[flipped] = (noisy[flipped] + rng.integers(1, 10, size=flipped.size)) % 10
    return noisy, set(flipped.tolist())


def describe(scores: dict) -> str:
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    text = (
        f"precision {pct(scores['precision'])} ({scores['true_positives']}/{scores['flagged']}), "
        f"recall {pct(scores['recall'])} ({scores['true_positives']}/{scores['validated_errors']})"
    )
    if "precision_checked" in scores:
        text += (
            f", precision over human-checked flags {pct(scores['precision_checked'])} "
            f"({scores['true_positives']}/{scores['flagged_checked']})"
        )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 images, 5 epochs, for CI")
    parser.add_argument("--data-dir", type=Path, default=datasets.default_data_dir())
    args = parser.parse_args()
    data_dir = args.data_dir

    images = datasets.read_mnist_images(data_dir)
    labels = datasets.read_labels_npy(
        data_dir / "mnist/original_labels.npy", size=10_000, num_classes=10
    ).astype(np.int64)
    validated = load_validated_errors(data_dir, "mnist")
    config = AulConfig()
    n = 10_000
    if args.quick:
        n, config = 1_000, dataclasses.replace(config, epochs=5, batch_size=64)
    images, labels = images[:n], labels[:n]
    # Only validations of examples in the audited subset can count.
    errors = {i for i in validated.errors if i < n}
    checked = {i for i in validated.checked if i < n}

    print(
        f"MNIST test, first {n:,} images; {len(errors)} human-validated label errors among "
        f"{len(checked)} checked examples (threshold {validated.threshold})"
    )
    print(
        f"AUL probe: {config.epochs} epochs, batch {config.batch_size}, SGD lr {config.lr} "
        f"momentum {config.momentum}, {config.channels}/{2 * config.channels} channels, "
        f"{config.num_threads} thread(s), seed {config.seed}, {config.device}"
    )

    start = time.perf_counter()
    result = run_aul_audit(images, labels, config=config, num_classes=10)
    wall = time.perf_counter() - start
    print(
        f"  AUL, real labels:        {wall:6.2f} s (train {result.train_seconds:.2f}, "
        f"mixture {result.fit_seconds:.2f}); estimated noise rate {result.noise_rate:.4f}; "
        f"flagged {result.num_flagged:,} ({result.num_flagged / n:.2%})"
    )
    mixture = result.mixture
    print(
        f"    mixture: low mean {mixture.means[0]:.3f} sd {mixture.stds[0]:.3f} weight "
        f"{mixture.weights[0]:.4f}; high mean {mixture.means[1]:.3f} sd {mixture.stds[1]:.3f} "
        f"weight {mixture.weights[1]:.4f}"
    )
    print(f"    vs validated errors: {describe(precision_recall(result.flagged, errors, checked))}")
    if not args.quick:
        again = run_aul_audit(images, labels, config=config, num_classes=10)
        same = np.array_equal(again.aul, result.aul)
        print(f"    second run with the same seed: AUL bit-identical: {'yes' if same else 'NO'}")

    noisy, flipped = flip_labels(labels, 0.10)
    start = time.perf_counter()
    synthetic = run_aul_audit(images, noisy, config=config, num_classes=10)
    wall = time.perf_counter() - start
    print(
        f"  AUL, 10% labels flipped: {wall:6.2f} s; estimated noise rate "
        f"{synthetic.noise_rate:.4f} (true 0.1000); flagged {synthetic.num_flagged:,}"
    )
    print(f"    vs flipped labels: {describe(precision_recall(synthetic.flagged, flipped))}")

    probs = np.load(data_dir / "mnist/cleanlab_cv_probabilities.npy", allow_pickle=False)[:n]
    start = time.perf_counter()
    cl = run_confident_learning(labels, [probs], num_classes=10)
    wall = time.perf_counter() - start
    print(
        f"  confident learning ({cl.options.filter_by}, cleanlab): {wall:6.3f} s; "
        f"flagged {cl.num_flagged} ({cl.flagged_fraction:.2%}); cleanlab's estimated noise rate "
        f"{cl.estimated_noise_rate:.4f} ({cl.estimated_num_issues} issues)"
    )
    print(f"    vs validated errors: {describe(precision_recall(cl.flagged, errors, checked))}")


if __name__ == "__main__":
    main()
