"""The benchmarks, image sets and label sets the server knows, and the files each needs.

Slugs are the stable public names listed in docs/metrics.md §15.
This module only describes; `datasets.py` reads files and `label_set_builders.py` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageSetSpec:
    slug: str
    benchmark: str
    name: str
    size: int
    # the relative path (under the data directory) of the original labels of this image set
    description: str = ""


@dataclass(frozen=True)
class LabelSetSpec:
    slug: str
    benchmark: str
    image_set: str
    kind: str  # "single" | "multi" | "soft"
    family: str  # which metric section applies: see metrics.score_label_set
    name: str
    description: str
    citation: str
    # files under the data directory that the builder reads
    files: tuple[str, ...]
    params: tuple[tuple[str, object], ...] = ()
    # optional label sets are built only when their source is configured (multi-label file)
    optional_source: str | None = None

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class BenchmarkSpec:
    slug: str
    name: str
    num_classes: int
    main_image_set: str
    image_sets: tuple[ImageSetSpec, ...]
    label_sets: tuple[LabelSetSpec, ...] = field(default=())

    def image_set(self, slug: str) -> ImageSetSpec:
        for image_set in self.image_sets:
            if image_set.slug == slug:
                return image_set
        raise KeyError(slug)

    def label_sets_for(self, image_set: str) -> tuple[LabelSetSpec, ...]:
        return tuple(ls for ls in self.label_sets if ls.image_set == image_set)


NORTHCUTT = (
    "Northcutt, Athalye, Mueller. Pervasive Label Errors in Test Sets Destabilize "
    "Machine Learning Benchmarks. NeurIPS Datasets and Benchmarks 2021."
)
BEYER = "Beyer, Henaff, Kolesnikov, Zhai, van den Oord. Are we done with ImageNet? 2020."
SHANKAR = (
    "Shankar, Roelofs, Mania, Fang, Recht, Schmidt. Evaluating Machine Accuracy on "
    "ImageNet. ICML 2020; updated by Vasudevan, Caine, Gontijo-Lopes, Fridovich-Keil, "
    "Roelofs. When does dough become a bagel? NeurIPS 2022."
)
VASUDEVAN = (
    "Vasudevan, Caine, Gontijo-Lopes, Fridovich-Keil, Roelofs. When does dough become a "
    "bagel? Analyzing the remaining mistakes on ImageNet. NeurIPS 2022."
)
PETERSON = (
    "Peterson, Battleday, Griffiths, Russakovsky. Human uncertainty makes classification "
    "more robust. ICCV 2019."
)
RECHT = (
    "Recht, Roelofs, Schmidt, Shankar. Do ImageNet Classifiers Generalize to ImageNet? ICML 2019."
)

# The multi-label file is not in the public data directory; a maintainer configures it.
MULTILABEL_SOURCE = "multilabel_file"

IMAGENET_ORIGINAL_FILES = (
    "imagenet/cleanlab_original_labels.npy",
    "imagenet/cleanlab_index_to_filepath.json",
)


def _corrected(
    benchmark: str,
    image_set: str,
    prefix: str,
    threshold: int,
    slug: str,
    extra_files: tuple[str, ...],
) -> LabelSetSpec:
    return LabelSetSpec(
        slug=slug,
        benchmark=benchmark,
        image_set=image_set,
        kind="single",
        family="corrected",
        name=f"Corrected (agreement >= {threshold} of 5)",
        description=(
            "Original labels corrected by five Mechanical Turk workers per flagged example: "
            f"the guessed label where at least {threshold} agreed on it; examples where "
            "the workers found several labels, none, or could not agree are pruned."
        ),
        citation=NORTHCUTT,
        files=extra_files + (f"{prefix}/cleanlab_mturk.json",),
        params=(("threshold", threshold),),
    )


def _original(benchmark: str, image_set: str, files: tuple[str, ...]) -> LabelSetSpec:
    return LabelSetSpec(
        slug="original",
        benchmark=benchmark,
        image_set=image_set,
        kind="single",
        family="original",
        name="Original labels",
        description="The labels published with the dataset, on every example.",
        citation="",
        files=files,
    )


IMAGENET = BenchmarkSpec(
    slug="imagenet",
    name="ImageNet (ILSVRC-2012)",
    num_classes=1000,
    main_image_set="imagenet-val",
    image_sets=(
        ImageSetSpec(
            "imagenet-val",
            "imagenet",
            "ImageNet validation",
            50_000,
            "ILSVRC2012_val_00000001.JPEG to _00050000.JPEG, in file-number order.",
        ),
    ),
    label_sets=(
        _original("imagenet", "imagenet-val", IMAGENET_ORIGINAL_FILES),
        _corrected("imagenet", "imagenet-val", "imagenet", 3, "corrected", IMAGENET_ORIGINAL_FILES),
        _corrected(
            "imagenet", "imagenet-val", "imagenet", 4, "corrected-t4", IMAGENET_ORIGINAL_FILES
        ),
        _corrected(
            "imagenet", "imagenet-val", "imagenet", 5, "corrected-t5", IMAGENET_ORIGINAL_FILES
        ),
        LabelSetSpec(
            slug="real",
            benchmark="imagenet",
            image_set="imagenet-val",
            kind="multi",
            family="real",
            name="ReaL (Reassessed Labels)",
            description=(
                "Multi-label reassessment: a top-1 prediction is correct if it is any of "
                "the labels the raters accepted; images with no accepted label are excluded."
            ),
            citation=BEYER,
            files=IMAGENET_ORIGINAL_FILES + ("imagenet/real.json", "imagenet/real_scores.npz"),
        ),
        LabelSetSpec(
            slug="multilabel",
            benchmark="imagenet",
            image_set="imagenet-val",
            kind="multi",
            family="multilabel",
            name="Multi-label (Shankar et al., updated)",
            description=(
                "Expert multi-label annotations of 20,000 validation images: a top-1 "
                "prediction is correct if judged correct or unclear; problematic images "
                "are excluded."
            ),
            citation=SHANKAR,
            files=IMAGENET_ORIGINAL_FILES + ("imagenet/class_info.json",),
            optional_source=MULTILABEL_SOURCE,
        ),
        LabelSetSpec(
            slug="imagenet-m",
            benchmark="imagenet",
            image_set="imagenet-val",
            kind="multi",
            family="imagenet_m",
            name="ImageNet-M (68 major mistakes)",
            description=(
                "The 68 validation images on which top models made major mistakes; "
                "reported as correct out of 68 with the list of misses."
            ),
            citation=VASUDEVAN,
            files=IMAGENET_ORIGINAL_FILES + ("imagenet/class_info.json",),
            optional_source=MULTILABEL_SOURCE,
        ),
    ),
)

CIFAR10 = BenchmarkSpec(
    slug="cifar10",
    name="CIFAR-10",
    num_classes=10,
    main_image_set="cifar10-test",
    image_sets=(
        ImageSetSpec(
            "cifar10-test", "cifar10", "CIFAR-10 test", 10_000, "The official test batch order."
        ),
        ImageSetSpec(
            "cifar10.1-v4",
            "cifar10",
            "CIFAR-10.1 v4",
            2_021,
            "The new test set of Recht et al., version 4.",
        ),
        ImageSetSpec(
            "cifar10.1-v6",
            "cifar10",
            "CIFAR-10.1 v6",
            2_000,
            "The new test set of Recht et al., version 6.",
        ),
    ),
    label_sets=(
        _original("cifar10", "cifar10-test", ("cifar10/original_labels.npy",)),
        _corrected(
            "cifar10", "cifar10-test", "cifar10", 3, "corrected", ("cifar10/original_labels.npy",)
        ),
        LabelSetSpec(
            slug="cifar10h",
            benchmark="cifar10",
            image_set="cifar10-test",
            kind="soft",
            family="cifar10h",
            name="CIFAR-10H (human label distribution)",
            description=(
                "About 50 human labels per test image: human agreement is the mean human "
                "probability of the predicted class; plurality accuracy counts a prediction "
                "of the most frequent human label."
            ),
            citation=PETERSON,
            files=("cifar10/cifar10h_probs.npy",),
        ),
        LabelSetSpec(
            slug="cifar10.1-v4",
            benchmark="cifar10",
            image_set="cifar10.1-v4",
            kind="single",
            family="new_test_set",
            name="CIFAR-10.1 v4",
            description="A new test set collected like the original; accuracy and gap to original.",
            citation=RECHT,
            files=("cifar10/cifar10.1_v4_labels.npy",),
        ),
        LabelSetSpec(
            slug="cifar10.1-v6",
            benchmark="cifar10",
            image_set="cifar10.1-v6",
            kind="single",
            family="new_test_set",
            name="CIFAR-10.1 v6",
            description="A new test set collected like the original; accuracy and gap to original.",
            citation=RECHT,
            files=("cifar10/cifar10.1_v6_labels.npy",),
        ),
    ),
)

MNIST = BenchmarkSpec(
    slug="mnist",
    name="MNIST",
    num_classes=10,
    main_image_set="mnist-test",
    image_sets=(
        ImageSetSpec("mnist-test", "mnist", "MNIST test", 10_000, "The official t10k order."),
    ),
    label_sets=(
        _original("mnist", "mnist-test", ("mnist/original_labels.npy",)),
        _corrected("mnist", "mnist-test", "mnist", 3, "corrected", ("mnist/original_labels.npy",)),
    ),
)

BENCHMARKS: dict[str, BenchmarkSpec] = {b.slug: b for b in (IMAGENET, CIFAR10, MNIST)}


def benchmark_spec(slug: str) -> BenchmarkSpec:
    try:
        return BENCHMARKS[slug]
    except KeyError:
        raise KeyError(
            f"unknown benchmark {slug!r}; known: {', '.join(sorted(BENCHMARKS))}"
        ) from None


def label_set_spec(benchmark: str, slug: str) -> LabelSetSpec:
    for spec in benchmark_spec(benchmark).label_sets:
        if spec.slug == slug:
            return spec
    raise KeyError(f"unknown label set {slug!r} for benchmark {benchmark!r}")
