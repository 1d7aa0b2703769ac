"""What each label set is, how it was built and whom to cite, for the about pages
(`/benchmarks/<slug>/about/`, `/api/benchmarks/<slug>/about/`): each family declares its texts,
counts and papers (workers/scoring/families); what a benchmark is and its own papers come from
its row (its bundle's `description` and `cites`). The numbers (sizes of the correctable,
multi-label, neither, non-agreement and pruned sets, a subset's image count, ...) come from
each label-set version's summary (`LabelSetVersion.summary`, the compiled version's facts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workers.scoring.families.base import Citation, Fact
from workers.scoring.families.registry import FAMILIES, family_named

# The datasets' own papers, for a benchmark's references that name one; each family's
# papers are its own (workers/scoring/families).
_DATASET_CITATIONS = (
    Citation("lecun1998", ("LeCun, Yann", "Bottou, Léon", "Bengio, Yoshua", "Haffner, Patrick"),
             "Gradient-based learning applied to document recognition",
             "Proceedings of the IEEE 86(11)", 1998, "https://doi.org/10.1109/5.726791"),
    Citation("krizhevsky2009", ("Krizhevsky, Alex",),
             "Learning Multiple Layers of Features from Tiny Images",
             "Technical report, University of Toronto", 2009,
             "https://www.cs.toronto.edu/~kriz/learning-features-2009-TR.pdf"),
    Citation("russakovsky2015", ("Russakovsky, Olga", "Deng, Jia", "Su, Hao", "Krause, Jonathan",
                                 "Satheesh, Sanjeev", "Ma, Sean", "Huang, Zhiheng",
                                 "Karpathy, Andrej", "Khosla, Aditya", "Bernstein, Michael",
                                 "Berg, Alexander C.", "Fei-Fei, Li"),
             "ImageNet Large Scale Visual Recognition Challenge",
             "International Journal of Computer Vision 115(3)", 2015,
             "https://arxiv.org/abs/1409.0575"),
)
CITATIONS: dict[str, Citation] = {c.key: c for c in (
    *_DATASET_CITATIONS,
    *(c for family in FAMILIES.values() for c in family.about.citations),
)}


# Per-slug additions (the two CIFAR-10.1 versions share a family but differ).
LABEL_SET_NOTES: dict[str, str] = {
    "cifar10.1-v4": "Version 4, the first release: 2,021 images, classes not exactly balanced.",
    "cifar10.1-v6": "Version 6, the recommended one: 2,000 images, 200 per class.",
}


def label_set_what(family: str, fallback: str) -> str:
    """One sentence: what a label set of this family is."""
    return family_named(family).about.what or fallback


def label_set_how(family: str, slug: str, summary: Mapping[str, Any],
                  params: Mapping[str, Any]) -> list[str]:
    """The paragraphs of 'How it was built', with the version's numbers filled in."""
    paragraphs = family_named(family).about_how(summary, params)
    note = LABEL_SET_NOTES.get(slug)
    return [note, *paragraphs] if note else paragraphs


def label_set_facts(family: str, summary: Mapping[str, Any]) -> list[Fact]:
    """The counts of one version worth showing, from its summary, in reading order."""
    return family_named(family).facts(summary)


def label_set_citations(family: str, benchmark_citations: list[Citation]) -> list[Citation]:
    """The papers of a family's label sets; the benchmark's own for its original labels."""
    own = family_named(family).about.citations
    return list(own) if own else benchmark_citations


def citations_from_texts(texts: list[str]) -> list[Citation]:
    """A benchmark's references as its row holds them (its bundle's texts): the structured
    entry whose title a text names, else the text alone."""
    out = []
    for text in texts:
        known = next((c for c in CITATIONS.values() if c.title.lower() in text.lower()), None)
        out.append(Citation(known.key, known.authors, known.title, known.venue, known.year,
                            known.url, text) if known else
                   Citation("", (), "", "", None, "", text))
    return out
