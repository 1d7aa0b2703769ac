"""The human-validated errors an audit's flags are measured against, read through each
built-in benchmark's bundle (workers/audits/validation.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.audits.conftest import validated
from tests.label_error_study import PUBLISHED_ERRORS, example_of
from workers.audits import load_validated_errors


@pytest.mark.parametrize("benchmark", sorted(PUBLISHED_ERRORS))
def test_it_reads_the_published_validated_errors_of_every_built_in_benchmark(
    data_dir: Path, benchmark: str
) -> None:
    entries = json.loads((data_dir / benchmark / "cleanlab_mturk.json").read_text())
    errors, checked = validated(data_dir, benchmark)
    read = load_validated_errors(data_dir, benchmark)

    assert len(read.checked) == len(entries)
    assert read.checked == checked
    assert read.errors == errors
    assert len(read.errors) == PUBLISHED_ERRORS[benchmark]


def test_it_names_examples_by_the_bundle_s_naming(data_dir: Path) -> None:
    # ImageNet's file numbers are 1-based; IMDB names its examples through an index list
    entries = json.loads((data_dir / "imagenet/cleanlab_mturk.json").read_text())
    assert load_validated_errors(data_dir, "imagenet").checked == {
        int(e["id"]) - 1 for e in entries}
    # (vote ids are "test/neg/10003_3", names "neg/10003_3.txt")
    named_once = example_of(data_dir, "imdb")  # vote id -> the one index named so
    entries = json.loads((data_dir / "imdb/cleanlab_mturk.json").read_text())
    # every voted review is named once in the list
    assert [e["id"] for e in entries if e["id"] not in named_once] == []
    assert load_validated_errors(data_dir, "imdb").checked == {
        named_once[e["id"]] for e in entries}


def test_it_refuses_a_benchmark_without_a_vote_file(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="^no human validation file for 'nope': not a "
                                         "built-in benchmark \\(20news, caltech256, "):
        load_validated_errors(data_dir, "nope")
