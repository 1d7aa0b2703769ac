"""The boosting attack of Blum and Hardt (ICML 2015, section 5) on a hidden label set, through
the service layer, under each release mechanism (docs/metrics.md §17).

    python bench/ladder.py                  # 4,000 hidden labels, 1,000 random submissions
    python bench/ladder.py --quick          # 4,096 labels, 500 submissions (what CI runs)
    python bench/ladder.py --submissions K --examples N --seed S --step ETA
    python bench/ladder.py --sweep          # the release core alone, over seeds and steps
    python bench/ladder.py --profile        # cProfile the first mechanism's submissions

Setup (untimed), in a throwaway SQLite database and media folder (on /dev/shm where there is
one: `--work-dir`): one benchmark per mechanism, its bundle (`files = "bundle"`, two classes)
written to a temporary folder and added with `benchmark_add`: a hidden label set `hidden` of N
binary labels drawn uniformly at random (seeded) on the main example set, released by `exact`,
`ladder` (the bundle's step: none, so the server's default 3/sqrt(N), unless `--step` is given)
or `parameter_free`, and a public `original` on a separate example set of two examples (a
bundle needs a public label set, its headline; submissions predict the main example set only).
The three benchmarks hold the same draw, each rotated by one more example, so that each has a
label file and a content hash of its own (every figure is the same under rotation; identical
files would share one stored compiled file, which the server also handles:
tests/catalog/test_shared_compiled_labels.py).
One participant for all three, the daily quota lifted (EVALSERVER_DAILY_QUOTA=0).

Timed, per mechanism: the participant submits K uniformly random label vectors through the
services as the web side and the worker do (`submission_create`, then the worker's task run
eagerly, `score_submission.apply`: its claim, `submission_scores_compute` and the Release row
made in its transaction; nothing is sent to a broker, so the boards' significance refresh
queued after each scoring does not run), reads each one's release through
the selector the API uses (`release_views_for_submission`), keeps those whose own released
accuracy is above chance (0.5; under the Ladders a submission that released nothing of its own
is not kept: that is what the participant sees) and submits their per-example majority vote
(ties, and the vote of no vector, broken by a seeded coin). Printed per mechanism: the final
submission's released score (its own released number or, where it released nothing, the
participant's released best that the board shows; marked *), its true accuracy (on a fresh
draw of N labels from the same distribution, the paper's "test" line), its accuracy on the
hidden labels, the gap (released - true, in points; also released - 50%, the exact truth: a
vector chosen without the labels has expected accuracy 50%), the vectors kept, the wall time.

Requirements (exit status 1 when one fails): under `exact` the released score is at least 5
points above the truth (the attack works), under `ladder` at most 2 points (the mechanism
holds); `parameter_free` is reported only. Checked too, in every mode (exit status 1): every
submission scored, every release equal to what the release core (`release_next`) gives on the
same hits in the same order, every stored hidden score equal to the accuracy counted here,
the board's hidden column (`release_board_cells`) showing the final release.

`--quick` is a smoke test of the whole path whose verdicts are still checked: 4,096 labels and
500 submissions. Over seeds 0-999 on the release core (`--sweep --sweep-seeds 1000 --examples
4096 --submissions 500`): `exact` +5.15 to +10.91 points against the fresh draw (never under
5); `ladder` at its default step (3/sqrt(N): the first release is the first submission's own
accuracy, and a rung is six standard errors) over 2 points in 36 seeds (3.6%) against the
fresh draw and in 9 against 50%: those where the first random vector alone is about 2.5
standard errors above chance, or the fresh draw that far below it. The full size (seed 0)
meets both (bench/README.md, with the sweep over 300 seeds).

`--sweep` runs the attack on the release core alone (`workers/scoring/release.py`; the full
run checks that the services give the same releases) for `--sweep-seeds` seeds (default 10)
with `exact`, `parameter_free`, the Ladder's default step, each of `--sweep-steps` and each
C/sqrt(N) of `--sweep-scales`, pooled over the sizes of `--sweep-examples` if given (where
chance falls between the rungs changes with N), and prints the distribution of the gap,
against the fresh draw and against 50%.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.scoring import release as core  # noqa: E402

MECHANISMS = ("exact", "ladder", "parameter_free")
CHANCE = 0.5
EXACT_MIN_GAP = 5.0  # points: the attack works
LADDER_MAX_GAP = 2.0  # points: the mechanism holds
HIDDEN, PUBLIC = "hidden", "original"


# -- the attack, on the pure core -------------------------------------------------------------


@dataclass(frozen=True)
class Draw:
    """One seed's data: the hidden labels, the random vectors, a fresh draw, the tie coins."""

    hidden: np.ndarray  # (n,) int64 in {0, 1}
    vectors: np.ndarray  # (k, n) int64 in {0, 1}
    fresh: np.ndarray  # (n,) a second sample from the same distribution: the "test" line
    coin: np.ndarray  # (n,) the majority vote's tie-breaker


