"""Validate and load every benchmark bundle (benchmarks/*.toml) from a cold cache.

    python bench/bundle.py            # 5 rounds per bundle, and ImageNet in a fresh process
    python bench/bundle.py --quick    # 1 round per bundle (what CI runs)

One round = parse and check the manifest, then compile every label set (read and check the
class names, example names and label files, build the arrays, hash them, write the .npz cache)
into an empty cache folder. ImageNet's two multi-label sets need the human_accuracy file, which
is not public here: a synthetic one in its layout (20,000 annotated images, 68 ImageNet-M
images) is written first (untimed) so that all seven of its label sets are built. Goals
(issue 11, 2 cores): ImageNet under 10 s, each other bundle under 2 s.

Then the whole server path: `benchmark_add` of every bundle (`leaderboard.catalog.bundle_loading
.benchmark_bundle_add`: compile, check, store the compiled labels, write the rows in one
transaction) into a fresh, migrated SQLite database with an empty cache and storage, timed in a
Django process after its start-up; the same goals apply.

A missed goal fails the full run (exit status 1). --quick reports it and fails only when a
bundle does not load: CI machines are shared and loaded, and CI judges no timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.scoring import datasets  # noqa: E402
from workers.scoring.bundles import (  # noqa: E402
    MULTILABEL_SOURCE,
    builtin_bundle_paths,
    compile_bundle,
    read_bundle,
)

GOALS = {"imagenet": 10.0}
DEFAULT_GOAL = 2.0


def synthetic_multilabel_file(data_dir: Path, out: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    original = datasets.imagenet_original_labels(data_dir)
    wnids = datasets.imagenet_wnids(data_dir)
    annotated = rng.choice(50_000, size=20_000, replace=False)
    annots = {}
    for i in annotated.tolist():
        entry = {"correct": [wnids[original[i]]]}
        if rng.random() < 0.5:
            entry["wrong"] = [wnids[int(rng.integers(1000))]]
        annots[datasets.imagenet_file_name(i)] = entry
    names = [datasets.imagenet_file_name(i) for i in annotated[:200].tolist()]
    path = out / "human_accuracy_synthetic.json"
    path.write_text(json.dumps({"initial_annots": annots,
                                "problematic_images": {n: True for n in names[68:100]},
                                "imagenet_m": names[:68]}))
    return path


def one_round(manifest: Path, data_dir: Path, sources: dict[str, Path]) -> tuple[float, int]:
    """Seconds to validate and load the bundle into an empty cache, and its label-set count."""
    with tempfile.TemporaryDirectory(prefix="bench-bundle-") as cache:
        start = time.perf_counter()
        compiled = compile_bundle(read_bundle(manifest), data_dir=data_dir,
                                  cache_dir=Path(cache), sources=sources)
        return time.perf_counter() - start, len(compiled)


def fresh_process(manifest: Path, data_dir: Path, multilabel: Path) -> float:
    """Wall seconds of a new Python process that imports the package and loads the bundle."""
    code = (
        "import sys, tempfile; from pathlib import Path; sys.path.insert(0, sys.argv[1])\n"
        "from workers.scoring.bundles import compile_bundle, read_bundle\n"
        "sources = {'multilabel_file': Path(sys.argv[4])}\n"
        "with tempfile.TemporaryDirectory() as cache:\n"
        "    compile_bundle(read_bundle(Path(sys.argv[2])), data_dir=Path(sys.argv[3]),\n"
        "                   cache_dir=Path(cache), sources=sources)\n"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(ROOT), str(manifest), str(data_dir),
                    str(multilabel)], check=True)
    return time.perf_counter() - start


DATABASE_LOAD = """
import json, sys, time
from pathlib import Path
import django
django.setup()
from leaderboard.catalog.bundle_loading import benchmark_bundle_add
seconds = {}
for manifest in sys.argv[1:]:
    start = time.perf_counter()
    benchmark_bundle_add(path=Path(manifest))
    seconds[Path(manifest).stem] = time.perf_counter() - start
print(json.dumps(seconds))
"""


def database_load(data_dir: Path, multilabel: Path) -> dict[str, float]:
    """Seconds of `benchmark_add` per bundle into a fresh database, cache and storage."""
    with tempfile.TemporaryDirectory(prefix="bench-bundle-db-") as folder:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing",
               "DATABASE_URL": f"sqlite:///{folder}/db.sqlite3", "MEDIA_ROOT": f"{folder}/media",
               "EVALSERVER_CACHE_DIR": f"{folder}/cache", "EVALSERVER_DATA_DIR": str(data_dir),
               "EVALSERVER_MULTILABEL_FILE": str(multilabel)}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env,
                       check=True)
        out = subprocess.run([sys.executable, "-c", DATABASE_LOAD,
                              *map(str, builtin_bundle_paths())],
                             cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        seconds: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round per bundle, for CI")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    data_dir = datasets.default_data_dir(ROOT)
    print(f"data directory: {data_dir}; cores: {os.cpu_count()}; load: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="bench-multilabel-") as folder:
        multilabel = synthetic_multilabel_file(data_dir, Path(folder))
        sources = {MULTILABEL_SOURCE: multilabel}
        print(f"{'bundle':<12} {'label sets':>10} {'median s':>9} {'min s':>7} {'max s':>7}  goal")
        for manifest in builtin_bundle_paths():
            times, count = [], 0
            for _ in range(rounds):
                seconds, count = one_round(manifest, data_dir, sources)
                times.append(seconds)
            goal = GOALS.get(manifest.stem, DEFAULT_GOAL)
            median = statistics.median(times)
            verdict = "ok" if median < goal else "MISSED"
            if median >= goal:
                failed.append(manifest.stem)
            print(f"{manifest.stem:<12} {count:>10} {median:>9.3f} {min(times):>7.3f} "
                  f"{max(times):>7.3f}  < {goal:g} s {verdict}")
        print("benchmark_add into a fresh database (compile, check, store, rows):")
        for slug, seconds in database_load(data_dir, multilabel).items():
            goal = GOALS.get(slug, DEFAULT_GOAL)
            if seconds >= goal:
                failed.append(f"{slug} (database)")
            print(f"  {slug:<12} {seconds:7.3f} s  < {goal:g} s "
                  f"{'ok' if seconds < goal else 'MISSED'}")
        if not args.quick:
            seconds = fresh_process(ROOT / "benchmarks/imagenet.toml", data_dir, multilabel)
            print(f"imagenet in a fresh process (interpreter start and imports included): "
                  f"{seconds:.2f} s")
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if failed and args.quick:
        print(f"goal missed (reported; --quick judges no timing): {', '.join(failed)}")
    elif failed:
        sys.exit(f"goal missed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
