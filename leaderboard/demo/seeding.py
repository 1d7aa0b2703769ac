"""Demo data: real published predictions, submitted as the user `demo` through
`submission_create` (the same path a user's upload takes), so a fresh server has a
leaderboard to show.

- CIFAR-10: the 30 models of modestyachts/CIFAR-10.1, each with its predictions on
  cifar10-test, cifar10.1-v4 and cifar10.1-v6.
- ImageNet: cleanlab's cross-validated ResNet-50 (top-1), converted from cleanlab's
  class-folder order to the canonical file-number order.
- CIFAR-10 and MNIST: cleanlab's cross-validated probabilities (on CIFAR-10 they also give
  the CIFAR-10H cross-entropy).
- CIFAR-100, Caltech-256, 20 Newsgroups and IMDB (the other test sets of the label-error
  study): cleanlab's cross-validated predictions, already in each benchmark's example order
  (the data directory's MANIFEST.md); the probabilities where the data has them (20 Newsgroups,
  IMDB), so that confident-learning audits can use them, else the top-1 class ids.

Idempotent: a model the demo user already submitted on a benchmark is not submitted again.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.contrib.auth.models import User
from django.core.files import File
from django.db.models import Q, QuerySet

from leaderboard.catalog.models import Benchmark
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import SubmissionError, submission_create
from workers.scoring import datasets

DEMO_USERNAME = "demo"
# The hidden demo's participants, one per model (leaderboard/demo/hidden_benchmark.py).
HIDDEN_DEMO_PARTICIPANT_PREFIX = "demo-hidden-"

CIFAR10_PREDICTIONS = "cifar10/model_predictions"
# example set slug -> folder of cifar10/model_predictions holding its files
CIFAR10_PREDICTION_FOLDERS = {
    "cifar10-test": "original_predictions",
    "cifar10.1-v4": "v4_predictions",
    "cifar10.1-v6": "v6_predictions",
}
PREDICTIONS_SUFFIX = "_predictions.json"

IMAGENET_MODEL = "ResNet-50 (cleanlab cross-validated)"
CIFAR10_CLEANLAB_MODEL = "cleanlab cross-validated (CIFAR-10)"
MNIST_CLEANLAB_MODEL = "cleanlab cross-validated (MNIST)"
# benchmark slug (also its folder in the data directory) -> the name in its demo model's name
LABEL_ERROR_STUDY = {"cifar100": "CIFAR-100", "caltech256": "Caltech-256",
                     "20news": "20 Newsgroups", "imdb": "IMDB"}
CLEANLAB_PROBABILITIES = "cleanlab_cv_probabilities.npy"
CLEANLAB_PREDICTED_LABELS = "cleanlab_cv_predicted_labels.npy"

_CIFAR10_1 = "Published predictions of this model, from modestyachts/CIFAR-10.1 (Recht et al., "
_CIFAR10_1 += "'Do CIFAR-10 Classifiers Generalize to CIFAR-10?', 2018)."
_CLEANLAB = "Cross-validated {what} of cleanlab/label-errors (Northcutt et al., 'Pervasive "
_CLEANLAB += "Label Errors in Test Sets Destabilize Machine Learning Benchmarks', 2021)."


@dataclass(frozen=True)
class DemoModel:
    """One demo submission: its benchmark, model name and one file per example set."""

    benchmark: str
    model_name: str
    files: dict[str, Path]
    # A file for the benchmark's main example set, whatever the loaded definition calls it.
    main_file: Path | None = None
    description: str = ""
    paper_url: str = ""
    code_url: str = ""
    # Writes the files that are derived from the data (ImageNet's reordered predictions);
    # run only when the model is actually submitted.
    prepare: Callable[[], None] | None = None


@dataclass
class DemoSeedReport:
    queued: list[tuple[str, str, int]] = field(default_factory=list)  # benchmark, model, id
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # benchmark, model, why


def demo_user_get_or_create() -> User:
    """The user that owns the demo submissions (it cannot log in: no usable password)."""
    user, created = User.objects.get_or_create(username=DEMO_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _cifar10_models(data_dir: Path) -> list[DemoModel]:
    base = data_dir / CIFAR10_PREDICTIONS
    originals = base / CIFAR10_PREDICTION_FOLDERS["cifar10-test"]
    names = sorted(p.name[: -len(PREDICTIONS_SUFFIX)]
                   for p in originals.glob(f"*{PREDICTIONS_SUFFIX}")) if originals.is_dir() else []
    return [
        DemoModel(
            benchmark="cifar10", model_name=name,
            files={slug: base / folder / f"{name}{PREDICTIONS_SUFFIX}"
                   for slug, folder in CIFAR10_PREDICTION_FOLDERS.items()},
            description=_CIFAR10_1, paper_url="https://arxiv.org/abs/1806.00451",
            code_url="https://github.com/modestyachts/CIFAR-10.1",
        )
        for name in names
    ]


def cleanlab_label_error_study_file(data_dir: Path, benchmark: str) -> Path:
    """The cross-validated probabilities of a label-error-study benchmark where the data has
    them (the same top-1 as the predicted labels, and audits need probabilities), else its
    top-1 predicted labels."""
    probabilities = data_dir / benchmark / CLEANLAB_PROBABILITIES
    return probabilities if probabilities.is_file() else (
        data_dir / benchmark / CLEANLAB_PREDICTED_LABELS)


def _label_error_study_models(data_dir: Path, paper: str, code: str) -> list[DemoModel]:
    models = []
    for benchmark, name in LABEL_ERROR_STUDY.items():
        path = cleanlab_label_error_study_file(data_dir, benchmark)
        what = ("predicted probabilities" if path.name == CLEANLAB_PROBABILITIES
                else "top-1 predictions")
        models.append(DemoModel(
            benchmark=benchmark, model_name=f"cleanlab cross-validated ({name})", files={},
            main_file=path, description=_CLEANLAB.format(what=what),
            paper_url=paper, code_url=code))
    return models


def demo_models(*, data_dir: Path, work_dir: Path) -> list[DemoModel]:
    """Every demo submission the data directory can give; derived files go to `work_dir`."""
    paper, code = "https://arxiv.org/abs/2103.14749", "https://github.com/cleanlab/label-errors"
    imagenet_top1 = work_dir / "cleanlab_cv_predicted_labels_canonical.npy"

    def write_imagenet_top1() -> None:
        values = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy",
                         allow_pickle=False)
        np.save(imagenet_top1, datasets.imagenet_cleanlab_to_canonical(data_dir, values))

    return [
        *_cifar10_models(data_dir),
        DemoModel(
            benchmark="cifar10", model_name=CIFAR10_CLEANLAB_MODEL,
            files={"cifar10-test": data_dir / "cifar10/cleanlab_cv_probabilities.npy"},
            description=_CLEANLAB.format(what="predicted probabilities"),
            paper_url=paper, code_url=code,
        ),
        DemoModel(
            benchmark="imagenet", model_name=IMAGENET_MODEL,
            files={"imagenet-val": imagenet_top1},
            description=_CLEANLAB.format(what="top-1 predictions of a ResNet-50")
            + " Reordered from cleanlab's class-folder order to file-number order.",
            prepare=write_imagenet_top1, paper_url=paper, code_url=code,
        ),
        DemoModel(
            benchmark="mnist", model_name=MNIST_CLEANLAB_MODEL,
            files={"mnist-test": data_dir / "mnist/cleanlab_cv_probabilities.npy"},
            description=_CLEANLAB.format(what="predicted probabilities"),
            paper_url=paper, code_url=code,
        ),
        *_label_error_study_models(data_dir, paper, code),
    ]


def submit_demo_model(owner: User, benchmark: Benchmark, model: DemoModel) -> Submission:
    example_sets = set(benchmark.example_sets.values_list("slug", flat=True))
    files = dict(model.files)
    if model.main_file is not None:
        files[benchmark.main_example_set] = model.main_file
    paths = {slug: path for slug, path in files.items()
             if slug in example_sets and path.is_file()}
    if benchmark.main_example_set not in paths:
        raise SubmissionError(
            "missing_main_image_set",
            f"no {benchmark.main_example_set} file: {files.get(benchmark.main_example_set)}")
    handles = {slug: path.open("rb") for slug, path in paths.items()}
    try:
        return submission_create(
            owner=owner, benchmark=benchmark, model_name=model.model_name,
            files={slug: File(handle, name=paths[slug].name) for slug, handle in handles.items()},
            description=model.description, public=True, paper_url=model.paper_url,
            code_url=model.code_url, enforce_quota=False,
        )
    finally:
        for handle in handles.values():
            handle.close()


def demo_seed(*, data_dir: Path, echo: Callable[[str], None] = print) -> DemoSeedReport:
    """Submit every demo model that the demo user has not submitted yet; skip (and say why)
    models whose benchmark is not loaded or whose files are missing."""
    owner = demo_user_get_or_create()
    benchmarks = {b.slug: b for b in Benchmark.objects.all()}
    done = set(Submission.objects.filter(owner=owner)
               .values_list("benchmark__slug", "model_name"))
    report = DemoSeedReport()
    not_loaded: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="evalserver-demo-") as tmp:
        for model in demo_models(data_dir=data_dir, work_dir=Path(tmp)):
            benchmark = benchmarks.get(model.benchmark)
            if benchmark is None:
                not_loaded[model.benchmark] += 1
                report.skipped.append((model.benchmark, model.model_name, "benchmark not loaded"))
                continue
            if (model.benchmark, model.model_name) in done:
                report.skipped.append((model.benchmark, model.model_name, "already submitted"))
                continue
            try:
                if model.prepare is not None:
                    model.prepare()
                submission = submit_demo_model(owner, benchmark, model)
            except (SubmissionError, datasets.DataError, OSError, ValueError) as exc:
                report.skipped.append((model.benchmark, model.model_name, str(exc)))
                echo(f"skipped {model.benchmark} / {model.model_name}: {exc}")
                continue
            report.queued.append((model.benchmark, model.model_name, submission.pk))
            echo(f"queued {model.benchmark} / {model.model_name} (#{submission.pk})")
    for slug, count in sorted(not_loaded.items()):
        echo(f"skipped {slug}: benchmark not loaded ({count} demo model(s); "
             "run `manage.py load_benchmarks` first)")
    already = sum(1 for *_, why in report.skipped if why == "already submitted")
    if already:
        echo(f"skipped {already} demo model(s) already submitted")
    return report


def demo_submissions_wait(
    *, timeout: float, poll: float = 1.0, echo: Callable[[str], None] = print
) -> dict[str, int]:
    """Poll until no demo submission is queued or running, or `timeout` seconds pass.
    Returns the count of demo submissions by status."""
    pending = (Submission.Status.QUEUED, Submission.Status.RUNNING)
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        counts = Counter(demo_submissions().values_list("status", flat=True))
        line = ", ".join(f"{counts[s]} {s}" for s in Submission.Status.values if counts[s])
        if line != last:
            echo(f"demo submissions: {line or 'none'}")
            last = line
        if not any(counts[s] for s in pending) or time.monotonic() >= deadline:
            return dict(counts)
        time.sleep(poll)


def demo_submissions() -> QuerySet[Submission]:
    """Every demo submission: the demo user's and the hidden demo's participants'."""
    return Submission.objects.filter(
        Q(owner__username=DEMO_USERNAME)
        | Q(owner__username__startswith=HIDDEN_DEMO_PARTICIPANT_PREFIX))