def draw(*, seed: int, examples: int, submissions: int) -> Draw:
    hidden_rng, vectors_rng, fresh_rng, coin_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    return Draw(hidden=hidden_rng.integers(0, 2, size=examples),
                vectors=vectors_rng.integers(0, 2, size=(submissions, examples)),
                fresh=fresh_rng.integers(0, 2, size=examples),
                coin=coin_rng.integers(0, 2, size=examples))


def rotated(data: Draw, shift: int) -> Draw:
    """The same draw with every example moved `shift` places (example i is the draw's
    i + shift): every figure of the attack is the same, only the label files differ."""
    return Draw(hidden=np.roll(data.hidden, -shift), vectors=np.roll(data.vectors, -shift, axis=1),
                fresh=np.roll(data.fresh, -shift), coin=np.roll(data.coin, -shift))


def majority(kept: np.ndarray, coin: np.ndarray) -> np.ndarray:
    """The per-example majority vote of the kept vectors (rows); a tie (or no vector) takes
    the coin's label."""
    ones = kept.sum(axis=0, dtype=np.int64)
    twice = 2 * ones
    return np.where(twice > kept.shape[0], 1, np.where(twice < kept.shape[0], 0, coin))


def keeps(release: core.Release) -> bool:
    """What the participant keeps: a submission whose own released accuracy beats chance."""
    return release.released is not None and release.released > CHANCE


def shown(release: core.Release) -> float:
    """The final submission's released score: its own number, else the board's best."""
    return release.released if release.released is not None else release.best


@dataclass(frozen=True)
class Outcome:
    mechanism: str
    step: float | None  # the Ladder's step as used; None for the others
    kept: int
    released: float  # the final submission's released score (its own or the board's best)
    own: bool  # whether it released a number of its own
    holdout: float  # the final vector's accuracy on the hidden labels
    fresh: float  # on the fresh draw: the true accuracy
    releases: tuple[core.Release, ...]  # every submission's, the final one last

    @property
    def gap(self) -> float:
        """Released - true, in points."""
        return 100.0 * (self.released - self.fresh)

    @property
    def gap_truth(self) -> float:
        """Released - the exact truth (any fixed vector's expected accuracy is 50%), in points."""
        return 100.0 * (self.released - CHANCE)


def attack_core(data: Draw, *, mechanism: str, step: float | None) -> Outcome:
    """The attack on the release core alone (what the service layer must reproduce)."""
    state: core.LadderState | None = None
    releases = []
    hits_all = data.vectors == data.hidden
    for hits in hits_all:
        state, release = core.release_next(mechanism=mechanism, step=step, state=state, hits=hits)
        releases.append(release)
    kept = np.array([keeps(r) for r in releases], dtype=bool)
    final = majority(data.vectors[kept], data.coin)
    state, last = core.release_next(mechanism=mechanism, step=step, state=state,
                                    hits=final == data.hidden)
    releases.append(last)
    return Outcome(mechanism=mechanism, step=used_step(mechanism, step, data.hidden.size),
                   kept=int(kept.sum()), released=shown(last), own=last.released is not None,
                   holdout=1.0 - float(np.mean(final != data.hidden)),
                   fresh=float(np.mean(final == data.fresh)), releases=tuple(releases))


def used_step(mechanism: str, step: float | None, examples: int) -> float | None:
    if mechanism != "ladder":
        return None
    return step if step is not None else core.default_step(examples)


# -- the attack, through the services ----------------------------------------------------------


