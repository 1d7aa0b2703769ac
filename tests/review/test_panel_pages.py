"""What the imported panel decisions show: a submission's top-1 predictions that repeat a mistake
the expert panel judged major (its page), and the review taxonomy in the form, the API and its
schema. Expected values are counted here with plain loops over the real JSON files."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.review.mistakes.selectors import submission_panel_major_hits
from leaderboard.review.views import ReviewVoteForm
from tests.api_support import api_client
from tests.review.conftest import reviewers, submit_imagenet

pytestmark = pytest.mark.django_db

TAXONOMY_SEVERITIES = ["major", "minor", "borderline"]
TAXONOMY_CATEGORIES = ["fine_grained", "fine_grained_oov", "fine_grained_multilabel",
                       "spurious_correlation", "non_prototypical"]


def _mistakes(data_dir: Path, name: str) -> dict[str, dict[str, Any]]:
    return json.loads((data_dir / "imagenet/mistakes" / name).read_text())


def _example(name: str) -> int:
    return int(name[len("ILSVRC2012_val_"):-len(".JPEG")]) - 1


def _import(data_dir: Path, name: str, model: str) -> None:
    call_command("import_mistake_reviews", str(data_dir / "imagenet/mistakes" / name),
                 "--model", model, stdout=io.StringIO())


def test_it_counts_the_top1_predictions_that_repeat_a_major_mistake(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    vit = _mistakes(data_dir, "vit3b_mistakes.json")
    major = sorted((_example(n), v["top_prediction"]) for n, v in vit.items()
                   if v["failure severity"] == "Major")
    milder = sorted((_example(n), v["top_prediction"]) for n, v in vit.items()
                    if v["failure severity"] != "Major")
    major_images = {e for e, _ in major}
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    top1 = np.array([labels[0] if labels else 0 for labels in real], dtype=np.int64)
    for example, cls in major + milder:  # no other prediction is the panel's class
        top1[example] = (cls + 500) % 1000
    for example, cls in major[:9]:  # nine repeat a major mistake
        top1[example] = cls
    for example, cls in [p for p in milder if p[0] not in major_images][:5]:
        top1[example] = cls  # five repeat a minor or borderline one: not counted
    for example, cls in major[9:12]:
        top1[example] = (cls + 1) % 1000  # three miss those images another way
    submission = submit_imagenet(top1, tmp_path, "nine")
    submission.refresh_from_db()
    assert submission_panel_major_hits(submission=submission) is None  # nothing imported yet

    _import(data_dir, "vit3b_mistakes.json", "ViT-3B")
    expected = [(e, c) for e, c in major if top1[e] == c]  # a plain loop over the file
    assert len(expected) == 9
    panel = submission_panel_major_hits(submission=submission)
    assert panel is not None
    assert (panel.count, panel.major_pairs, panel.models) == (9, len(major), ["ViT-3B"])
    assert [(h.example, h.predicted.class_id) for h in panel.hits] == expected
    names = [c["synset"][0] for c in json.loads(
        (data_dir / "imagenet/class_info.json").read_text())]
    first = panel.hits[0]
    entry = vit[f"ILSVRC2012_val_{first.example + 1:08d}.JPEG"]
    assert (first.file_name, first.predicted.name, first.models) == (
        f"ILSVRC2012_val_{first.example + 1:08d}.JPEG", names[entry["top_prediction"]],
        ["ViT-3B"])

    page = Client().get(f"/submissions/{submission.pk}/").content.decode()
    assert '<strong id="panel-major-count">9</strong>' in page
    assert re.findall(r'<tr data-example="(\d+)">', page) == [str(e) for e, _ in expected]

    # the second model's decisions add its major pairs (the union of both files)
    soups = _mistakes(data_dir, "greedy_soups_mistakes.json")
    both = set(major) | {(_example(n), v["top_prediction"]) for n, v in soups.items()
                         if v["failure severity"] == "Major"}
    _import(data_dir, "greedy_soups_mistakes.json", "Greedy Soups")
    panel = submission_panel_major_hits(submission=submission)
    assert panel is not None
    assert (panel.count, panel.major_pairs, panel.models) == (
        sum(1 for e, c in both if top1[e] == c), len(both), ["Greedy Soups", "ViT-3B"])


def test_it_shows_no_panel_section_outside_imagenet(scored_models: dict[str, Any],
                                                    data_dir: Path) -> None:
    _import(data_dir, "vit3b_mistakes.json", "ViT-3B")
    submission = next(iter(scored_models.values()))
    assert submission_panel_major_hits(submission=submission) is None
    assert "panel-major" not in Client().get(f"/submissions/{submission.pk}/").content.decode()


def test_it_uses_the_authors_taxonomy_in_the_form_the_api_and_the_schema(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    form = ReviewVoteForm()
    assert [v for v, _ in form.fields["severity"].choices][1:] == TAXONOMY_SEVERITIES
    assert [v for v, _ in form.fields["category"].choices][1:] == TAXONOMY_CATEGORIES
    schema = Client().get("/api/schema/?format=json").json()["components"]["schemas"]
    enums = {name: body["enum"] for name, body in schema.items() if "enum" in body}
    assert [e for e in enums.values() if set(TAXONOMY_CATEGORIES) <= set(e)] == [
        TAXONOMY_CATEGORIES]
    assert TAXONOMY_SEVERITIES in enums.values()

    real = json.loads((data_dir / "imagenet/real.json").read_text())
    top1 = np.array([labels[0] if labels else 0 for labels in real], dtype=np.int64)
    top1[:3] = [(labels[0] + 1) % 1000 if labels else 1 for labels in real[:3]]
    submit_imagenet(top1, tmp_path, "three")  # makes review items
    (maintainer,) = reviewers(1)
    from leaderboard.review.models import ReviewItem

    item = ReviewItem.objects.filter(label_set__slug="real").first()
    assert item is not None
    url = f"/api/review/items/{item.pk}/votes/"
    client = api_client(maintainer)
    answer = client.post(url, {"verdict": "wrong", "severity": "lethal",
                               "category": "fine_grained"}, format="json")
    assert answer.status_code == 400 and answer.json()["error"]["field"] == "severity"
    answer = client.post(url, {"verdict": "wrong", "severity": "borderline",
                               "category": "fine_grained_multilabel"}, format="json")
    assert answer.status_code == 201
    vote = item.votes.get()
    assert (vote.severity, vote.category) == ("borderline", "fine_grained_multilabel")


def test_it_maps_stray_stored_spellings_to_the_taxonomy_in_the_migration(
    bare_label_set: Any,
) -> None:
    import importlib

    from django.apps import apps

    from leaderboard.review.models import ReviewItem, ReviewVote

    migration = importlib.import_module("leaderboard.migrations.0011_panel_mistakes")
    item = ReviewItem.objects.create(label_set=bare_label_set, example_index=1, class_id=2)
    stored = [("major", "fine_grained"), ("Major", "Fine-grained error with OOV"),
              ("Borderline", "Fine-grained, out of vocabulary"), ("", "Spurious Correlation"),
              # (the column holds 32 characters: PostgreSQL never stored a longer spelling)
              ("minor", "Non-Prototypical"), ("severe", "lighting")]
    for i, (severity, category) in enumerate(stored):
        ReviewVote.objects.create(item=item, reviewer=reviewers(1, f"r{i}-")[0],
                                  verdict="wrong", severity=severity, category=category)
    migration.votes_to_taxonomy(apps, None)
    assert list(ReviewVote.objects.order_by("id").values_list("severity", "category")) == [
        ("major", "fine_grained"), ("major", "fine_grained_oov"),
        ("borderline", "fine_grained_oov"), ("", "spurious_correlation"),
        ("minor", "non_prototypical"), ("severe", "lighting")]  # unknown: left as is
