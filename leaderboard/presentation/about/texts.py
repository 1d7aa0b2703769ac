"""What each family of label sets is, how it was built and whom to cite: data, in one place.

The about pages (`/benchmarks/<slug>/about/`, `/api/benchmarks/<slug>/about/`) read these
texts; what a benchmark is and its own papers come from its row (its bundle's `description`
and `cites`), never from here. The numbers in them (sizes of the correctable, multi-label,
neither, non-agreement and pruned sets, ImageNet-M's image count, ...) come from each
label-set version's summary (`LabelSetVersion.summary`, the compiled version's facts).
Wording follows docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Citation:
    """A reference. Those below are structured; a benchmark's own reference that none of them
    is (a bundle's `[citations]` text) has only `text`."""

    key: str
    authors: tuple[str, ...]
    title: str
    venue: str
    year: int | None
    url: str
    text: str = ""  # the reference as the benchmark's bundle writes it

    @property
    def short(self) -> str:
        """"Northcutt et al. 2021", "Krizhevsky 2009"."""
        if not self.authors:
            return self.text
        first = self.authors[0].split(",")[0]
        return f"{first}{' et al.' if len(self.authors) > 1 else ''} {self.year}"

    @property
    def authors_text(self) -> str:
        return "; ".join(self.authors)


CITATIONS: dict[str, Citation] = {c.key: c for c in (
    Citation("northcutt2021", ("Northcutt, Curtis G.", "Athalye, Anish", "Mueller, Jonas"),
             "Pervasive Label Errors in Test Sets Destabilize Machine Learning Benchmarks",
             "NeurIPS Datasets and Benchmarks Track", 2021, "https://arxiv.org/abs/2103.14749"),
    Citation("beyer2020", ("Beyer, Lucas", "Hénaff, Olivier J.", "Kolesnikov, Alexander",
                           "Zhai, Xiaohua", "van den Oord, Aäron"),
             "Are we done with ImageNet?", "arXiv:2006.07159", 2020,
             "https://arxiv.org/abs/2006.07159"),
    Citation("shankar2020", ("Shankar, Vaishaal", "Roelofs, Rebecca", "Mania, Horia",
                             "Fang, Alex", "Recht, Benjamin", "Schmidt, Ludwig"),
             "Evaluating Machine Accuracy on ImageNet", "ICML", 2020,
             "https://arxiv.org/abs/2007.00347"),
    Citation("vasudevan2022", ("Vasudevan, Vijay", "Caine, Benjamin", "Gontijo-Lopes, Raphael",
                               "Fridovich-Keil, Sara", "Roelofs, Rebecca"),
             "When does dough become a bagel? Analyzing the remaining mistakes on ImageNet",
             "NeurIPS", 2022, "https://arxiv.org/abs/2205.04596"),
    Citation("peterson2019", ("Peterson, Joshua C.", "Battleday, Ruairidh M.",
                              "Griffiths, Thomas L.", "Russakovsky, Olga"),
             "Human uncertainty makes classification more robust", "ICCV", 2019,
             "https://arxiv.org/abs/1908.07086"),
    Citation("recht2019", ("Recht, Benjamin", "Roelofs, Rebecca", "Schmidt, Ludwig",
                           "Shankar, Vaishaal"),
             "Do ImageNet Classifiers Generalize to ImageNet?", "ICML", 2019,
             "https://arxiv.org/abs/1902.10811"),
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
)}


@dataclass(frozen=True)
class LabelSetDoc:
    what: str  # one sentence: what the label set is
    how: tuple[str, ...]  # paragraphs, plain words: how it was built and how it scores
    citations: tuple[str, ...]  # keys of CITATIONS; () = the benchmark's own dataset paper


_CORRECTED = LabelSetDoc(
    "The original labels, corrected where human reviewers agreed the label was wrong; "
    "examples whose right label is unclear are left out.",
    ("Confident learning flagged the test examples whose original label was most likely "
     "wrong. Five Mechanical Turk workers checked each flagged example and answered whether "
     "it shows {answers}.",
     "With an agreement threshold of {threshold} of 5 votes, each flagged example is a "
     "non-error if at least 3 workers kept the given label; otherwise correctable if at "
     "least {threshold} chose the guessed label; else multi-label if at least {threshold} "
     "answered both; else neither if at least {threshold} answered neither; else "
     "non-agreement. A missing answer counts as 0.",
     "Correctable examples (the set C) take the guessed label; every other example keeps its "
     "original label. The multi-label, neither and non-agreement examples form the unknown "
     "set U and are removed: accuracy is computed over the pruned set P, all examples minus U.",
     "On C alone each submission page also shows accuracy against the original labels "
     "(Acc@1) and against the corrected ones (cAcc@1); the mistake gallery shows every "
     "example of C. Later versions add the answers of this server's ground-truth review "
     "panel, by the same rules."),
    ("northcutt2021",))

LABEL_SET_DOCS: dict[str, LabelSetDoc] = {
    "original": LabelSetDoc(
        "The labels published with the dataset: one per example, on every example.",
        ("Top-1 and top-5 accuracy against the published labels, over every example. Every "
         "other label set is compared with this one: a leaderboard's rank shifts are the "
         "rank under the original labels minus the rank under the other label set.",),
        ()),
    "corrected": _CORRECTED,
    "real": LabelSetDoc(
        "Reassessed labels (ReaL): every label the raters judged to fit the image, so an image "
        "may have several right answers, or none.",
        ("Raters judged (image, label) pairs proposed by a panel of models together with the "
         "original label; the pairs they accepted form each image's list of labels. A top-1 "
         "prediction is correct if it is in the list; images whose list is empty are "
         "excluded. With top-k predictions, the 2nd and 3rd predictions are scored the same way.",
         "A top-1 prediction the raters never judged (neither accepted nor rated) is novel: it "
         "goes to this server's review queue, and each panel decision makes a new version."),
        ("beyer2020",)),
    "multilabel": LabelSetDoc(
        "Expert multi-label annotations of ImageNet validation images (Shankar et al. 2020, "
        "as updated by Vasudevan et al. 2022).",
        ("Expert labellers marked each candidate class of an image correct, wrong or unclear. "
         "The images they found problematic are removed. A top-1 prediction is correct if it "
         "was judged correct or unclear.",
         "The accuracy shown, and ranked by, is the mean over classes, as the authors compute "
         "it: each image counts for the class of its original label, each class's accuracy is "
         "the share of its evaluated images predicted correctly, and the accuracy is the mean "
         "of those class accuracies (a class with no evaluated image is left out). Its 95% "
         "interval is the normal approximation with per-class binomial variances, not "
         "Clopper-Pearson, which is for a single proportion. The pooled accuracy, the share of "
         "all evaluated images predicted correctly, is reported beside it with its "
         "Clopper-Pearson interval; the count next to an accuracy is of images.",
         "Accuracy is also reported for organism and object classes apart (by the original "
         "label's WordNet ancestry; each the mean over its own classes), and with the "
         "class-collapse mapping of Vasudevan et al. (appendix G), which also accepts "
         "near-synonyms such as sunglass and sunglasses. "
         "Top-1 predictions that were never judged go to this server's review queue."),
        ("shankar2020", "vasudevan2022")),
    "imagenet_m": LabelSetDoc(
        "ImageNet-M: the 68 validation images (in the published list) on which the best "
        "models still made major mistakes once every other error was explained away.",
        ("Vasudevan et al. reviewed the remaining mistakes of top models and listed the "
         "images where they were major. A prediction is correct if the multi-label "
         "annotations judged it correct or unclear; the score is the number correct of the "
         "listed images, and each submission's mistake gallery shows its misses.",),
        ("vasudevan2022",)),
    "cifar10h": LabelSetDoc(
        "Soft labels: the distribution of about 50 human labels for each CIFAR-10 test image.",
        ("Headline: plurality accuracy, where a prediction is correct if it is the label most "
         "humans chose (any class tied for the most counts). Human agreement is the mean over "
         "images of the share of humans who chose the predicted class. When a submission "
         "gives probabilities, their cross-entropy against the human distribution is reported "
         "too.",),
        ("peterson2019",)),
    "new_test_set": LabelSetDoc(
        "A new test set, collected from the same source by following the original dataset's "
        "procedure, to test whether models generalize beyond the test set they were tuned on.",
        ("Accuracy on the new images, and its gap to the same model's original test accuracy. "
         "Across the leaderboard, a linear fit new = a × original + b (with a bootstrap 95% "
         "band) and each model's residual from it.",),
        ("recht2019",)),
}

# Per-slug additions (the two CIFAR-10.1 versions share a family but differ).
LABEL_SET_NOTES: dict[str, str] = {
    "cifar10.1-v4": "Version 4, the first release: 2,021 images, classes not exactly balanced.",
    "cifar10.1-v6": "Version 6, the recommended one: 2,000 images, 200 per class.",
}


def _threshold(summary: Mapping[str, Any], params: Mapping[str, Any]) -> int | str:
    value = summary.get("threshold", params.get("threshold"))
    return int(value) if isinstance(value, int | float) else "t"


# What a vote for each meaning of a vote vocabulary says (docs/bundles.md §5.2).
_ANSWERS = {"original": "the given label", "guessed": "the label the algorithm guessed",
            "both": "both", "neither": "neither"}


def vote_answers_text(answers: Any) -> str:
    """The answers the workers had, from a validated label set's vocabulary ([[key, meaning],
    ...]: IMDB's neutral and off-topic name no label); the study's four without one."""
    if not isinstance(answers, list) or not answers:
        answers = [["given", "original"], ["guessed", "guessed"], ["both", "both"],
                   ["neither", "neither"]]
    said = [_ANSWERS[meaning] for _, meaning in answers if meaning in _ANSWERS]
    unlabelled = [str(key) for key, meaning in answers if meaning == "none"]
    if unlabelled:
        said.append(f"an answer that names no label ({', '.join(unlabelled)})")
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])}, or {said[-1]}"


