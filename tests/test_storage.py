"""Every stored file goes through Django's storage API: the server scores and re-scores the
same on the default file storage and on a store with no local paths (tests/pathless_storage.py,
as S3 would be), and the one helper that hands out local paths copies from such a store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings

from leaderboard.catalog import label_set_version_files
from leaderboard.catalog.label_set_version_files import version_file_name
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.storage import stored_file_path, stored_npz
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from leaderboard.tasks.gpu import run_checkpoint
from tests import factories
from tests.workers.inference import builders
from workers.scoring import datasets

pytestmark = pytest.mark.django_db

FILE_SYSTEM = "django.core.files.storage.FileSystemStorage"
PATHLESS = "tests.pathless_storage.PathlessStorage"


def _use_storage(settings: Settings, backend: str) -> None:
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": backend, "OPTIONS": {}}}
    # compiled versions are kept in memory by content hash: read them from this store
    label_set_version_files._load.cache_clear()


@pytest.fixture(params=[FILE_SYSTEM, PATHLESS], ids=["file-system", "pathless"])
def storage_loaded(request: pytest.FixtureRequest, catalog_settings: Settings,
                   run_load_benchmarks: Callable[..., tuple[str, str]]) -> str:
    """The catalog loaded with every file in the chosen default storage; returns its class."""
    _use_storage(catalog_settings, request.param)
    run_load_benchmarks()
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return str(request.param)


def _score(submission: Submission) -> None:
    result = score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get()
    assert result == "scored"


def _scores() -> dict[tuple[str, str, int, str], tuple[int, int, float | None]]:
    """(benchmark, label set, version, model) -> (correct, total, accuracy) of every score."""
    return {(s.label_set.benchmark.slug, s.label_set.slug, s.label_set_version.number,
             s.submission.model_name): (s.correct, s.total, s.accuracy)
            for s in Score.objects.select_related("label_set__benchmark", "label_set_version",
                                                  "submission")}


def _accuracy(correct: int, total: int) -> float:
    return correct / total


# Computed with the default storage; the pathless store must give exactly these.
CIFAR10 = {  # label set -> (correct, total) of resnet_basic_110
    "original": (9346, 10000), "corrected": (9332, 9964), "cifar10h": (9332, 10000),
    "cifar10.1-v4": (1721, 2021), "cifar10.1-v6": (1708, 2000),
}
IMAGENET_V1 = {"original": (36366, 50000), "real": (36352, 46837)}  # the cleanlab ResNet-50
REAL_V2 = (36353, 46837)  # one pair it predicts at top-1 accepted by review
LINEAR_MNIST = {"original": (1053, 10000), "corrected": (1053, 9995)}  # builders.linear_model()


def test_it_scores_and_rescores_the_same_on_any_storage(
    storage_loaded: str, data_dir: Path, tmp_path: Path, catalog_settings: Settings,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    cifar = factories.submission_for_model(data_dir, "resnet_basic_110")
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    canonical = datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)
    imagenet = submission_create(
        owner=factories.user_create("imagenet"), model_name="resnet50",
        benchmark=benchmark_get(slug="imagenet"),
        files={"imagenet-val": factories.upload_npy(canonical, tmp_path, "resnet50.npy")})
    _score(cifar)
    _score(imagenet)

    scored = _scores()
    assert {k[1]: v[:2] for k, v in scored.items() if k[0] == "cifar10"} == CIFAR10
    assert {k[1]: v[:2] for k, v in scored.items()
            if k[0] == "imagenet" and k[1] in IMAGENET_V1} == IMAGENET_V1
    assert scored[("imagenet", "real", 1, "resnet50")][2] == _accuracy(*IMAGENET_V1["real"])

    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None
    for n in range(3):
        reviewer = factories.reviewer_create(f"reviewer{n}")
        review.review_vote_cast(item_id=item.pk, reviewer=reviewer, verdict="correct")
    v2 = LabelSetVersion.objects.get(label_set__slug="real", number=2)
    assert default_storage.exists(version_file_name(v2.content_hash))

    full_rescores: list[int] = []
    rescore_fully = rescoring._rescore_fully
    monkeypatch.setattr(rescoring, "_rescore_fully", lambda version, progress=None: (
        full_rescores.append(version.pk), rescore_fully(version, progress))[1])

    # the incremental scan: a few rows of each stored file, read through the storage
    assert rescoring.label_set_version_rescore(version_id=v2.pk) == 1
    assert full_rescores == []
    incremental = Score.objects.get(submission=imagenet, label_set_version=v2)
    assert (incremental.correct, incremental.total) == REAL_V2
    record = incremental.record
    Score.objects.filter(label_set_version=v2).delete()
    monkeypatch.setattr(rescoring, "INCREMENTAL_MAX_EXAMPLES", 0)
    assert rescoring.label_set_version_rescore(version_id=v2.pk) == 1  # every file, whole
    assert full_rescores == [v2.pk]
    full = Score.objects.get(submission=imagenet, label_set_version=v2)
    assert (full.correct, full.total, full.record) == (*REAL_V2, record)

    # everything went into the store, nothing around it
    assert sorted(default_storage.listdir("")[0]) == ["compact", "labelsets", "uploads"]
    media = sorted(p.name for p in Path(catalog_settings.MEDIA_ROOT).iterdir())
    assert media == (["pathless-store"] if storage_loaded == PATHLESS
                     else ["compact", "labelsets", "uploads"])


def test_it_runs_a_stored_checkpoint_the_same_on_any_storage(
    storage_loaded: str, tmp_path: Path
) -> None:
    """The sandboxed runner needs the model file on disk: from a store without paths it gets
    a copy, and the scores it stores go back into the store."""
    model = builders.save(builders.linear_model(), tmp_path / "linear.onnx")
    submission = submission_create(
        owner=factories.user_create(), model_name="linear", benchmark=benchmark_get(slug="mnist"),
        files={}, checkpoint=factories.upload_from_path(model))

    result = run_checkpoint.apply(args=[submission.pk], task_id=f"gpu-{submission.pk}").get()

    assert result == "scored"
    assert {k[1]: v[:2] for k, v in _scores().items()} == LINEAR_MNIST
    (row,) = submission.files.all()
    assert default_storage.exists(row.file.name) and default_storage.exists(row.compact.name)
    assert default_storage.exists(submission.checkpoint.file.name)


def test_it_hands_out_the_stored_file_or_a_copy_that_is_removed_after(
    catalog_settings: Settings
) -> None:
    _use_storage(catalog_settings, FILE_SYSTEM)
    name = default_storage.save("uploads/preds.npy", ContentFile(b"\x93NUMPY bytes"))
    with stored_file_path(name) as local:
        assert local == Path(catalog_settings.MEDIA_ROOT) / "uploads" / "preds.npy"
    assert local.read_bytes() == b"\x93NUMPY bytes"  # the stored file itself, kept

    _use_storage(catalog_settings, PATHLESS)
    assert default_storage.save(name, ContentFile(b"\x93NUMPY bytes")) == name
    with pytest.raises(NotImplementedError):
        default_storage.path(name)
    with stored_file_path(name) as copy:
        assert copy.name == "preds.npy"  # the extension picks the reader
        assert Path(catalog_settings.MEDIA_ROOT) not in copy.parents
        assert copy.read_bytes() == b"\x93NUMPY bytes"
    assert not copy.exists() and not copy.parent.exists()


def test_it_reads_a_stored_npz_from_a_store_without_paths(catalog_settings: Settings) -> None:
    _use_storage(catalog_settings, PATHLESS)
    name = default_storage.save("compact/1-x.npz", ContentFile(_npz(topk=np.arange(6))))

    with stored_npz(name) as arrays:
        assert (arrays.files, arrays["topk"].tolist()) == (["topk"], [0, 1, 2, 3, 4, 5])


def _npz(**arrays: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()
