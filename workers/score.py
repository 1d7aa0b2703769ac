"""Score a prediction file locally, exactly as the server does.

    python -m workers.score --benchmark cifar10 preds.npy
    python -m workers.score --benchmark cifar10 cifar10-test=orig.json cifar10.1-v6=v6.json --json
    python -m workers.score --bundle reviews.toml preds.npy      (or a .zip bundle)

--benchmark is a built-in benchmark (its bundle in benchmarks/, its label files in the data
directory); --bundle a benchmark that is not built in, from its manifest or .zip bundle
(docs/bundles.md). A plain PRED_FILE is for --example-set (default: the benchmark's main example
set; `--image-set`, its former name, still works); several example sets are given as
SLUG=FILE. Exit status: 0 scored, 2 bad input (a prediction file or a bundle: the message
says what and where), 3 data directory problem.

A hidden label set (docs/bundles.md §5.7) is scored when its files are here (a maintainer's
check), marked `(hidden)` in the table and `"hidden": true` in the JSON. Its labels are never
published, so where its files are missing it is not scored: a note on stderr (and the JSON's
`not_scored`) says so for that label set, the others are scored, and the exit status is as
if it were not declared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from workers.scoring import datasets, label_set_builders
from workers.scoring.bundles import (
    MULTILABEL_SOURCE,
    Bundle,
    BundleData,
    BundleError,
    builtin_bundle,
    builtin_slugs,
    compile_bundle,
    compile_bundle_label_set,
    missing_sources,
    open_bundle,
)
from workers.scoring.bundles.builders import optional_source
from workers.scoring.families.registry import family_named
from workers.scoring.predictions import PredictionError, parse_predictions
from workers.scoring.scorer import SubmissionScores, score_predictions


def default_cache_dir() -> Path:
    env = os.environ.get("EVALSERVER_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "evalserver" / "compiled"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workers.score",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--benchmark", choices=builtin_slugs(), help="a built-in benchmark")
    which.add_argument(
        "--bundle", type=Path, help="a benchmark's manifest (.toml) or .zip bundle"
    )
    # --image-set: its former name, kept for the scripts that use it
    parser.add_argument("--example-set", "--image-set", dest="example_set",
                        help="example set of a plain PRED_FILE")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="label data (default: $EVALSERVER_DATA_DIR or ../shared/data)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="compiled label sets (default: $EVALSERVER_CACHE_DIR or ~/.cache)",
    )
    parser.add_argument(
        "--multilabel-file",
        type=Path,
        default=os.environ.get("EVALSERVER_MULTILABEL_FILE") or None,
        help="human_accuracy_v3.0.0.json, for ImageNet multi-label and ImageNet-M",
    )
    parser.add_argument("files", nargs="+", metavar="PRED_FILE or SLUG=FILE")
    return parser


def _assign(bench: Bundle, files: Sequence[str], example_set: str | None) -> dict[str, Path]:
    assigned: dict[str, Path] = {}
    slugs = [s.slug for s in bench.example_sets]
    for item in files:
        slug, sep, name = item.partition("=")
        if not sep:
            slug, name = example_set or bench.main_example_set, item
        if slug not in slugs:
            raise SystemExit(
                f"error: {slug!r} is not an example set of {bench.slug}; "
                f"choose from {', '.join(slugs)}"
            )
        if slug in assigned:
            raise SystemExit(f"error: two files given for example set {slug}")
        assigned[slug] = Path(name)
    return assigned


def compile_available(
    data: BundleData, *, cache_dir: Path | None, example_sets: Sequence[str] | None = None,
    leave_out: Collection[str] = (),
) -> list[label_set_builders.CompiledLabelSet]:
    """Every label set of the bundle (of these example sets) that can be built here: those
    whose source is a server setting only when it is configured, as the server loads them;
    never those of `leave_out`."""
    bench = data.bundle
    out = []
    for ls in bench.label_sets:
        if example_sets is not None and ls.example_set not in example_sets:
            continue
        if ls.slug in leave_out:
            continue
        setting = optional_source(bench, ls)
        if setting is not None and data.sources.get(setting) is None:
            continue
        out.append(compile_bundle_label_set(data, ls.slug, cache_dir=cache_dir))
    return out


def withheld_hidden(data: BundleData) -> dict[str, list[str]]:
    """The hidden label sets that cannot be scored here, each with what it lacks: their
    labels are not published, so only the bundle's own files can score them."""
    return {ls.slug: missing for ls in data.bundle.label_sets
            if ls.hidden and (missing := missing_sources(data, ls))}


def hidden_note(slug: str, lacks: Sequence[str]) -> str:
    return (f"label set {slug!r} is hidden: its labels are not published, so it can be scored "
            f"only with the bundle's own files; not scored (lacks: {', '.join(lacks)})")


def _fmt(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.2f}" if percent else f"{value:.4f}"


