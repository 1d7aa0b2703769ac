"""The human-validated errors an audit's flags are measured against, read through each
built-in benchmark's bundle (workers/audits/validation.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workers.audits import load_validated_errors

# Label errors that the study's MTurk validation confirmed, per test set (Northcutt, Athalye,
# Mueller 2021, Table 2: "validated errors" column).
PUBLISHED_ERRORS = {"mnist": 15, "cifar10": 54, "cifar100": 585, "caltech256": 458,
                    "20news": 82, "imdb": 725, "imagenet": 2916}


def _kept_given(entry: dict[str, object]) -> bool:
    """At least 3 of 5 workers kept the given label: not an error."""
    votes = entry["mturk"]
    assert isinstance(votes, dict)
    return int(votes.get("given", 0)) >= 3


@pytest.mark.parametrize("benchmark", sorted(PUBLISHED_ERRORS))
def test_it_reads_the_published_validated_errors_of_every_built_in_benchmark(
    data_dir: Path, benchmark: str
) -> None:
    entries = json.loads((data_dir / benchmark / "cleanlab_mturk.json").read_text())
    validated = load_validated_errors(data_dir, benchmark)

    assert len(validated.checked) == len(entries)
    assert len(validated.errors) == sum(not _kept_given(e) for e in entries)
    assert len(validated.errors) == PUBLISHED_ERRORS[benchmark]


def test_it_names_examples_by_the_bundle_s_naming(data_dir: Path) -> None:
    # ImageNet's file numbers are 1-based; IMDB names its examples through an index list
    entries = json.loads((data_dir / "imagenet/cleanlab_mturk.json").read_text())
    assert load_validated_errors(data_dir, "imagenet").checked == {
        int(e["id"]) - 1 for e in entries}
    # (vote ids are "test/neg/10003_3", names "neg/10003_3.txt")
    names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    where: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        where.setdefault(name, []).append(index)
    entries = json.loads((data_dir / "imdb/cleanlab_mturk.json").read_text())
    (indices,) = {len(where[str(e["id"]).removeprefix("test/") + ".txt"]) for e in entries}
    assert indices == 1  # every voted review is named once in the list
    assert load_validated_errors(data_dir, "imdb").checked == {
        where[str(e["id"]).removeprefix("test/") + ".txt"][0] for e in entries}


def test_it_refuses_a_benchmark_without_a_vote_file(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="^no human validation file for 'nope': not a "
                                         "built-in benchmark \\(20news, caltech256, "):
        load_validated_errors(data_dir, "nope")
