"""The hidden demo benchmark (docs/metrics.md §17): CIFAR-10.1 v6's 2,000 labels as a hidden
label set, split 50/50 into a public and a private part, beside CIFAR-10's published test
labels (public), with the 30 published CIFAR-10 models each submitted by a participant of its
own (the release mechanism runs per participant). A new user sees the open board; after a
reveal (`manage.py reveal_hidden cifar10-hidden cifar10.1-v6-hidden --by STAFF` or the staff
API) the private board and its shake-up.

The bundle is written to a temporary folder from the data directory, as a host would upload
it: a hidden label set's files come with its bundle, never from the public data directory.
Idempotent: the benchmark is added once and each model submitted once.

Its participants are admitted by approval, as a hidden label set's defaults ask
(docs/hosts/participation.md); the demo's made-up users have no email, so the demo's rules do
not require one, and each is approved before its submission.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.contrib.auth.models import User

from leaderboard.catalog.bundle_loading import benchmark_bundle_add
from leaderboard.catalog.models import Benchmark
from leaderboard.demo.lab_team import DEMO_LAB_MEMBERS, demo_lab_benchmark_give
from leaderboard.demo.seeding import (
    CIFAR10_PREDICTION_FOLDERS,
    CIFAR10_PREDICTIONS,
    HIDDEN_DEMO_PARTICIPANT_PREFIX,
    PREDICTIONS_SUFFIX,
    DemoModel,
    DemoSeedReport,
    submit_demo_model,
)
from leaderboard.submissions.models import Submission
from leaderboard.submissions.participation.selectors import (
    participation_request_for_user,
    participation_rules_get,
)
from leaderboard.submissions.participation.services import (
    participation_request_create,
    participation_request_decide,
    participation_rules_set,
)
from leaderboard.submissions.services import SubmissionError

HIDDEN_DEMO_SLUG = "cifar10-hidden"
HIDDEN_DEMO_LABEL_SET = "cifar10.1-v6-hidden"
HIDDEN_DEMO_SEED = 20181002  # the split's seed (the date of Recht et al.'s arXiv v2)
CLASS_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
               "ship", "truck"]
DESCRIPTION = ("A demo of hidden test labels: CIFAR-10.1 v6's 2,000 labels are hidden, half "
               "of them public during the open phase (released through the parameter-free "
               "Ladder), half private until staff reveal them.")
CITATION = ("Benjamin Recht, Rebecca Roelofs, Ludwig Schmidt, Vaishaal Shankar. Do CIFAR-10 "
            "Classifiers Generalize to CIFAR-10? 2018. arXiv:1806.00451.")
_FILES = {"original.npy": "cifar10/original_labels.npy",
          "v6.npy": "cifar10/cifar10.1_v6_labels.npy"}


def _manifest() -> str:
    names = ", ".join(json.dumps(name) for name in CLASS_NAMES)
    return f"""schema = 1
slug = "{HIDDEN_DEMO_SLUG}"
name = "CIFAR-10 with a hidden test set (demo)"
description = {json.dumps(DESCRIPTION)}
modality = "image"
files = "bundle"
cites = ["recht2019"]
headline = "original"

[citations]
recht2019 = {json.dumps(CITATION)}

[classes]
count = 10
source = "inline"
names = [{names}]

[[example_sets]]
slug = "cifar10-hidden-test"
name = "CIFAR-10 test"
size = 10000

[[example_sets]]
slug = "cifar10-hidden-v6"
name = "CIFAR-10.1 v6"
size = 2000

[[label_sets]]
slug = "original"
kind = "single"
name = "Original labels"
labels = "original.npy"

