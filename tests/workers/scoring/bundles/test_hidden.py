"""Hidden label sets of a bundle (docs/bundles.md §5.7): the keys `hidden`, `release` and
`step`, every refusal with its code, field and message, a hidden set compiled to the same
content hash as when it is public, and `python -m workers.score --bundle` with and without
the hidden set's file."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.bundles.bundle_files import (
    data_files,
    manifest,
    npy_bytes,
    toml_dumps,
    write_bundle,
)
from workers.scoring.bundles import (
    BundleError,
    builtin_bundle_paths,
    compile_bundle,
    read_bundle,
)

NOWHERE = Path("/nonexistent-data-dir")  # files = "bundle": the data directory is not read
Doc = dict[str, Any]
# The toy bundle's label sets (bundle_files.py) with one more: a hidden set of kind single.
HELDOUT_LABELS = [0, 2, 1, 1, 2, 0]
HELDOUT = {"slug": "heldout", "kind": "single", "name": "Held-out labels",
           "labels": "heldout.npy", "hidden": True}


def label_set(document: Doc, slug: str) -> dict[str, Any]:
    return next(ls for ls in document["label_sets"] if ls["slug"] == slug)


def with_heldout(**keys: Any) -> Doc:
    document = manifest()
    document["label_sets"].append({**HELDOUT, **keys})
    return document


def write(folder: Path, document: Doc) -> Path:
    files = {"heldout.npy": npy_bytes(np.array(HELDOUT_LABELS, dtype=np.int64))}
    return write_bundle(folder, document, data_files() | files)


def _human_accuracy(document: Doc, multi: dict[str, Any], subset: dict[str, Any]) -> None:
    """A human_accuracy label set and a subset of it (parsed only: no file is read)."""
    document["classes"] = {"count": 3, "source": "records", "file": "classes.json",
                           "key_field": "key"}
    document["label_sets"] += [
        {"slug": "ha", "kind": "multi", "layout": "human_accuracy", "name": "HA", **multi},
        {"slug": "sub", "kind": "subset", "of": "ha", "list_field": "m", "name": "M", **subset},
    ]


def _hide(document: Doc, *slugs: str, **top: Any) -> None:
    """Hide these label sets, and set these top-level keys."""
    for slug in slugs:
        label_set(document, slug)["hidden"] = True
    document.update(top)


def _set(target: dict[str, Any], **keys: Any) -> None:
    target.update(keys)


# (id, change to the toy manifest, code, field, message)
CASES: list[tuple[str, Callable[[Doc], None], str, str, str]] = [
    ("release on a public set", lambda d: _set(label_set(d, "humans"), release="exact"),
     "unknown_field", "label_sets.humans.release",
     "'release' is only for a hidden label set: give hidden = true or leave release out"),
    ("step on a set with hidden = false",
     lambda d: _set(label_set(d, "humans"), hidden=False, step=0.1),
     "unknown_field", "label_sets.humans.step",
     "'step' is only for a hidden label set: give hidden = true or leave step out"),
    ("step with release exact",
     lambda d: _set(label_set(d, "humans"), hidden=True, release="exact", step=0.1),
     "unknown_field", "label_sets.humans.step",
     "'step' is the step size of release 'ladder' only, not of 'exact'"),
    ("step 0", lambda d: _set(label_set(d, "humans"), hidden=True, step=0.0),
     "bad_value", "label_sets.humans.step", "the ladder's step must be between 0 and 1, got 0.0"),
    ("step 1 (an integer)", lambda d: _set(label_set(d, "humans"), hidden=True, step=1),
     "bad_value", "label_sets.humans.step", "the ladder's step must be between 0 and 1, got 1.0"),
    ("step nan", lambda d: _set(label_set(d, "humans"), hidden=True, step=float("nan")),
     "bad_value", "label_sets.humans.step", "the ladder's step must be between 0 and 1, got nan"),
    ("step a string", lambda d: _set(label_set(d, "humans"), hidden=True, step="0.1"),
     "wrong_type", "label_sets.humans.step", "expected a number, got a string"),
    ("unknown release", lambda d: _set(label_set(d, "humans"), hidden=True, release="median"),
     "bad_value", "label_sets.humans.release",
     "'median' is not one of 'exact', 'ladder', 'parameter_free'"),
    ("hidden a string", lambda d: _set(label_set(d, "humans"), hidden="yes"),
     "wrong_type", "label_sets.humans.hidden", "expected a boolean, got a string"),
    ("files from the data directory",
     lambda d: _hide(d, "humans", files="data"),
     "bad_value", "label_sets.humans.hidden",
     "a hidden label set's files must come with the bundle: set files = \"bundle\" "
     "(files = \"data\" is the server's public data directory, whose files are listed in "
     "data-sources.toml and fetched from public sources)"),
    ("files from a server setting",
     lambda d: _human_accuracy(d, {"annotations_setting": "multilabel_file", "hidden": True},
                               {"hidden": True}),
     "bad_value", "label_sets.ha.annotations_setting",
     "a hidden label set's files must come with the bundle, not from the server setting "
     "'multilabel_file'"),
    ("a hidden subset of a set from a server setting",
     lambda d: _human_accuracy(d, {"annotations_setting": "multilabel_file"}, {"hidden": True}),
     "bad_value", "label_sets.sub.of",
     "a hidden label set's files must come with the bundle, not from the server setting "
     "'multilabel_file'"),
    ("hidden headline", lambda d: _hide(d, "original"),
     "bad_value", "headline",
     "'original' is hidden: the headline (the public board's default sort) must be a public "
     "label set; it defaults to the first label set"),
    ("public validated set on a hidden original",
     lambda d: _hide(d, "original", headline="humans"),
     "bad_value", "label_sets.corrected.original",
     "'original' is hidden and 'corrected' is public: a public label set built on a hidden one "
     "would publish facts about its labels (hide 'corrected' too, or name a public label set)"),
    ("public new test set paired with a hidden set",
     lambda d: _hide(d, "original", "corrected", "real", headline="humans", reviewable=[]),
     "bad_value", "label_sets.new.pairs_with",
     "'original' is hidden and 'new' is public: a public label set built on a hidden one "
     "would publish facts about its labels (hide 'new' too, or name a public label set)"),
    ("public subset of a hidden set",
     lambda d: _human_accuracy(d, {"annotations": "ha.json", "hidden": True}, {}),
     "bad_value", "label_sets.sub.of",
     "'ha' is hidden and 'sub' is public: a public label set built on a hidden one would "
     "publish facts about its labels (hide 'sub' too, or name a public label set)"),
    ("every label set hidden",
     lambda d: _hide(d, *(ls["slug"] for ls in d["label_sets"])),
     "bad_value", "label_sets", "every label set is hidden: at least one must be public"),
    ("public new test set beside a hidden original paired with another set",
     lambda d: (_hide(d, "original", "corrected", "real", headline="humans", reviewable=[]),
                d["label_sets"].append({"slug": "other", "kind": "single", "name": "Other",
                                        "labels": "labels.npy"}),
                _set(label_set(d, "new"), pairs_with="other")),
     "bad_value", "label_sets.new.hidden",
     "'original' is hidden and 'new' is a public new test set, whose gap is computed against "
     "'original': hide it too, or rename the hidden set"),
    ("split of a public set",
     lambda d: _set(label_set(d, "humans"), split={"private_fraction": 0.5, "seed": 1}),
     "unknown_field", "label_sets.humans.split",
     "'split' is only for a hidden label set: give hidden = true or leave split out"),
    ("split fraction of 1",
     lambda d: d["label_sets"].append({**HELDOUT, "split": {"private_fraction": 1.0,
                                                             "seed": 1}}),
     "bad_value", "label_sets.heldout.split.private_fraction",
     "the private part's fraction must be between 0 and 1, got 1.0"),
    ("split without a seed",
     lambda d: d["label_sets"].append({**HELDOUT, "split": {"private_fraction": 0.5}}),
     "missing_field", "label_sets.heldout.split.seed", "required, an integer"),
    ("split by a file and a fraction",
     lambda d: d["label_sets"].append({**HELDOUT, "split": {"private": "p.json",
                                                             "private_fraction": 0.5}}),
     "bad_value", "label_sets.heldout.split.private_fraction",
     "give either private or private_fraction and seed, not private_fraction"),
    ("split of a multi-label set",
     lambda d: _set(label_set(d, "real"), hidden=True,
                    split={"private_fraction": 0.5, "seed": 1}),
     "bad_value", "label_sets.real.split",
     "only a label set of one label per example can be split (kind 'multi' scores some "
     "examples only): use a kind such as single or new_test_set"),
]


@pytest.mark.parametrize(("change", "code", "field", "message"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_it_refuses_a_hidden_label_set_naming_code_field_and_problem(
    tmp_path: Path, change: Callable[[Doc], None], code: str, field: str, message: str,
) -> None:
    document = manifest()
    change(document)
    with pytest.raises(BundleError) as caught:
        read_bundle(write_bundle(tmp_path, document))
    error = caught.value
    assert (error.code, error.file, error.field, error.message) == (code, "toy.toml", field,
                                                                    message)


def test_it_accepts_a_reviewable_hidden_set_and_reads_its_split(tmp_path: Path) -> None:
    document = with_heldout(split={"private_fraction": 0.5, "seed": 3})
    label_set(document, "real")["hidden"] = True  # `real` is the toy's reviewable set
    bundle = read_bundle(write(tmp_path, document))
    heldout = bundle.label_set("heldout")
    assert (bundle.reviewable, label_set(document, "real")["hidden"]) == (("real",), True)
    assert (heldout.split_fraction, heldout.split_seed, heldout.split_private) == (0.5, 3, None)


def test_it_reads_a_hidden_set_released_by_the_ladder_by_default(tmp_path: Path) -> None:
    bundle = read_bundle(write(tmp_path, with_heldout()))
    heldout = bundle.label_set("heldout")
    assert (heldout.hidden, heldout.release, heldout.step) == (True, "ladder", None)
    assert [(ls.slug, ls.hidden, ls.release, ls.step) for ls in bundle.label_sets[:-1]] == [
        (slug, False, "", None)
        for slug in ("original", "corrected", "corrected-t4", "real", "humans", "new")]


@pytest.mark.parametrize(("keys", "release", "step"), [
    ({"release": "exact"}, "exact", None),
    ({"release": "parameter_free"}, "parameter_free", None),
    ({"release": "ladder", "step": 0.05}, "ladder", 0.05),
    ({"step": 0.25}, "ladder", 0.25),
])
def test_it_reads_the_release_and_step_of_a_hidden_set(
        tmp_path: Path, keys: dict[str, Any], release: str, step: float | None) -> None:
    heldout = read_bundle(write(tmp_path, with_heldout(**keys))).label_set("heldout")
    assert (heldout.hidden, heldout.release, heldout.step) == (True, release, step)


def test_it_hides_every_threshold_of_a_hidden_validated_set_built_on_a_public_one(
        tmp_path: Path) -> None:
    document = manifest()
    _set(label_set(document, "corrected"), hidden=True, release="exact")
    bundle = read_bundle(write_bundle(tmp_path, document))
    assert [(ls.slug, ls.hidden, ls.release) for ls in bundle.label_sets] == [
        ("original", False, ""), ("corrected", True, "exact"), ("corrected-t4", True, "exact"),
        ("real", False, ""), ("humans", False, ""), ("new", False, "")]


def test_it_compiles_a_hidden_set_to_the_hash_and_cache_file_of_the_same_set_public(
        tmp_path: Path) -> None:
    public = HELDOUT | {"hidden": False}
    public_doc = manifest()
    public_doc["label_sets"].append(public)
    hidden = compile_bundle(read_bundle(write(tmp_path / "hidden", with_heldout(step=0.1))),
                            data_dir=NOWHERE, cache_dir=tmp_path / "cache-hidden")
    shown = compile_bundle(read_bundle(write(tmp_path / "public", public_doc)),
                           data_dir=NOWHERE, cache_dir=tmp_path / "cache-public")
    assert list(hidden) == ["original", "corrected", "corrected-t4", "real", "humans", "new",
                            "heldout"]
    heldout = hidden["heldout"]
    assert heldout.arrays["labels"].tolist() == HELDOUT_LABELS
    assert (heldout.kind, heldout.family, heldout.size) == ("single", "original", 6)
    assert {s: c.content_hash for s, c in hidden.items()} == \
        {s: c.content_hash for s, c in shown.items()}

    # the same files (sizes, times, paths) declared public: the cache is not stale
    (tmp_path / "hidden" / "toy.toml").write_text(toml_dumps(public_doc))
    before = sorted((tmp_path / "cache-hidden").iterdir())
    recompiled = compile_bundle(read_bundle(tmp_path / "hidden" / "toy.toml"),
                                data_dir=NOWHERE, cache_dir=tmp_path / "cache-hidden")
    assert recompiled["heldout"].content_hash == heldout.content_hash
    assert len(before) == 7
    assert sorted((tmp_path / "cache-hidden").iterdir()) == before


def _toml_block(text: str, heading: str) -> str:
    """The first TOML block after a heading of docs/bundles.md."""
    match = re.search(rf"{heading}.*?```toml\n(.*?)```", text, re.S)
    assert match is not None, heading
    return match.group(1)


def test_it_compiles_the_hidden_example_of_docs_bundles(tmp_path: Path) -> None:
    """docs/bundles.md §5.7's label set added to §10's example, with files of the shapes their
    comments give."""
    text = (PROJECT_ROOT / "docs/bundles.md").read_text()
    example, hidden = (_toml_block(text, heading)
                       for heading in (r"## 10\. Example", r"### 5\.7 Hidden label sets"))
    (tmp_path / "reviews.toml").write_text(example + "\n" + hidden)
    (tmp_path / "test_files.json").write_text(json.dumps([f"r{i:04d}.txt" for i in range(1, 2001)]))
    np.save(tmp_path / "labels.npy", np.arange(2000) % 3)
    np.save(tmp_path / "votes_per_class.npy", np.ones((2000, 3), dtype=np.int64))
    (tmp_path / "votes.json").write_text(json.dumps([  # example 6 (label 0): 4 say positive
        {"id": "r0007", "given_original_label": "negative", "our_guessed_label": "positive",
         "mturk": {"given": 1, "guessed": 4, "unsure": 0}}]))
    np.save(tmp_path / "heldout_labels.npy", np.arange(500) % 3)
    bundle = read_bundle(tmp_path / "reviews.toml")
    heldout = bundle.label_set("heldout")
    assert (heldout.hidden, heldout.release, heldout.step, heldout.example_set) == \
        (True, "ladder", 0.02, "reviews-heldout")
    assert [ls.slug for ls in bundle.label_sets if ls.hidden] == ["heldout"]
    compiled = compile_bundle(bundle, data_dir=NOWHERE)
    assert list(compiled) == ["original", "corrected", "corrected-t4", "corrected-t5",
                              "annotators", "heldout"]
    assert compiled["heldout"].arrays["labels"].tolist() == [i % 3 for i in range(500)]


def test_it_keeps_every_label_set_of_the_built_in_bundles_public() -> None:
    for path in builtin_bundle_paths():
        bundle = read_bundle(path)
        assert {(ls.hidden, ls.release, ls.step) for ls in bundle.label_sets} == \
            {(False, "", None)}, path.name


# ------------------------------------------------------------ python -m workers.score --bundle

PREDICTIONS = [0, 1, 1, 0, 2, 2]
# original [0, 1, 2, 0, 1, 2]: examples 0, 1, 3, 5 right; heldout [0, 2, 1, 1, 2, 0]: 0, 2, 4
NOTE = ("note: label set 'heldout' is hidden: its labels are not published, so it can be "
        "scored only with the bundle's own files; not scored (lacks: heldout.npy)")


def _cli_bundle(folder: Path) -> tuple[Path, Path]:
    """The toy bundle with the hidden `heldout`, and a prediction file for its main set."""
    path = write(folder, with_heldout())
    preds = folder / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    return path, preds


def test_it_scores_a_hidden_set_whose_file_is_here_and_marks_it_hidden(
        run_score, tmp_path: Path) -> None:
    path, preds = _cli_bundle(tmp_path / "toy")
    result = run_score("--bundle", str(path), "--json", f"toy-test={preds}")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert "not_scored" not in out
    scores = out["scores"]
    assert list(scores) == ["original", "corrected", "corrected-t4", "real", "humans", "heldout"]
    assert (scores["original"]["correct"], scores["original"]["total"]) == (4, 6)
    assert "hidden" not in scores["original"]
    heldout = scores["heldout"]
    assert (heldout["correct"], heldout["total"], heldout["accuracy"], heldout["hidden"]) == \
        (3, 6, 0.5, True)
    table = run_score("--bundle", str(path), f"toy-test={preds}")
    assert table.returncode == 0, table.stderr
    rows = [re.split(r" {2,}", line.strip()) for line in table.stdout.splitlines()[1:]]
    assert [row[:4] for row in rows if row[0].startswith("heldout")] == [
        ["heldout (hidden)", "top-1", "50.00", "3/6"]]
    assert [row[:4] for row in rows if row[0] == "original"][0] == \
        ["original", "top-1", f"{100 * 4 / 6:.2f}", "4/6"]


def test_it_says_a_hidden_set_without_its_file_is_not_published_and_scores_the_rest(
        run_score, tmp_path: Path) -> None:
    path, preds = _cli_bundle(tmp_path / "toy")
    (path.parent / "heldout.npy").unlink()
    result = run_score("--bundle", str(path), "--json", f"toy-test={preds}")
    assert result.returncode == 0, result.stderr
    assert result.stderr == NOTE + "\n"
    out = json.loads(result.stdout)
    assert list(out["scores"]) == ["original", "corrected", "corrected-t4", "real", "humans"]
    assert (out["scores"]["original"]["correct"], out["scores"]["original"]["total"]) == (4, 6)
    assert out["not_scored"] == {"heldout": {
        "hidden": True, "lacks": ["heldout.npy"], "message": NOTE.removeprefix("note: ")}}
    table = run_score("--bundle", str(path), f"toy-test={preds}")
    assert (table.returncode, table.stderr) == (0, NOTE + "\n")
    assert {line.split()[0] for line in table.stdout.splitlines()[1:]} == \
        {"original", "corrected", "corrected-t4", "real", "humans"}


def test_it_says_nothing_of_a_missing_hidden_set_of_an_example_set_not_scored(
        run_score, tmp_path: Path) -> None:
    path, _ = _cli_bundle(tmp_path / "toy")
    (path.parent / "heldout.npy").unlink()
    preds = tmp_path / "new.json"
    preds.write_text(json.dumps([2, 1, 0, 1]))  # new [2, 1, 0, 0]: 3 of 4 right
    result = run_score("--bundle", str(path), "--json", f"toy-new={preds}")
    assert (result.returncode, result.stderr) == (0, "")
    out = json.loads(result.stdout)
    assert "not_scored" not in out
    assert list(out["scores"]) == ["new"]
    assert (out["scores"]["new"]["correct"], out["scores"]["new"]["total"]) == (3, 4)
