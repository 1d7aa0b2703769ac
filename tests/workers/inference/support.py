"""The built-in benchmarks' declared inputs (their bundles' `[inputs]` tables), as the
inference tests hand them to the library."""

from __future__ import annotations

from workers.inference.preprocessing import Preprocessing, preprocessing_of
from workers.scoring.bundles import builtin_bundle


def inputs_of(slug: str) -> Preprocessing:
    inputs = preprocessing_of(builtin_bundle(slug))
    assert inputs is not None, f"{slug}'s bundle declares no inputs"
    return inputs


MNIST = inputs_of("mnist")
CIFAR10 = inputs_of("cifar10")
IMAGENET = inputs_of("imagenet")