def label_set_how(family: str, slug: str, summary: Mapping[str, Any],
                  params: Mapping[str, Any], benchmark: str = "") -> list[str]:
    """The paragraphs of 'How it was built', with the version's numbers filled in."""
    doc = LABEL_SET_DOCS.get(family)
    paragraphs = list(doc.how) if doc else []
    if family == "corrected":
        threshold = _threshold(summary, params)
        answers = vote_answers_text(params.get("answers"))
        paragraphs = [p.format(threshold=threshold, answers=answers) for p in paragraphs]
    note = LABEL_SET_NOTES.get(slug)
    return [note, *paragraphs] if note else paragraphs


@dataclass(frozen=True)
class Fact:
    key: str  # stable name, for the API
    label: str
    value: int


def _int(summary: Mapping[str, Any], key: str) -> int | None:
    value = summary.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def label_set_facts(family: str, summary: Mapping[str, Any]) -> list[Fact]:
    """The counts of one version worth showing, from its summary, in reading order."""
    facts: list[tuple[str, str, int | None]] = []
    if family == "corrected":
        counts = summary.get("counts") if isinstance(summary.get("counts"), dict) else {}
        assert isinstance(counts, dict)
        unknown = sum(int(counts.get(k, 0)) for k in ("multi_label", "neither",
                                                      "non_agreement"))
        facts = [
            ("flagged", "Flagged and checked by 5 workers", _int(summary, "flagged")),
            ("non_error", "Non-errors (at least 3 kept the given label)",
             _int(counts, "non_error")),
            ("correctable", "Correctable set C (guessed label takes over)",
             _int(summary, "correctable_size")),
            ("multi_label", "Multi-label (removed)", _int(counts, "multi_label")),
            ("neither", "Neither (removed)", _int(counts, "neither")),
            ("non_agreement", "Non-agreement (removed)", _int(counts, "non_agreement")),
            ("unknown", "Unknown set U = multi-label + neither + non-agreement",
             unknown if counts else None),
            ("pruned", "Pruned set P = all examples minus U", _int(summary, "pruned_size")),
        ]
    elif family == "real":
        facts = [("included", "Images with a non-empty label list", _int(summary, "included")),
                 ("excluded", "Images excluded (empty list)", _int(summary, "excluded")),
                 ("rated_images", "Images the raters judged", _int(summary, "rated_images")),
                 ("accepted_pairs", "Accepted (image, label) pairs",
                  _int(summary, "accepted_pairs")),
                 ("wrong_pairs", "Pairs judged wrong", _int(summary, "wrong_pairs"))]
    elif family == "multilabel":
        included, organism = _int(summary, "included"), _int(summary, "organism_included")
        facts = [("annotated", "Annotated images", _int(summary, "annotated")),
                 ("problematic", "Problematic images (removed)", _int(summary, "problematic")),
                 ("included", "Images evaluated", included),
                 ("organism", "of which organism classes", organism),
                 ("object", "of which object classes",
                  None if included is None or organism is None else included - organism)]
    elif family == "imagenet_m":
        facts = [("included", "Listed images", _int(summary, "included"))]
    elif family == "cifar10h":
        facts = [("annotated", "Images with human label distributions",
                  _int(summary, "annotated"))]
    return [Fact(k, label, v) for k, label, v in facts if v is not None]


def citations_for(keys: tuple[str, ...]) -> list[Citation]:
    return [CITATIONS[k] for k in keys if k in CITATIONS]


def label_set_citations(family: str, benchmark_citations: list[Citation]) -> list[Citation]:
    """The papers of a family's label sets; the benchmark's own for its original labels."""
    doc = LABEL_SET_DOCS.get(family)
    if doc is None:
        return []
    if not doc.citations:  # the dataset's own paper
        return benchmark_citations
    return citations_for(doc.citations)


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