def bundle_write(folder: Path, *, mechanism: str, step: float | None, hidden: np.ndarray) -> Path:
    """A bundle (files = "bundle") whose main example set carries the hidden label set."""
    folder.mkdir(parents=True)
    np.save(folder / "hidden.npy", hidden.astype(np.int64))
    np.save(folder / "public.npy", np.array([0, 1], dtype=np.int64))
    release = f'release = "{mechanism}"\n'
    if mechanism == "ladder" and step is not None:
        release += f"step = {step!r}\n"
    (folder / "benchmark.toml").write_text(f"""\
schema = 1
slug = "{slug(mechanism)}"
name = "Boosting attack ({mechanism})"
modality = "image"
files = "bundle"
main_example_set = "{main_set(mechanism)}"
headline = "{PUBLIC}"

[classes]
count = 2
source = "inline"
names = ["zero", "one"]

[[example_sets]]
slug = "{main_set(mechanism)}"
name = "Holdout"
size = {hidden.size}

[[example_sets]]
slug = "{slug(mechanism)}-public"
name = "Public"
size = 2

[[label_sets]]
slug = "{PUBLIC}"
kind = "single"
example_set = "{slug(mechanism)}-public"
name = "Public labels"
labels = "public.npy"

[[label_sets]]
slug = "{HIDDEN}"
kind = "single"
example_set = "{main_set(mechanism)}"
name = "Hidden labels"
labels = "hidden.npy"
hidden = true
{release}""")
    return folder / "benchmark.toml"


def slug(mechanism: str) -> str:
    return "attack-" + mechanism.replace("_", "-")


def main_set(mechanism: str) -> str:
    """The example set of the hidden labels (example-set slugs are unique server-wide)."""
    return f"{slug(mechanism)}-holdout"


@dataclass(frozen=True)
class Served:
    outcome: Outcome
    wall: float  # seconds, every submission created, scored and its release read
    problems: list[str]
    content_hash: str  # of the hidden labels' version


