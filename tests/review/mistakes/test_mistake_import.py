"""import_mistake_reviews: the expert panel's real decisions on ViT-3B's and Greedy Soups'
ImageNet mistakes (imagenet/mistakes/*.json) become settled wrong decisions in new versions of
ReaL (and multi-label), and review items where our labels accept the pair.

Expected values are counted here with plain loops over the JSON files, real.json and
real_scores.npz, not with the server's arrays."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.review.mistakes import services as mistake_services
from leaderboard.review.models import PanelMistake, ReviewItem
from leaderboard.review.selectors import review_item_detail
from leaderboard.submissions.models import Score
from tests import task_names
from tests.api_support import api_client
from tests.review.conftest import reviewers, submit_imagenet

pytestmark = pytest.mark.django_db

VIT = "vit3b_mistakes.json"
SOUPS = "greedy_soups_mistakes.json"
# The authors' spellings, as this test reads them (not the server's table).
CATEGORY = {"Fine-grained error": "fine_grained", "Fine-grained error with OOV": "fine_grained_oov",
            "Fine-grained with OOV": "fine_grained_oov", "Spurious Correlation":
            "spurious_correlation", "Non-prototypical": "non_prototypical",
            "Fine-grained with Multilabel Options": "fine_grained_multilabel"}


def _mistakes(data_dir: Path, name: str) -> dict[str, dict[str, Any]]:
    return json.loads((data_dir / "imagenet/mistakes" / name).read_text())


def _pairs(mistakes: dict[str, dict[str, Any]]) -> list[tuple[int, int]]:
    """(0-based example, predicted class) of every entry, read from the file name's digits."""
    return [(int(name[len("ILSVRC2012_val_"):-len(".JPEG")]) - 1, int(v["top_prediction"]))
            for name, v in mistakes.items()]


def _real(data_dir: Path) -> tuple[list[list[int]], set[tuple[int, int]]]:
    """ReaL's accepted lists and its rated (example, class) pairs."""
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    with np.load(data_dir / "imagenet/real_scores.npz") as scores:
        rated = {(int(name[15:23]) - 1, int(cls)) for name, cls in scores["info"]}
    return real, rated


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_mistake_reviews", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _versions(slug: str) -> list[LabelSetVersion]:
    return list(LabelSetVersion.objects.filter(label_set__benchmark__slug="imagenet",
                                               label_set__slug=slug).order_by("number"))


def _keys(pairs: set[tuple[int, int]]) -> set[int]:
    return {e * 1000 + c for e, c in pairs}