def table_rows(scores: SubmissionScores, hidden: Collection[str] = ()
               ) -> list[tuple[str, str, str, str, str]]:
    """(label set, metric, value %, count, 95% CI) rows for every figure in the records; the
    label sets of `hidden` are named `<slug> (hidden)`."""
    rows: list[tuple[str, str, str, str, str]] = []

    def add(slug: str, name: str, rec: dict[str, Any] | None, percent: bool = True) -> None:
        if not rec:
            return
        value = rec.get("accuracy", rec.get("value"))
        if "classes_evaluated" in rec:  # a mean over classes (docs/metrics.md §5.1)
            count = f"{rec['classes_evaluated']} classes"
        elif "correct" in rec:
            count = f"{rec['correct']}/{rec['total']}"
        else:
            count = f"n={rec['total']}"
        ci = f"[{_fmt(rec['ci_low'], percent)}, {_fmt(rec['ci_high'], percent)}]"
        rows.append((slug, name, _fmt(value, percent), count, ci))

    for key, rec in scores.records.items():
        slug = f"{key} (hidden)" if key in hidden else key
        add(slug, family_named(rec["family"]).headline, rec)
        add(slug, "top-1, pooled over images", rec.get("pooled_accuracy"))
        add(slug, "top-5", rec.get("top5"))
        if "correctable" in rec:
            add(slug, "correctable Acc@1", rec["correctable"]["acc1"])
            add(slug, "correctable cAcc@1", rec["correctable"]["cacc1"])
        for key in ("second", "third", "collapsed", "organism", "object"):
            sub = rec.get(key)
            label = f"{key} prediction" if key in ("second", "third") else key
            if isinstance(sub, dict) and "classes_evaluated" in sub:
                label += ", mean over classes"
            add(slug, label, sub)
        add(slug, "human agreement", rec.get("human_agreement"))
        add(slug, "cross-entropy", rec.get("cross_entropy"), percent=False)
        if rec.get("gap") is not None:
            rows.append((slug, "gap to original", _fmt(rec["gap"]), "", ""))
        if "novel_count" in rec:
            rows.append((slug, "novel predictions", str(rec["novel_count"]), "", ""))
        if "misses" in rec:
            missed = ", ".join(m["file"] for m in rec["misses"][:5])
            rows.append((slug, "misses", str(len(rec["misses"])), missed, ""))
    return rows


def render_table(scores: SubmissionScores, hidden: Collection[str] = ()) -> str:
    header = ("label set", "metric", "value %", "count", "95% CI")
    rows = [header, *table_rows(scores, hidden)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    data_dir = args.data_dir or datasets.default_data_dir()
    cache_dir = args.cache_dir or default_cache_dir()
    try:
        if args.bundle is None:
            return _score(builtin_bundle(args.benchmark), args, data_dir=data_dir,
                          cache_dir=cache_dir)
        with open_bundle(args.bundle) as bundle:
            # A .zip is extracted to a new folder each run: its compiled sets would never be
            # found again, so they are not cached.
            zipped = args.bundle.suffix.lower() == ".zip"
            return _score(bundle, args, data_dir=data_dir, cache_dir=None if zipped else cache_dir)
    except BundleError as exc:  # the manifest or the .zip itself
        print(f"error: {exc} [{exc.code}]", file=sys.stderr)
        return 2


# A bundle error that means a file of the data directory is missing, not a bad bundle.
_DATA_DIR_CODES = frozenset({"missing_file", "not_configured"})


def _score(bench: Bundle, args: argparse.Namespace, *, data_dir: Path,
           cache_dir: Path | None) -> int:
    if bench.files == "data" and not data_dir.is_dir():
        print(
            f"error: data directory {data_dir} does not exist; set EVALSERVER_DATA_DIR or "
            "--data-dir (docs/operators/data.md says where to get them)",
            file=sys.stderr,
        )
        return 3
    files = _assign(bench, args.files, args.example_set)
    num_classes = bench.classes.count
    predictions = {}
    for slug, path in files.items():
        size = bench.example_set(slug).size
        try:
            # keep_scores only where a small class count makes the full matrix cheap to keep
            predictions[slug] = parse_predictions(
                path,
                num_examples=size,
                num_classes=num_classes,
                keep_scores=num_classes <= 100,
            )
        except PredictionError as exc:
            print(f"error: {path} [{exc.code}]: {exc.message}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"error: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 2
    data = BundleData(bench, data_dir=data_dir,
                      sources={MULTILABEL_SOURCE: args.multilabel_file})
    try:
        withheld = withheld_hidden(data)
        if args.bundle is None:
            compiled = compile_available(data, cache_dir=cache_dir, example_sets=list(files),
                                         leave_out=withheld)
        else:  # all of it checked, as the server checks a bundle before it loads it
            compiled = list(compile_bundle(bench, data_dir=data_dir, cache_dir=cache_dir,
                                           sources=data.sources, leave_out=withheld).values())
        class_names = data.classes.names
        namers = {slug: data.names(slug).name for slug in files}
    except BundleError as exc:
        print(f"error: {exc} [{exc.code}]", file=sys.stderr)
        return 3 if bench.files == "data" and exc.code in _DATA_DIR_CODES else 2
    except datasets.DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    scores = score_predictions(predictions, compiled, class_names=class_names,
                               example_names=namers)
    hidden = {ls.slug for ls in bench.label_sets if ls.hidden}
    # only the label sets of the example sets scored, as the scores have no others
    not_scored = {slug: lacks for slug, lacks in withheld.items()
                  if bench.label_set(slug).example_set in files}
    for slug, lacks in not_scored.items():
        print(f"note: {hidden_note(slug, lacks)}", file=sys.stderr)
    if args.json:
        records = {slug: {**rec, "hidden": True} if slug in hidden else rec
                   for slug, rec in scores.records.items()}
        # "image_sets": the JSON's key since its first release, as in the API's answers
        out: dict[str, Any] = {"benchmark": bench.slug, "image_sets": sorted(files),
                               "scores": records}
        if not_scored:
            out["not_scored"] = {slug: {"hidden": True, "lacks": lacks,
                                        "message": hidden_note(slug, lacks)}
                                 for slug, lacks in not_scored.items()}
        print(json.dumps(out, indent=2))
    else:
        print(render_table(scores, hidden))
    return 0


if __name__ == "__main__":
    sys.exit(main())
