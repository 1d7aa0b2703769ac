"""Class and example names as the loaded definition gives them to every page (the selectors
`benchmark_class_names`, `example_namer`), checked against the data files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import benchmark_class_names, example_namer

pytestmark = pytest.mark.django_db


def test_it_names_classes_in_id_order(loaded: Settings, data_dir: Path) -> None:
    info = json.loads((data_dir / "imagenet/class_info.json").read_text())
    imagenet = Benchmark.objects.get(slug="imagenet")
    assert benchmark_class_names(benchmark=imagenet) == tuple(c["synset"][0] for c in info)
    assert benchmark_class_names(benchmark=Benchmark.objects.get(slug="mnist")) == tuple(
        "0123456789")


def test_it_names_examples_by_pattern_list_or_index(loaded: Settings, data_dir: Path) -> None:
    def namer(slug: str) -> Callable[[int], str]:
        return example_namer(example_set=ExampleSet.objects.get(slug=slug))

    assert namer("imagenet-val")(292) == "ILSVRC2012_val_00000293.JPEG"
    assert namer("imagenet-val")(49_999) == "ILSVRC2012_val_00050000.JPEG"
    for slug, folder in (("imdb-test", "imdb"), ("caltech256", "caltech256")):
        names = json.loads((data_dir / folder / "cleanlab_index_to_filename.json").read_text())
        name = namer(slug)
        assert [name(i) for i in (0, 1, len(names) - 1)] == [names[0], names[1], names[-1]]
    assert namer("cifar10-test")(7) == "cifar10-test[7]"
