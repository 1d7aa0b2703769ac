"""A submission's stored files in either layout (leaderboard/submissions/stored_files.py): its
uploads one file each or one zip, its compact arrays one file for the submission or (stored
before) one per example set; the readers find each example set's bytes and arrays in both."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import SubmissionFile
from leaderboard.submissions.stored_files import (
    compacts_storing,
    stored_compact,
    uploaded_file_paths,
)
from tests import factories

pytestmark = pytest.mark.django_db

MODEL = "resnet_basic_110"


def test_it_reads_each_upload_from_its_submissions_zip_and_from_a_file_of_its_own(
    loaded: Settings, data_dir: Path
) -> None:
    submission = factories.submission_for_model(data_dir, MODEL)
    rows = list(submission.files.select_related("example_set").order_by("pk"))
    originals = factories.cifar10_model_files(data_dir, MODEL)
    # the first two example sets' uploads moved into one zip, as an object store has them
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for row in rows[:2]:
            archive.writestr(f"{row.example_set.slug}.json", originals[row.example_set.slug]
                             .read_bytes())
    bundle = default_storage.save(f"uploads/{submission.pk}.zip", ContentFile(buffer.getvalue()))
    SubmissionFile.objects.filter(pk__in=[row.pk for row in rows[:2]]).update(file=bundle)
    rows = list(submission.files.select_related("example_set").order_by("pk"))
    assert [str(row.file.name) for row in rows[:2]] == [bundle, bundle]

    with uploaded_file_paths(rows) as paths:
        assert [path.suffix for path in paths] == [".json"] * 3  # the readers choose by it
        assert [path.read_bytes() for path in paths] == [
            originals[row.example_set.slug].read_bytes() for row in rows]
        copies = list(paths[:2])
    assert not any(path.exists() for path in copies)  # the extracted copies are gone after


def test_it_reads_an_example_sets_arrays_from_either_compact_layout() -> None:
    topk = np.arange(12, dtype=np.int16).reshape(6, 2)
    scores = np.linspace(0, 1, 12, dtype=np.float32).reshape(6, 2)
    one_file = io.BytesIO()
    np.savez(one_file, **{"a/topk": topk, "a/topk_scores": scores, "b/topk": topk[::-1]})
    own_file = io.BytesIO()
    np.savez(own_file, topk=topk[:, :1])
    names = [default_storage.save("compact/1.npz", ContentFile(one_file.getvalue())),
             default_storage.save("compact/2-b.npz", ContentFile(own_file.getvalue()))]

    with stored_compact(names[0], example_set="a") as arrays:
        assert sorted(arrays) == ["topk", "topk_scores"]
        assert "topk_scores" in arrays and "scores" not in arrays and "b/topk" not in arrays
        assert np.array_equal(arrays["topk"], topk)
        assert np.array_equal(arrays["topk_scores"], scores)
    with stored_compact(names[0], example_set="b") as arrays:
        assert list(arrays) == ["topk"] and np.array_equal(arrays["topk"], topk[::-1])
    with stored_compact(names[0], example_set="c") as arrays:
        assert len(arrays) == 0
        with pytest.raises(KeyError):
            arrays["topk"]
    with stored_compact(names[1], example_set="b") as arrays:  # stored before: plain names
        assert list(arrays) == ["topk"] and np.array_equal(arrays["topk"], topk[:, :1])



def test_it_replaces_a_compact_file_that_an_attempt_stored_but_did_not_record(
    loaded: Settings, data_dir: Path
) -> None:
    submission = factories.submission_for_model(data_dir, MODEL)
    rows = list(submission.files.select_related("example_set").order_by("pk"))
    name = f"compact/{submission.pk}.npz"
    assert default_storage.save(name, ContentFile(b"an attempt's, never recorded")) == name
    arrays = {row.example_set.slug: {"topk": np.full((4, 1), i, dtype=np.int32)}
              for i, row in enumerate(rows)}

    with compacts_storing(rows=rows, arrays=arrays):
        pass

    assert [str(row.compact.name) for row in submission.files.order_by("pk")] == [name] * 3
    assert default_storage.listdir("compact")[1] == [f"{submission.pk}.npz"]
    for i, row in enumerate(rows):
        with stored_compact(name, example_set=row.example_set.slug) as stored:
            assert np.array_equal(stored["topk"], np.full((4, 1), i, dtype=np.int32))