def test_it_records_the_vit3b_panel_decisions_in_a_new_real_version(
    loaded: Settings, data_dir: Path, django_capture_on_commit_callbacks: Any,
    sent: list[tuple[str, int]],
) -> None:
    vit = _mistakes(data_dir, VIT)
    real, rated = _real(data_dir)
    accepted, already, fresh = set(), set(), set()
    for example, cls in _pairs(vit):
        if cls in real[example]:
            accepted.add((example, cls))
        elif (example, cls) in rated:  # rated and not accepted: ReaL judged it wrong
            already.add((example, cls))
        else:
            fresh.add((example, cls))
    assert (len(vit), len(accepted), len(already), len(fresh)) == (378, 85, 275, 18)

    with django_capture_on_commit_callbacks(execute=True):
        out = _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")

    v1, v2 = _versions("real")
    assert out.splitlines() == [
        f"{VIT}: 378 decisions on ViT-3B's mistakes; 378 new, 0 updated",
        f"imagenet/real: version 2 created; {len(fresh)} newly judged wrong, {len(already)} "
        f"already wrong, {len(accepted)} accepted here (review items: {len(accepted)} new)"]
    assert sent == [(task_names.RESCORE_VERSION, v2.pk)]  # re-scored after the commit
    assert v2.parent_id == v1.pk and "ViT-3B" in v2.note and VIT in v2.note
    old, new = compiled_for_version(v1).arrays, compiled_for_version(v2).arrays
    assert set(new["wrong_keys"].tolist()) == set(old["wrong_keys"].tolist()) | _keys(fresh)
    assert np.array_equal(new["accepted_keys"], old["accepted_keys"])  # nothing overwritten
    assert np.array_equal(new["mask"], old["mask"])
    settled = v2.summary["settled"]
    assert {(s["example"], s["class"]) for s in settled} == fresh
    by_pair = {p: v for p, v in zip(_pairs(vit), vit.values(), strict=True)}
    assert all(s["category"] == CATEGORY[by_pair[(s["example"], s["class"])]["failure category"]]
               and s["severity"] == by_pair[(s["example"], s["class"])]["failure severity"]
               .lower() and s["source"] == f"{VIT} (ViT-3B)" for s in settled)
    rows = PanelMistake.objects.all()
    assert {(m.example_index, m.class_id) for m in rows} == set(_pairs(vit))
    assert {(m.example_index, m.class_id, m.category, m.severity, m.source) for m in rows} == {
        (e, c, CATEGORY[v["failure category"]], v["failure severity"].lower(), VIT)
        for (e, c), v in by_pair.items()}
    assert {m.severity for m in rows} == {"major", "minor", "borderline"}
    items = ReviewItem.objects.filter(label_set__slug="real")
    assert {(i.example_index, i.class_id) for i in items} == accepted
    assert set(items.values_list("status", flat=True)) == {"open"}

    # idempotent: no second version, no duplicate decision or item, nothing queued
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    assert again.splitlines()[1].startswith("imagenet/real: version 2 unchanged, latest is; 0 "
                                            f"newly judged wrong, {len(already) + len(fresh)}")
    assert "378 decisions on ViT-3B's mistakes; 0 new, 0 updated" in again
    assert (len(_versions("real")), PanelMistake.objects.count(), items.count(), sent) == (
        2, 378, len(accepted), [])

    # the other model's file builds on version 2: what ViT-3B's settled is already wrong
    soups = _mistakes(data_dir, SOUPS)
    soups_fresh = {(e, c) for e, c in _pairs(soups) if c not in real[e]
                   and (e, c) not in rated and (e, c) not in fresh}
    soups_accepted = {(e, c) for e, c in _pairs(soups) if c in real[e]}
    _run(str(data_dir / "imagenet/mistakes" / SOUPS), "--model", "Greedy Soups")
    v3 = _versions("real")[-1]
    assert (v3.number, v3.parent_id) == (3, v2.pk)
    assert {(s["example"], s["class"]) for s in v3.summary["settled"]} == soups_fresh
    assert {(i.example_index, i.class_id) for i in items.all()} == accepted | soups_accepted
    assert PanelMistake.objects.count() == 378 + 249


def test_it_shows_both_judgements_on_a_review_item(
    loaded: Settings, data_dir: Path
) -> None:
    vit = _mistakes(data_dir, VIT)
    _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    item = ReviewItem.objects.filter(label_set__slug="real").order_by("id").first()
    assert item is not None  # the first in the queue: no submission predicts any of them
    entry = vit[f"ILSVRC2012_val_{item.example_index + 1:08d}.JPEG"]
    assert entry["top_prediction"] == item.class_id
    detail = review_item_detail(item_id=item.pk)
    assert detail.judgement == "accepted"
    assert [(p.model, p.source, p.verdict, p.severity, p.category) for p in detail.panel] == [
        ("ViT-3B", VIT, "wrong", entry["failure severity"].lower(),
         CATEGORY[entry["failure category"]])]
    (maintainer,) = reviewers(1)
    body = api_client(maintainer).get(f"/api/review/items/{item.pk}/").json()
    assert body["judgement"] == "accepted"
    assert body["panel"] == [{
        "model": "ViT-3B", "source": VIT, "verdict": "wrong",
        "severity": entry["failure severity"].lower(),
        "reported_severity": "major" if entry["failure severity"] == "Major" else "minor",
        "category": CATEGORY[entry["failure category"]]}]
    client = api_client(maintainer)
    client.force_login(maintainer)
    page = client.get("/review/imagenet/next/?label_set=real").content.decode()
    assert "Expert panel" in page and "reviewing ViT-3B" in page and VIT in page


