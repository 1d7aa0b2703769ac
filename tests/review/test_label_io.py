"""import_multilabel and export_labels: a small file in the human_accuracy_v3.0.0.json layout
goes in as versions of multilabel and imagenet-m and comes out the same."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import version_file_name
from leaderboard.catalog.models import LabelSetVersion
from tests import factories
from workers.scoring import datasets

pytestmark = pytest.mark.django_db

V2_NAME = "imagenetv2-matched-frequency/1/0a1b2c3d.jpeg"


def _file(data_dir: Path) -> dict[str, Any]:
    w = datasets.imagenet_wnids(data_dir)

    def name(number: int) -> str:
        return f"ILSVRC2012_val_{number:08d}.JPEG"

    return {
        "initial_annots": {
            name(1): {"correct": sorted([w[65]]), "wrong": sorted([w[1], w[3]])},
            name(2): {"correct": sorted([w[795], w[970]]), "unclear": [w[500]]},
            name(10): {"correct": [w[10]]},
            name(42): {"wrong": [w[7]]},
            V2_NAME: {"correct": [w[5]]},  # ImageNetV2: skipped
        },
        "problematic_images": {name(10): {}},
        "imagenet_m": [name(1), name(2)],
    }


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _versions(slug: str) -> list[LabelSetVersion]:
    return list(LabelSetVersion.objects.filter(label_set__benchmark__slug="imagenet",
                                               label_set__slug=slug).order_by("number"))


def test_it_round_trips_a_multilabel_file_through_import_and_export(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    raw = _file(data_dir)
    source = tmp_path / "human_accuracy.json"
    source.write_text(json.dumps(raw))
    out = _run("import_multilabel", str(source))
    (ml,), (im,) = _versions("multilabel"), _versions("imagenet-m")
    assert out.splitlines() == [
        f"imagenet/multilabel: version 1 created (sha256 {ml.content_hash[:12]})",
        f"imagenet/imagenet-m: version 1 created (sha256 {im.content_hash[:12]})"]
    assert default_storage.exists(version_file_name(ml.content_hash))
    assert default_storage.exists(version_file_name(im.content_hash))
    assert (ml.summary["annotated"], ml.summary["problematic"], ml.summary["included"]) == (4, 1, 3)
    assert "unchanged, latest is" in _run("import_multilabel", str(source))
    assert len(_versions("multilabel")) == 1

    expected = copy.deepcopy(raw)
    del expected["initial_annots"][V2_NAME]
    target = tmp_path / "export.json"
    _run("export_labels", "imagenet", "multilabel", "-o", str(target))
    exported = json.loads(target.read_text())
    assert exported == expected
    assert list(exported["initial_annots"]) == sorted(expected["initial_annots"])

    # a changed file is version 2 of multilabel; ImageNet-M keeps only its listed images'
    # judgements, and image 42 is not listed, so it stays at version 1. An older multilabel
    # version still exports.
    changed = copy.deepcopy(raw)
    changed["initial_annots"]["ILSVRC2012_val_00000042.JPEG"]["unclear"] = [
        datasets.imagenet_wnids(data_dir)[8]]
    source.write_text(json.dumps(changed))
    _run("import_multilabel", str(source))
    v1, v2 = _versions("multilabel")
    assert (v2.parent_id, len(_versions("imagenet-m"))) == (v1.pk, 1)
    assert json.loads(_run("export_labels", "imagenet", "multilabel", "--version", "1")) \
        == expected
    latest = json.loads(_run("export_labels", "imagenet", "multilabel"))
    del changed["initial_annots"][V2_NAME]
    assert latest == changed


def test_it_exports_real_in_the_real_json_layout(loaded: Settings, data_dir: Path) -> None:
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    exported = json.loads(_run("export_labels", "imagenet", "real", "--version", "1"))
    assert exported == [sorted(labels) for labels in real]


def test_it_refuses_what_it_cannot_import_or_export(loaded: Settings, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="only multilabel and real sets"):
        _run("export_labels", "imagenet", "original")
    with pytest.raises(CommandError, match="has no version 7"):
        _run("export_labels", "imagenet", "real", "--version", "7")
    with pytest.raises(CommandError, match="no file"):
        _run("import_multilabel", str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"initial_annots": {
        "ILSVRC2012_val_00000001.JPEG": {"correct": ["n00000000"]}}}))
    with pytest.raises(CommandError, match="unknown WordNet id 'n00000000'"):
        _run("import_multilabel", str(bad))
    assert _versions("multilabel") == []


def test_it_credits_the_versions_to_the_author_the_command_names(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "human_accuracy.json"
    source.write_text(json.dumps(_file(data_dir)))
    with pytest.raises(CommandError, match="^no user 'nobody'$"):
        _run("import_multilabel", str(source), "--author", "nobody")
    assert _versions("multilabel") == []  # refused before anything was made

    curator = factories.user_create("curator")
    _run("import_multilabel", str(source), "--author", "curator", "--note", "panel of 2026")
    (ml,), (im,) = _versions("multilabel"), _versions("imagenet-m")
    assert (ml.author, ml.note, im.author, im.note) == (
        curator, "panel of 2026", curator, "panel of 2026")
