"""The review pages show a text benchmark's example as its text (docs/hosts/review-queue.md,
"The example"): IMDB's review from the folder EVALSERVER_IMDB_TEST_DIR names (the release's
aclImdb/test), escaped, in a scroll box, cut at 10,000 characters with the full length
stated; otherwise a message naming the setting. 20 Newsgroups' bundle declares no texts. No
texts are in the data directory here (../shared/data/MANIFEST.md): the folder is written into
tmp_path under the real names of cleanlab_index_to_filename.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import LabelSet
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.review.ground_truth.services import ground_truth_candidate_create
from tests.review.conftest import reviewers

pytestmark = pytest.mark.django_db


def _candidate(benchmark: str, example: int, data_dir: Path) -> GroundTruthCandidate:
    """An open candidate on the benchmark's corrected labels: the other class than the
    original label (IMDB has two)."""
    original = int(np.load(data_dir / f"{benchmark}/original_labels.npy")[example])
    return ground_truth_candidate_create(
        label_set=LabelSet.objects.get(benchmark__slug=benchmark, slug="corrected"),
        example_index=example, guessed=1 - original if original < 2 else 0)


def _example_block(client: Client, benchmark: str) -> str:
    page = client.get(f"/review/{benchmark}/ground-truth/next/").content.decode()
    block = page.split('<div class="review-example">', 1)[1].split("<dl", 1)[0]
    return re.sub(r"\s+", " ", block).strip()


def _reviewer_client() -> Client:
    client = Client()
    client.force_login(reviewers(1)[0])
    return client


def test_it_shows_an_imdb_review_escaped_and_cut_with_its_length(
    loaded: Settings, data_dir: Path, tmp_path: Path
) -> None:
    names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    assert names[0] == "neg/9641_4.txt"
    folder = tmp_path / "aclImdb/test"
    (folder / "neg").mkdir(parents=True)
    opening = "A <b>dull</b> film & a \"twist\".<br /><br />Skip it. "
    review = opening + "é" * (12_345 - len(opening))  # 12,345 characters, 2 bytes each é
    (folder / names[0]).write_text(review, encoding="utf-8")
    client = _reviewer_client()
    _candidate("imdb", 0, data_dir)

    loaded.EVALSERVER_IMDB_TEST_DIR = None
    assert _example_block(client, "imdb") == (
        '<div class="review-example-missing" role="note"> <p><strong>The text of '
        "<code>neg/9641_4.txt</code> is not available on this server</strong>: "
        "EVALSERVER_IMDB_TEST_DIR is not set.</p> <p class=\"remedy\">An operator sets "
        "EVALSERVER_IMDB_TEST_DIR to the folder of UTF-8 text files named by the examples and "
        "restarts the server.</p> </div> </div>")

    loaded.EVALSERVER_IMDB_TEST_DIR = folder
    block = _example_block(client, "imdb")
    shown = ("A &lt;b&gt;dull&lt;/b&gt; film &amp; a &quot;twist&quot;.&lt;br /&gt;&lt;br "
             "/&gt;Skip it. " + "é" * (10_000 - len(opening)))
    assert block == (
        '<div class="review-text" tabindex="0" role="region" aria-label="The text of '
        f'neg/9641_4.txt">{shown}</div> <p class="muted review-text-length">The first 10,000 '
        "of 12,345 characters.</p> </div>")


def test_it_shows_a_short_text_whole(loaded: Settings, data_dir: Path, tmp_path: Path) -> None:
    names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    last = len(names) - 1
    (tmp_path / names[last]).parent.mkdir(parents=True)
    (tmp_path / names[last]).write_bytes(b"Loved it.\n\xff")  # one byte that is not UTF-8
    loaded.EVALSERVER_IMDB_TEST_DIR = tmp_path
    _candidate("imdb", last, data_dir)
    assert _example_block(_reviewer_client(), "imdb") == (
        '<div class="review-text" tabindex="0" role="region" aria-label="The text of '
        f'{names[last]}">Loved it.\n\ufffd</div> <p class="muted review-text-length">11 '
        "characters.</p> </div>".replace("\n", " "))


def test_it_says_the_20news_bundle_declares_no_texts(loaded: Settings, data_dir: Path) -> None:
    _candidate("20news", 3, data_dir)
    block = _example_block(_reviewer_client(), "20news")
    assert block == (
        '<div class="review-example-missing" role="note"> <p><strong>The text of '
        "<code>20news-test[3]</code> is not available on this server</strong>: the bundle of "
        "20 Newsgroups declares no texts for its example set 20news-test.</p> <p "
        'class="remedy">A host declares them in the bundle (`texts`, docs/bundles.md §4.2) '
        "and loads it again; an operator then puts them where it says.</p> </div> </div>")