def test_it_rescores_so_a_judged_pair_is_no_longer_novel(
    loaded: Settings, data_dir: Path, tmp_path: Path, django_capture_on_commit_callbacks: Any,
) -> None:
    from leaderboard.tasks.cpu import rescore_version

    vit = _mistakes(data_dir, VIT)
    real, rated = _real(data_dir)
    fresh = sorted((e, c) for e, c in _pairs(vit) if c not in real[e] and (e, c) not in rated)
    top1 = np.array([labels[0] if labels else 0 for labels in real], dtype=np.int64)
    for example, cls in fresh[:7]:  # seven novel pairs the panel judged wrong
        top1[example] = cls
    submission = submit_imagenet(top1, tmp_path, "seven")
    before = Score.objects.get(submission=submission, label_set__slug="real").record
    _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    version = _versions("real")[-1]
    assert rescore_version.apply(args=[version.pk], task_id="rescore-panel").get() == "done"
    after = Score.objects.get(submission=submission, label_set_version=version).record
    # novel pairs count on included images only (a non-empty ReaL list)
    included = sum(1 for e, _ in fresh[:7] if real[e])
    assert (before["novel_count"], after["novel_count"]) == (included, 0)
    assert (after["correct"], after["total"]) == (before["correct"], before["total"])


def _write_multilabel(data_dir: Path, tmp_path: Path) -> tuple[Path, dict[str, set]]:
    """A multi-label file in the human_accuracy_v3.0.0.json layout over 12 of ViT-3B's
    mistake images: 4 accept the predicted class, 4 judge it wrong, 4 accept another class."""
    wnids = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    vit = _mistakes(data_dir, VIT)
    chosen = sorted(vit)[:12]
    annots, expect = {}, {"accepted": set(), "wrong": set(), "fresh": set()}
    for i, name in enumerate(chosen):
        example, cls = int(name[15:23]) - 1, vit[name]["top_prediction"]
        other = (cls + 1) % 1000
        if i < 4:
            annots[name] = {"correct": [wnids[cls]]}
            expect["accepted"].add((example, cls))
        elif i < 8:
            annots[name] = {"correct": [wnids[other]], "wrong": [wnids[cls]]}
            expect["wrong"].add((example, cls))
        else:
            annots[name] = {"correct": [wnids[other]]}
            expect["fresh"].add((example, cls))
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({"initial_annots": annots, "problematic_images": {},
                                "imagenet_m": chosen[:2]}))
    return path, expect


