"""The about page's most confused classes (leaderboard/presentation/about/confusions.py): what a
request costs when the sums are counted afresh, kept, and grown by one new submission.

    python bench/confusions.py              # the 30 CIFAR-10 models, 1,000 ImageNet submissions
    python bench/confusions.py --quick      # the 30 CIFAR-10 models, 20 ImageNet submissions
    python bench/confusions.py --imagenet N

Setup (untimed), in a throwaway SQLite database and media folder: imagenet and cifar10 loaded
from the data directory; public scored submissions stored as the worker stores them (a compact
top-5 .npz per file; the confusions read nothing else): the 30 published CIFAR-10 models of
CIFAR-10.1 (their real predictions), and N ImageNet ones, each the real cleanlab ResNet-50 with
2% of its top-1 predictions changed at random. Timed, per benchmark, in this process (Django's
local-memory cache, as one web process): `benchmark_confusions` cold (every submission's file
read), warm (nothing changed), after one more submission (one file read), and the whole about
page (GET /benchmarks/<slug>/about/) warm.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.leaderboard import django_in_process  # noqa: E402


def store(benchmark: str, example_set: str, tops: list[np.ndarray], prefix: str) -> list[int]:
    """Public scored submissions with these top-1 arrays as compact files; their ids."""
    from django.contrib.auth.models import User
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.utils import timezone

    from leaderboard.catalog.models import ExampleSet
    from leaderboard.catalog.selectors import benchmark_get
    from leaderboard.submissions.models import Submission, SubmissionFile
    from workers.scoring.compact import compact_arrays

    owner, _ = User.objects.get_or_create(username="bench-owner")
    now = timezone.now()
    row = benchmark_get(slug=benchmark)
    images = ExampleSet.objects.get(slug=example_set)
    subs = Submission.objects.bulk_create(
        [Submission(owner=owner, benchmark=row, model_name=f"{prefix} {i:05d}",
                    status=Submission.Status.SCORED, started=now, finished_at=now, attempts=1)
         for i in range(len(tops))], batch_size=500)
    rng = np.random.default_rng(len(tops))
    files = []
    for sub, top1 in zip(subs, tops, strict=True):
        num_classes = int(row.num_classes)
        topk = np.empty((top1.size, 5), dtype=np.int16)
        topk[:, 0] = top1
        topk[:, 1:] = (top1[:, None] + rng.integers(1, num_classes, size=(top1.size, 4))) \
            % num_classes
        buffer = io.BytesIO()  # as the scoring worker stores it (workers/scoring/compact.py)
        np.savez(buffer, **compact_arrays({images.slug: {"topk": topk}}))
        name = default_storage.save(f"compact/{prefix}-{sub.pk}.npz",
                                    ContentFile(buffer.getvalue()))
        files.append(SubmissionFile(submission=sub, example_set=images, file=name,
                                    original_name="bench.npy", size=0, sha256="0" * 64,
                                    compact=name))
    SubmissionFile.objects.bulk_create(files, batch_size=500)
    return [s.pk for s in subs]


def timed(benchmark: str, extra: np.ndarray, example_set: str) -> None:
    from django.core.cache import cache
    from django.test import Client

    from leaderboard.catalog.selectors import benchmark_get
    from leaderboard.presentation.about.confusions import benchmark_confusions

    cache.clear()
    row = benchmark_get(slug=benchmark)
    t0 = time.perf_counter()
    first = benchmark_confusions(benchmark=row)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(20):
        benchmark_confusions(benchmark=row)
    warm = (time.perf_counter() - t0) / 20
    store(benchmark, example_set, [extra], f"{benchmark}-one-more")
    t0 = time.perf_counter()
    grown = benchmark_confusions(benchmark=row)
    one_more = time.perf_counter() - t0
    client = Client()
    client.get(f"/benchmarks/{benchmark}/about/")
    t0 = time.perf_counter()
    for _ in range(10):
        status = client.get(f"/benchmarks/{benchmark}/about/").status_code
    page = (time.perf_counter() - t0) / 10
    assert first is not None and grown is not None and status == 200, status
    assert grown.submissions == first.submissions + 1
    print(f"{benchmark}: {first.submissions} submissions counted cold in {cold * 1000:.0f} ms; "
          f"warm {warm * 1000:.1f} ms; after one more submission {one_more * 1000:.1f} ms; "
          f"the whole about page warm {page * 1000:.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 ImageNet submissions (CI)")
    parser.add_argument("--imagenet", type=int, help="default 1000 (20 with --quick)")
    args = parser.parse_args()
    count = args.imagenet or (20 if args.quick else 1000)
    work = Path(tempfile.mkdtemp(prefix="evalserver-confusions-"))
    try:
        django_in_process(work, "imagenet", "cifar10")
        from django.conf import settings

        from workers.scoring import datasets

        data_dir = Path(settings.EVALSERVER_DATA_DIR)
        folder = data_dir / "cifar10/model_predictions/original_predictions"
        cifar = [np.array(json.loads(p.read_text()), dtype=np.int64)
                 for p in sorted(folder.glob("*_predictions.json"))]
        base = datasets.imagenet_cleanlab_to_canonical(data_dir, np.load(
            data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")).astype(np.int64)
        rng = np.random.default_rng(0)

        def imagenet_model() -> np.ndarray:
            top1 = base.copy()
            flip = rng.random(top1.size) < 0.02
            top1[flip] = rng.integers(0, 1000, size=int(flip.sum()))
            return top1

        t0 = time.perf_counter()
        store("cifar10", "cifar10-test", cifar[:-1], "cifar10")
        store("imagenet", "imagenet-val", [imagenet_model() for _ in range(count)], "imagenet")
        print(f"Setup: {len(cifar) - 1} + 1 CIFAR-10 models, {count} + 1 ImageNet submissions, "
              f"{time.perf_counter() - t0:.1f} s; load {os.getloadavg()[0]:.2f}")
        timed("cifar10", cifar[-1], "cifar10-test")
        timed("imagenet", imagenet_model(), "imagenet-val")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
