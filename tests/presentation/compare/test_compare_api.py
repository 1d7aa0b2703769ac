"""The comparison of two submissions (GET /api/submissions/<id>/compare/<other>/), checked
against counts computed here from the real CIFAR-10 prediction and label files, and scipy's
exact binomial test (docs/metrics.md §10.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from scipy.stats import binomtest

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_visibility_set
from tests import factories
from tests.scored_models import MODELS, predictions

pytestmark = pytest.mark.django_db

# label set -> (example set, labels file): the label sets whose hits are computed here
DIRECT = {
    "original": ("cifar10-test", "cifar10/original_labels.npy"),
    "cifar10h": ("cifar10-test", "cifar10/cifar10h_probs.npy"),
    "cifar10.1-v4": ("cifar10.1-v4", "cifar10/cifar10.1_v4_labels.npy"),
    "cifar10.1-v6": ("cifar10.1-v6", "cifar10/cifar10.1_v6_labels.npy"),
}


def direct_hits(data_dir: Path, model: str, slug: str) -> np.ndarray:
    example_set, labels_file = DIRECT[slug]
    preds = predictions(data_dir, model, example_set)
    labels = np.load(data_dir / labels_file)
    if slug == "cifar10h":  # any class tied for the most human votes counts
        return np.asarray(labels[np.arange(preds.size), preds] == labels.max(axis=1))
    return np.asarray(preds == labels)


def compare(client: Client, first: Submission, second: Submission, **query: Any) -> Any:
    return client.get(f"/api/submissions/{first.pk}/compare/{second.pk}/", query)


def test_it_gives_scipys_exact_p_values_and_the_discordant_counts_of_every_pair(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    for a in MODELS:
        for b in MODELS:
            if a == b:
                continue
            response = compare(client, scored_models[a], scored_models[b])
            assert response.status_code == 200, response.content
            body = response.json()
            by_slug = {c["slug"]: c for c in body["label_sets"]}
            assert set(by_slug) == {*DIRECT, "corrected"}
            for slug in DIRECT:
                ha, hb = direct_hits(data_dir, a, slug), direct_hits(data_dir, b, slug)
                only_a, only_b = int((ha & ~hb).sum()), int((hb & ~ha).sum())
                row = by_slug[slug]
                assert (row["only_first"], row["only_second"]) == (only_a, only_b)
                expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
                assert row["p_value"] == pytest.approx(expected, rel=1e-9, abs=1e-300)
                assert row["first"]["correct"] == int(ha.sum())
                assert row["second"]["correct"] == int(hb.sum())
                assert row["first"]["accuracy"] == pytest.approx(ha.mean(), abs=1e-12)
                assert row["difference"] == pytest.approx(ha.mean() - hb.mean(), abs=1e-12)



def competition_rank(values: dict[str, float], model: str) -> int:
    return 1 + sum(v > values[model] for m, v in values.items() if m != model)


def test_it_gives_the_rank_of_each_and_a_private_ones_rank_off_the_board(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    a, b, c = MODELS
    accuracy = {slug: {m: float(direct_hits(data_dir, m, slug).mean()) for m in MODELS}
                for slug in DIRECT}
    body = compare(client, scored_models[a], scored_models[c]).json()
    for row in body["label_sets"]:
        if row["slug"] in DIRECT:
            assert row["first"]["rank"] == competition_rank(accuracy[row["slug"]], a)
            assert row["second"]["rank"] == competition_rank(accuracy[row["slug"]], c)
            assert row["first"]["on_board"] and row["second"]["on_board"]
    # c private: its owner sees the rank it would have among a and b; a's rank is among a, b
    submission_visibility_set(submission=scored_models[c], public=False)
    client.force_login(scored_models[c].owner)
    body = compare(client, scored_models[a], scored_models[c]).json()
    assert body["second"]["public"] is False
    for row in body["label_sets"]:
        if row["slug"] in DIRECT:
            public = {m: v for m, v in accuracy[row["slug"]].items() if m != c}
            assert row["first"]["rank"] == competition_rank(public, a)
            assert row["second"]["rank"] == competition_rank({**public, c: accuracy[
                row["slug"]][c]}, c)
            assert (row["first"]["on_board"], row["second"]["on_board"]) == (True, False)


def test_it_lists_exactly_the_examples_one_gets_right_page_by_page(
    client: Client, scored_models: dict[str, Submission], data_dir: Path
) -> None:
    a, b = MODELS[0], MODELS[2]
    ha, hb = direct_hits(data_dir, a, "original"), direct_hits(data_dir, b, "original")
    expected = np.flatnonzero(ha != hb).tolist()
    labels = np.load(data_dir / "cifar10/original_labels.npy")
    votes = np.load(data_dir / "cifar10/cifar10h_probs.npy")
    seen: list[int] = []
    size = 40
    pages = -(-len(expected) // size)
    for page in range(1, pages + 1):
        body = compare(client, scored_models[a], scored_models[b], label_set="original",
                       page=page, page_size=size).json()["examples"]
        assert (body["count"], body["page"], body["page_count"]) == (len(expected), page, pages)
        assert len(body["results"]) == min(size, len(expected) - (page - 1) * size)
        for row in body["results"]:
            i = row["index"]
            assert row["right"] == ("first" if ha[i] else "second")
            assert row["file_name"] == f"cifar10-test[{i}]"
            assert row["labels"]["original"] == [int(labels[i])]
            assert row["labels"]["cifar10h"] == np.flatnonzero(
                votes[i] == votes[i].max()).tolist()
            assert set(row["labels"]) == {"original", "corrected", "cifar10h"}
            seen.append(i)
    assert seen == expected
    past = compare(client, scored_models[a], scored_models[b], page=pages + 1, page_size=size)
    assert past.status_code == 404
    assert past.json()["error"]["code"] == "not_found"
    for bad in (0, 201, "20.0"):
        refused = compare(client, scored_models[a], scored_models[b], page_size=bad)
        assert refused.status_code == 400
        assert refused.json()["error"]["field"] == "page_size"
    # a new test set: its own images, its own labels only
    v6 = compare(client, scored_models[a], scored_models[b], label_set="cifar10.1-v6",
                 page_size=200).json()["examples"]
    h6a, h6b = direct_hits(data_dir, a, "cifar10.1-v6"), direct_hits(data_dir, b, "cifar10.1-v6")
    assert v6["count"] == int((h6a != h6b).sum())
    assert [r["index"] for r in v6["results"]] == np.flatnonzero(h6a != h6b)[:200].tolist()
    assert {k for r in v6["results"] for k in r["labels"]} == {"cifar10.1-v6"}


def test_it_links_each_example_of_the_corrected_set_to_its_gallery_card(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    a, b = scored_models[MODELS[0]], scored_models[MODELS[1]]
    body = compare(client, a, b, label_set="corrected", page_size=200).json()["examples"]
    linked = [r for r in body["results"] if r["gallery_url"]]
    assert linked
    for row in linked:
        wrong = b if row["right"] == "first" else a
        assert row["gallery_url"].startswith(f"/submissions/{wrong.pk}/mistakes/?set=corrected")
        card = client.get(row["gallery_url"])
        assert card.status_code == 200
        assert f'id="example-{row["index"]}"' in card.content.decode()


def test_it_refuses_whom_may_not_see_a_private_one_and_what_cannot_be_compared(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    a, b = scored_models[MODELS[0]], scored_models[MODELS[1]]
    submission_visibility_set(submission=b, public=False)
    for user in (None, a.owner):
        if user is not None:
            client.force_login(user)
        for pair in ((a, b), (b, a)):
            refused = compare(client, *pair)
            assert refused.status_code == 404
            assert refused.json()["error"]["code"] == "not_found"
    for user in (b.owner, factories.host_create("staff")):
        client.force_login(user)
        assert compare(client, a, b).status_code == 200
    client.force_login(a.owner)
    queued = Submission.objects.create(owner=a.owner, benchmark=a.benchmark, model_name="q")
    mnist = Submission.objects.create(owner=a.owner, benchmark=Benchmark.objects.get(
        slug="mnist"), model_name="m", status=Submission.Status.SCORED)
    for other, code in ((queued, "not_scored"), (mnist, "different_benchmarks"),
                        (a, "same_submission")):
        refused = compare(client, a, other)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == code
    refused = compare(client, a, scored_models[MODELS[2]], label_set="nope")
    assert (refused.status_code, refused.json()["error"]["field"]) == (400, "label_set")


def test_it_never_compares_on_a_hidden_label_set(
    client: Client, scored_models: dict[str, Submission]
) -> None:
    LabelSet.objects.filter(benchmark__slug="cifar10", slug="cifar10h").update(
        labels_hidden=True)
    a, b = scored_models[MODELS[0]], scored_models[MODELS[1]]
    body = compare(client, a, b).json()
    assert "cifar10h" not in {c["slug"] for c in body["label_sets"]}
    assert all("cifar10h" not in r["labels"] for r in body["examples"]["results"])
    refused = compare(client, a, b, label_set="cifar10h")
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "unknown_label_set")