def test_it_judges_the_multilabel_set_on_its_annotated_images_only(
    run_load_benchmarks: Any, catalog_settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    path, expect = _write_multilabel(data_dir, tmp_path)
    catalog_settings.EVALSERVER_MULTILABEL_FILE = path
    run_load_benchmarks("--benchmark", "imagenet")
    out = _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    left_out = 378 - 12
    assert (f"imagenet/multilabel: version 2 created; {len(expect['fresh'])} newly judged wrong, "
            f"{len(expect['wrong'])} already wrong, {len(expect['accepted'])} accepted here "
            f"(review items: {len(expect['accepted'])} new), {left_out} on images outside the "
            "annotated set (left out)") in out.splitlines()
    v1, v2 = _versions("multilabel")
    old, new = compiled_for_version(v1).arrays, compiled_for_version(v2).arrays
    assert set(new["wrong_keys"].tolist()) == set(old["wrong_keys"].tolist()) | _keys(
        expect["fresh"])
    assert np.array_equal(new["mask"], old["mask"])  # no image joined the evaluation
    assert {(i.example_index, i.class_id) for i in
            ReviewItem.objects.filter(label_set__slug="multilabel")} == expect["accepted"]
    assert len(_versions("imagenet-m")) == 1  # review does not revise ImageNet-M


def _bad_files(data_dir: Path) -> list[tuple[str, Any, str]]:
    vit = _mistakes(data_dir, VIT)
    names = sorted(vit)
    victim = names[200]

    def edited(**change: Any) -> dict[str, Any]:
        out = json.loads(json.dumps(vit))
        out[victim].update(change)
        return out

    renamed = dict(vit)
    renamed["ILSVRC2012_val_00050001.JPEG"] = renamed.pop(victim)
    missing = json.loads(json.dumps(vit))
    del missing[victim]["failure severity"]
    return [
        ("severity", edited(**{"failure severity": "Catastrophic"}),
         f"entry '{victim}': unknown failure severity 'Catastrophic' (known: Borderline, "
         "Major, Minor)"),
        ("category", edited(**{"failure category": "Lighting"}),
         f"entry '{victim}': unknown failure category 'Lighting'"),
        ("class", edited(top_prediction=1000),
         f"entry '{victim}': top_prediction 1000 is not a class id 0..999"),
        ("bool", edited(top_prediction=True), f"entry '{victim}': top_prediction True"),
        ("name", renamed, "entry 'ILSVRC2012_val_00050001.JPEG': not an ImageNet validation "
                          "file name"),
        ("missing", missing, f"entry '{victim}': missing 'failure severity'"),
        ("list", list(vit), "expected an object of file name -> decision, got list"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_it_refuses_a_malformed_file_by_name_and_stores_nothing(
    loaded: Settings, data_dir: Path, tmp_path: Path, case: int
) -> None:
    path = tmp_path / "panel_mistakes.json"
    if case == 7:
        path.write_text('{"ILSVRC2012_val_00000001.JPEG": ')
        expected = "panel_mistakes.json: not valid JSON"
    else:
        _, content, message = _bad_files(data_dir)[case]
        path.write_text(json.dumps(content))
        expected = f"panel_mistakes.json: {message}"
    with pytest.raises(CommandError) as refused:
        _run(str(path), "--model", "ViT-3B")
    assert str(refused.value).startswith(expected)
    assert (PanelMistake.objects.count(), ReviewItem.objects.count(), len(_versions("real"))) \
        == (0, 0, 1)


def test_it_stores_nothing_when_the_import_fails_part_way(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(mistake_services, "_conflict_items", fail)  # after the new version
    with pytest.raises(RuntimeError):
        _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    assert (PanelMistake.objects.count(), ReviewItem.objects.count(), len(_versions("real"))) \
        == (0, 0, 1)


def test_it_needs_a_model_name(loaded: Settings, data_dir: Path) -> None:
    with pytest.raises(CommandError, match="--model must name the model"):
        _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "  ")
    with pytest.raises(CommandError, match="no file"):
        _run(str(data_dir / "imagenet/mistakes/missing.json"), "--model", "ViT-3B")


def test_it_leaves_a_pair_our_reviewers_accepted_decided_and_shows_the_panel_beside(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    from leaderboard.review import services as review

    vit = _mistakes(data_dir, VIT)
    real, rated = _real(data_dir)
    example, cls = next((e, c) for e, c in sorted(_pairs(vit))
                        if real[e] and c not in real[e] and (e, c) not in rated)
    top1 = np.array([labels[0] if labels else 0 for labels in real], dtype=np.int64)
    top1[example] = cls  # the only novel prediction: one review item
    submit_imagenet(top1, tmp_path, "one")
    item = ReviewItem.objects.get(label_set__slug="real", example_index=example, class_id=cls)
    for reviewer in reviewers(3):  # our panel accepts what the expert panel calls a mistake
        review.review_vote_cast(item_id=item.pk, reviewer=reviewer, verdict="correct")
    out = _run(str(data_dir / "imagenet/mistakes" / VIT), "--model", "ViT-3B")
    accepted = sum(1 for e, c in _pairs(vit) if c in real[e]) + 1
    assert (f"{accepted} accepted here (review items: {accepted - 1} new, 1 already decided)"
            in out)
    item.refresh_from_db()
    assert (item.status, item.verdict) == ("decided", "correct")
    detail = review_item_detail(item_id=item.pk)
    assert (detail.judgement, [p.model for p in detail.panel]) == ("accepted", ["ViT-3B"])