def attack_served(data: Draw, *, mechanism: str, step: float | None, owner: Any,
                  work: Path) -> Served:
    """The attack through the services: create, score as the worker does, read the release."""
    import io

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    from leaderboard.catalog.models import Benchmark, LabelSetVersion
    from leaderboard.catalog.phases.selectors import hidden_phase_current
    from leaderboard.submissions.models import Score
    from leaderboard.submissions.participation.services import participation_rules_set
    from leaderboard.submissions.releases.selectors import (
        ReleaseView,
        release_board_cells,
        release_views_for_submission,
    )
    from leaderboard.submissions.services import submission_create
    from leaderboard.tasks.cpu import score_submission

    path = bundle_write(work / "bundles" / mechanism, mechanism=mechanism, step=step,
                        hidden=data.hidden)
    call_command("benchmark_add", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    benchmark = Benchmark.objects.get(slug=slug(mechanism))
    # open to every account: a hidden label set's default (approval, a verified email) would
    # refuse the one participant, who is what the attack measures (docs/hosts/participation.md)
    participation_rules_set(benchmark=benchmark, by=None, mode="open",
                            require_verified_email=False, terms="")
    version = LabelSetVersion.objects.get(label_set__benchmark=benchmark, label_set__slug=HIDDEN)
    problems: list[str] = []

    def submit(name: str, vector: np.ndarray) -> tuple[int, ReleaseView]:
        body = ("[" + ",".join(map(str, vector.tolist())) + "]").encode()
        submission = submission_create(
            owner=owner, benchmark=benchmark, model_name=name,
            files={main_set(mechanism): SimpleUploadedFile("preds.json", body)})
        status = score_submission.apply(args=[submission.pk],
                                        task_id=f"bench-ladder-{submission.pk}").get()
        if status != "scored":
            problems.append(f"{name}: the worker's task answered {status!r}, not 'scored'")
        views = [v for v in release_views_for_submission(submission=submission)
                 if v.label_set == HIDDEN]
        if len(views) != 1:
            raise SystemExit(f"{name}: {len(views)} releases on {HIDDEN!r}, expected one")
        return submission.pk, views[0]

    started = time.perf_counter()
    ids, views = [], []
    for i, vector in enumerate(data.vectors):
        pk, view = submit(f"random {i:05d}", vector)
        ids.append(pk)
        views.append(view)
    kept = np.array([v.released is not None and v.released > CHANCE for v in views], dtype=bool)
    final = majority(data.vectors[kept], data.coin)
    pk, last = submit("majority vote", final)
    ids.append(pk)
    views.append(last)
    wall = time.perf_counter() - started

    # Counts: the stored hidden scores, and each release against the core's on the same hits.
    correct = dict(Score.with_hidden.filter(submission_id__in=ids, label_set__slug=HIDDEN)
                   .values_list("submission_id", "correct"))
    vectors = [*data.vectors, final]
    expected_correct = [int(np.count_nonzero(v == data.hidden)) for v in vectors]
    wrong = [i for i, (pk, c) in enumerate(zip(ids, expected_correct, strict=True))
             if correct.get(pk) != c]
    if wrong:
        problems.append(f"{len(wrong)} stored hidden scores differ from the counted accuracy "
                        f"(first: submission {wrong[0]})")
    reference = attack_core(data, mechanism=mechanism, step=step)
    differ = [i for i, (v, r) in enumerate(zip(views, reference.releases, strict=True))
              if (v.improved, v.released, v.best) != (r.improved, r.released, r.best)]
    if differ:
        problems.append(f"{len(differ)} releases differ from the release core's (first: "
                        f"submission {differ[0]}: {views[differ[0]]} vs "
                        f"{reference.releases[differ[0]]})")
    # What the board shows: the final submission's figure under "exact"; under the Ladders
    # the participant's released best, on one row.
    phase = hidden_phase_current(label_set_id=version.label_set_id)
    cells = release_board_cells(version_id=version.pk, phase_id=phase.pk if phase else None,
                                submission_ids=ids)
    board = [cell["accuracy"] for cell in cells.values()]
    if mechanism == "exact":
        board_ok = cells.get(pk, {}).get("accuracy") == last.released
    else:
        board_ok = board == [last.best]
    if not board_ok:
        problems.append(f"the board's hidden column shows {board[-3:]} (last of {len(board)}), "
                        f"not the final submission's release ({last.released}, best "
                        f"{last.best})")
    outcome = Outcome(mechanism=mechanism, step=last.step, kept=int(kept.sum()),
                      released=last.released if last.released is not None else last.best,
                      own=last.released is not None,
                      holdout=1.0 - float(np.mean(final != data.hidden)),
                      fresh=float(np.mean(final == data.fresh)), releases=reference.releases)
    return Served(outcome=outcome, wall=wall, problems=problems, content_hash=version.content_hash)


# -- printing and verdicts ------------------------------------------------------------------------


def verdict(outcome: Outcome) -> str | None:
    """'met' / 'FAILED' against the mechanism's requirement, None when it has none."""
    if outcome.mechanism == "exact":
        return "met" if outcome.gap >= EXACT_MIN_GAP else "FAILED"
    if outcome.mechanism == "ladder":
        return "met" if outcome.gap <= LADDER_MAX_GAP else "FAILED"
    return None


def requirement(mechanism: str) -> str:
    return {"exact": f"gap >= +{EXACT_MIN_GAP:g}", "ladder": f"gap <= +{LADDER_MAX_GAP:g}"
            }.get(mechanism, "reported only")


def describe(mechanism: str, step: float | None) -> str:
    return f"ladder (step {step:.4f})" if mechanism == "ladder" and step is not None \
        else mechanism


def run_served(args: argparse.Namespace, examples: int, submissions: int) -> int:
    from bench.leaderboard import database_migrated, server_env

    data = draw(seed=args.seed, examples=examples, submissions=submissions)
    work = Path(tempfile.mkdtemp(prefix="evalserver-ladder-", dir=args.work_dir))
    failed = False
    try:
        env = server_env(work)
        env["EVALSERVER_DAILY_QUOTA"] = "0"  # one participant, K + 1 submissions a day
        database_migrated(env)
        # No broker and no Redis: nothing is sent (below), and the cache is in-process.
        os.environ.update({k: env[k] for k in (
            "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "MEDIA_ROOT", "EVALSERVER_CACHE_DIR",
            "SECRET_KEY", "DEBUG", "LOG_LEVEL", "EVALSERVER_DAILY_QUOTA")})
        import django

        django.setup()
        from django.contrib.auth.models import User

        from leaderboard import queue

        # The worker's task runs here, eagerly, instead of being sent to a broker; so does
        # nothing else (the boards' significance refresh after each scoring is not run).
        queue.task_send = lambda name, job_id, **_: None
        owner = User.objects.create(username="bench-participant")

        print(f"Boosting attack (Blum & Hardt 2015, §5): {examples:,} hidden binary labels, "
              f"{submissions:,} random submissions + their majority vote, seed {args.seed}; "
              f"one participant, through submission_create, score_submission.apply and "
              f"release_views_for_submission; SQLite and media in {work.parent}")
        print(f"  {'mechanism':<24} {'released':>9} {'true':>7} {'holdout':>8} {'gap':>6} "
              f"{'vs 50%':>6} {'kept':>5} {'wall':>7} {'per sub.':>8}  requirement")
        hashes: set[str] = set()
        for shift, mechanism in enumerate(MECHANISMS):
            step = args.step if mechanism == "ladder" else None
            # Rotated: identical label files in two benchmarks would share one compiled file
            # (labelsets/<content hash>.npz, which names the first one's example set), and the
            # second benchmark's submissions would get no score on them.
            mine = rotated(data, shift)
            if args.profile and shift == 0:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                served = profiler.runcall(attack_served, mine, mechanism=mechanism, step=step,
                                          owner=owner, work=work)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            else:
                served = attack_served(mine, mechanism=mechanism, step=step, owner=owner,
                                       work=work)
            if served.content_hash in hashes:
                served.problems.append("its hidden labels have the content hash of another "
                                       "mechanism's benchmark")
            hashes.add(served.content_hash)
            o = served.outcome
            mark = verdict(o)
            failed |= mark == "FAILED" or bool(served.problems)
            where = "" if o.own else "*"
            print(f"  {describe(mechanism, o.step):<24} {o.released:>8.2%}{where:1} "
                  f"{o.fresh:>7.2%} {o.holdout:>8.2%} {o.gap:>+6.2f} {o.gap_truth:>+6.2f} "
                  f"{o.kept:>5,} {served.wall:>6.1f}s "
                  f"{1000 * served.wall / (submissions + 1):>6.1f}ms"
                  f"  {requirement(mechanism)}" + (f": {mark}" if mark else ""))
            for problem in served.problems:
                print(f"    PROBLEM: {problem}")
        print("  released: the final submission's own released accuracy; * where it released "
              "nothing of its own, the participant's released best that the board shows; "
              "true: its accuracy on a fresh draw of the labels; gap: released - true, in "
              "points; vs 50%: released - the exact truth; per sub.: wall / (K + 1)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def run_sweep(args: argparse.Namespace, examples: int, submissions: int) -> int:
    """The attack on the release core alone, over seeds (and sizes), per mechanism and step."""
    sizes = args.sweep_examples or [examples]
    # (name, mechanism, the Ladder's step for a size N: None is the server's default)
    configs: list[tuple[str, str, Any]] = [
        ("exact", "exact", lambda n: None), ("parameter_free", "parameter_free", lambda n: None)]
    default = "ladder default 3/sqrt(N)" if len(sizes) > 1 else \
        f"ladder {core.default_step(sizes[0]):.4f} default"
    configs.append((default, "ladder", lambda n: None))
    configs += [(f"ladder {s:.4f}", "ladder", lambda n, s=s: s) for s in args.sweep_steps]
    configs += [(f"ladder {c:g}/sqrt(N)" + (f" = {c / sizes[0] ** 0.5:.4f}"
                                             if len(sizes) == 1 else ""),
                 "ladder", lambda n, c=c: c / n ** 0.5) for c in args.sweep_scales]
    outcomes: dict[str, list[Outcome]] = {name: [] for name, _, _ in configs}
    started = time.perf_counter()
    runs = 0
    for j, n in enumerate(sizes):
        # several sizes: each its own seeds, so no two draws share a seed
        first = args.seed + j * args.sweep_seeds
        for seed in range(first, first + args.sweep_seeds):
            data = draw(seed=seed, examples=n, submissions=submissions)
            runs += 1
            for name, mechanism, step in configs:
                outcomes[name].append(attack_core(data, mechanism=mechanism, step=step(n)))
    last = args.seed + runs - 1
    where = f"{sizes[0]:,} hidden binary labels" if len(sizes) == 1 else \
        f"{len(sizes)} sizes of {min(sizes):,} to {max(sizes):,} hidden binary labels"
    print(f"Boosting attack on the release core alone: {where}, {submissions:,} random "
          f"submissions + their majority vote, seeds {args.seed}-{last} ({runs} runs), "
          f"{time.perf_counter() - started:.1f} s")
    print(f"  {'mechanism':<28} {'gap vs fresh draw: mean':>24} {'min':>6} {'max':>6} "
          f"{'> +2':>6} {'< +5':>6}   gap vs 50%: values (runs)")
    for name, results in outcomes.items():
        gaps = np.array([o.gap for o in results])
        truth = np.round([o.gap_truth for o in results], 1)
        values, counts = np.unique(truth, return_counts=True)
        spread = ", ".join(f"{v:+.1f} ({c})" for v, c in zip(values, counts, strict=True))
        if len(values) > 6:
            spread = (f"mean {truth.mean():+.1f}, {truth.min():+.1f} to {truth.max():+.1f}; "
                      f"over +2 in {int(np.sum(truth > LADDER_MAX_GAP))}")
        print(f"  {name:<28} {gaps.mean():>+24.2f} {gaps.min():>+6.2f} {gaps.max():>+6.2f} "
              f"{int(np.sum(gaps > LADDER_MAX_GAP)):>6} {int(np.sum(gaps < EXACT_MIN_GAP)):>6}"
              f"   {spread}")
    print("  gap: the final submission's released score (its own, else the board's best) - "
          "its true accuracy (fresh draw), in points; > +2: runs over the Ladder's "
          "requirement; < +5: runs under the exact attack's; gap vs 50%: against the exact "
          "truth, rounded to 0.1")
    return 0


def default_work_dir() -> Path | None:
    """/dev/shm when writable: SQLite's commits (four per submission) then cost no fsync of
    the machine's disk, which would otherwise be most of the time (bench/README.md)."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="4,096 labels, 500 submissions (CI): a smoke test, verdicts checked")
    parser.add_argument("--submissions", type=int, help="random vectors (default 1000; "
                        "500 with --quick)")
    parser.add_argument("--examples", type=int, help="hidden labels (default 4000; 4096 "
                        "with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="the data's seed (default 0); "
                        "--sweep: the first seed")
    parser.add_argument("--step", type=float, help="the Ladder's step in the bundle (default: "
                        "none, so the server's 3/sqrt(N))")
    parser.add_argument("--work-dir", type=Path, default=default_work_dir(),
                        help="where the throwaway database and media go (default: /dev/shm "
                        "where there is one, else the temporary folder)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the first mechanism's submissions (exact)")
    parser.add_argument("--sweep", action="store_true",
                        help="the pure core over many seeds and steps, not the services")
    parser.add_argument("--sweep-seeds", type=int, default=10, help="--sweep: how many seeds")
    parser.add_argument("--sweep-steps", type=float, nargs="*", default=[0.02, 0.04, 0.05],
                        help="--sweep: Ladder steps besides the default")
    parser.add_argument("--sweep-scales", type=float, nargs="*", default=[],
                        help="--sweep: Ladder steps C/sqrt(N), for each C given (the default "
                        "is C = 2)")
    parser.add_argument("--sweep-examples", type=int, nargs="*", default=[],
                        help="--sweep: pool the runs over these sizes N (each with "
                        "--sweep-seeds seeds of its own): where chance falls between the "
                        "rungs of C/sqrt(N) changes with N")
    args = parser.parse_args(argv)
    examples = args.examples or (4_096 if args.quick else 4_000)
    submissions = args.submissions or (500 if args.quick else 1_000)
    if examples < 1 or submissions < 1:
        parser.error("--examples and --submissions must be positive")
    if args.step is not None and not 0 < args.step < 1:
        parser.error("--step must lie strictly between 0 and 1")
    if args.sweep:
        return run_sweep(args, examples, submissions)
    return run_served(args, examples, submissions)


if __name__ == "__main__":
    sys.exit(main())