[[label_sets]]
slug = "{HIDDEN_DEMO_LABEL_SET}"
kind = "single"
example_set = "cifar10-hidden-v6"
name = "CIFAR-10.1 v6 (hidden)"
description = "CIFAR-10.1 v6's labels, hidden: only released figures are shown."
citation = "recht2019"
labels = "v6.npy"
hidden = true
release = "parameter_free"
split = {{ private_fraction = 0.5, seed = {HIDDEN_DEMO_SEED} }}
"""


def hidden_demo_benchmark_add(*, data_dir: Path) -> Benchmark:
    """Add the hidden demo benchmark once (OSError when the data directory lacks a file)."""
    existing = Benchmark.objects.filter(slug=HIDDEN_DEMO_SLUG).first()
    if existing is not None:
        return existing
    with tempfile.TemporaryDirectory(prefix="evalserver-hidden-demo-") as tmp:
        folder = Path(tmp)
        for name, source in _FILES.items():
            shutil.copyfile(data_dir / source, folder / name)
        (folder / "bundle.toml").write_text(_manifest(), encoding="utf-8")
        benchmark_bundle_add(path=folder / "bundle.toml", data_dir=data_dir)
    return Benchmark.objects.get(slug=HIDDEN_DEMO_SLUG)


def _participant(model: str) -> User:
    """One participant per model (no usable password): the mechanism runs per participant."""
    user, created = User.objects.get_or_create(
        username=(HIDDEN_DEMO_PARTICIPANT_PREFIX + model)[:150])
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _admitted(user: User, benchmark: Benchmark) -> User:
    """The participant, with an approved request to join (the demo's own approval)."""
    if participation_request_for_user(user=user, benchmark=benchmark) is None:
        request = participation_request_create(user=user, benchmark=benchmark,
                                               message="a demo participant")
        participation_request_decide(request=request, by=None, approve=True, note="demo")
    return user


def hidden_demo_seed(*, data_dir: Path, report: DemoSeedReport,
                     echo: Callable[[str], None] = print) -> None:
    """Add the benchmark and submit each of the 30 CIFAR-10 models once, as its participant;
    nothing when the CIFAR-10 benchmark is not loaded (its demo is skipped then too)."""
    if not Benchmark.objects.filter(slug="cifar10").exists():
        return  # seeded with CIFAR-10's demo, whose skip the report already says
    base = data_dir / CIFAR10_PREDICTIONS
    originals = base / CIFAR10_PREDICTION_FOLDERS["cifar10-test"]
    if not originals.is_dir() or not all((data_dir / f).is_file() for f in _FILES.values()):
        report.skipped.append((HIDDEN_DEMO_SLUG, "*", "CIFAR-10 data missing"))
        return
    benchmark = hidden_demo_benchmark_add(data_dir=data_dir)
    team = demo_lab_benchmark_give(benchmark=benchmark)
    echo(f"{HIDDEN_DEMO_SLUG} belongs to team {team.slug} ({team.name}): "
         + ", ".join(f"{name} ({role})" for name, role in DEMO_LAB_MEMBERS.items())
         + "; no passwords: `manage.py changepassword <name>` to log in as one")
    if participation_rules_get(benchmark=benchmark).pk is None:
        participation_rules_set(benchmark=benchmark, by=None, mode="approval",
                                require_verified_email=False, terms="")
    done = set(Submission.objects.filter(benchmark=benchmark).values_list("model_name",
                                                                          flat=True))
    for path in sorted(originals.glob(f"*{PREDICTIONS_SUFFIX}")):
        name = path.name[: -len(PREDICTIONS_SUFFIX)]
        if name in done:
            report.skipped.append((HIDDEN_DEMO_SLUG, name, "already submitted"))
            continue
        model = DemoModel(
            benchmark=HIDDEN_DEMO_SLUG, model_name=name,
            files={"cifar10-hidden-test": path,
                   "cifar10-hidden-v6": base / CIFAR10_PREDICTION_FOLDERS["cifar10.1-v6"]
                   / path.name})
        try:
            submission = submit_demo_model(_admitted(_participant(name), benchmark),
                                           benchmark, model)
        except (SubmissionError, OSError, ValueError) as exc:
            report.skipped.append((HIDDEN_DEMO_SLUG, name, str(exc)))
            echo(f"skipped {HIDDEN_DEMO_SLUG} / {name}: {exc}")
            continue
        report.queued.append((HIDDEN_DEMO_SLUG, name, submission.pk))
        echo(f"queued {HIDDEN_DEMO_SLUG} / {name} (#{submission.pk})")
