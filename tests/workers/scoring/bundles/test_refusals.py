"""Every refusal of a bundle names its code, the file, the field and the problem
(docs/bundles.md §8); each case below breaks one thing of the valid toy bundle."""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.bundles.bundle_files import (
    bundle_entries,
    data_files,
    manifest,
    npy_bytes,
    write_bundle,
    zip_bytes,
)
from workers.scoring.bundles import (
    BundleData,
    BundleError,
    ManifestLimits,
    ZipLimits,
    compile_bundle,
    compile_bundle_label_set,
    open_bundle,
    parse_manifest,
    read_bundle,
)

NOWHERE = Path("/nonexistent-data-dir")
Doc = dict[str, Any]
Files = dict[str, bytes]


def refusal(folder: Path, document: Doc, files: Files) -> BundleError:
    with pytest.raises(BundleError) as caught:
        compile_bundle(read_bundle(write_bundle(folder, document, files)), data_dir=NOWHERE)
    return caught.value


def label_set(document: Doc, slug: str) -> dict[str, Any]:
    return next(ls for ls in document["label_sets"] if ls["slug"] == slug)


def votes_with(change: Callable[[list[dict[str, Any]]], None]) -> bytes:
    votes = json.loads(data_files()["votes.json"])
    change(votes)
    return json.dumps(votes).encode()


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    target[key] = value


# (id, change to the manifest, change to the files, code, file, field, words of the message)
CASES: list[tuple[str, Callable[[Doc], None], Callable[[Files], None], str, str, str, str]] = [
    ("unknown top field", lambda d: _set(d, "colour", "red"), lambda f: None,
     "unknown_field", "toy.toml", "colour", "unknown field 'colour'"),
    ("unknown label-set field", lambda d: _set(label_set(d, "corrected"), "treshold", 3),
     lambda f: None, "unknown_field", "toy.toml", "label_sets.corrected.treshold", "'treshold'"),
    ("field of another kind", lambda d: _set(label_set(d, "original"), "counts", "c.npy"),
     lambda f: None, "unknown_field", "toy.toml", "label_sets.original.counts", "'counts'"),
    ("wrong type", lambda d: _set(d["example_sets"][0], "size", "6"), lambda f: None,
     "wrong_type", "toy.toml", "example_sets.toy-test.size", "expected an integer, got a string"),
    ("boolean for an integer", lambda d: _set(d["classes"], "count", True), lambda f: None,
     "wrong_type", "toy.toml", "classes.count", "expected an integer, got a boolean"),
    ("missing field", lambda d: d.pop("modality"), lambda f: None,
     "missing_field", "toy.toml", "modality", "required"),
    ("bad modality", lambda d: _set(d, "modality", "video"), lambda f: None,
     "bad_value", "toy.toml", "modality", "'video' is not one of 'image', 'text', 'audio'"),
    ("threshold 2", lambda d: _set(label_set(d, "corrected"), "thresholds", [2]),
     lambda f: None, "bad_value", "toy.toml", "label_sets.corrected.thresholds",
     "3, 4 or 5 of 5 votes, got 2"),
    ("pattern with two numbers",
     lambda d: _set(d["example_sets"][0], "pattern", "{number}_{number}.png"), lambda f: None,
     "bad_value", "toy.toml", "example_sets.toy-test.pattern", "`{number}`"),
    ("images behind a setting the server never reads",
     lambda d: _set(d["example_sets"][0], "images", {"setting": "HOME"}), lambda f: None,
     "bad_value", "toy.toml", "example_sets.toy-test.images.setting",
     "'HOME' is not a server setting: a name EVALSERVER_..., in capitals"),
    ("texts in an image format",
     lambda d: _set(d["example_sets"][0], "texts", {"format": "idx", "path": "t.idx"}),
     lambda f: None, "bad_value", "toy.toml", "example_sets.toy-test.texts.format",
     "'idx' is not one of 'folder'"),
    ("texts at both a path and a setting",
     lambda d: _set(d["example_sets"][0], "texts",
                    {"path": "texts", "setting": "EVALSERVER_TOY_TEXT_DIR"}), lambda f: None,
     "bad_value", "toy.toml", "example_sets.toy-test.texts.path",
     "give exactly one of path and setting"),
    ("texts outside the file root",
     lambda d: _set(d["example_sets"][0], "texts", {"path": "../texts"}), lambda f: None,
     "path_escapes", "toy.toml", "example_sets.toy-test.texts.path", "not a relative path"),
    ("duplicate label set", lambda d: d["label_sets"].append(dict(label_set(d, "original"))),
     lambda f: None, "duplicate_slug", "toy.toml", "label_sets", "slug 'original'"),
    ("headline not declared", lambda d: _set(d, "headline", "cleanest"), lambda f: None,
     "unknown_reference", "toy.toml", "headline", "no label set 'cleanest'"),
    ("citation not declared", lambda d: _set(label_set(d, "real"), "citation", "nobody"),
     lambda f: None, "unknown_reference", "toy.toml", "label_sets.real.citation",
     "no citation 'nobody'"),
    ("validated on the new test set",
     lambda d: _set(label_set(d, "corrected"), "original", "new"), lambda f: None,
     "unknown_reference", "toy.toml", "label_sets.corrected.original",
     "'new' is not a label set of kind 'single'"),
    ("new test set on the main example set",
     lambda d: _set(label_set(d, "new"), "example_set", "toy-test"), lambda f: None,
     "bad_value", "toy.toml", "label_sets.new.pairs_with",
     "'original' must be on another example set"),
    ("class name twice", lambda d: _set(d["classes"], "names", ["cat", "dog", "cat"]),
     lambda f: None, "duplicate_class", "toy.toml", "classes.names[2]",
     "the class name 'cat' appears twice"),
    ("class count", lambda d: _set(d["classes"], "count", 4), lambda f: None,
     "bad_value", "toy.toml", "classes.names", "3 names for 4 classes"),
    ("path with ..", lambda d: _set(label_set(d, "original"), "labels", "../labels.npy"),
     lambda f: None, "path_escapes", "toy.toml", "label_sets.original.labels", "`..`"),
    ("absolute path", lambda d: _set(label_set(d, "real"), "accepted", "/etc/passwd"),
     lambda f: None, "path_escapes", "toy.toml", "label_sets.real.accepted", "absolute"),
    ("label out of range", lambda d: None,
     lambda f: _set(f, "labels.npy", npy_bytes(np.array([0, 1, 2, 3, 1, 2]))),
     "label_out_of_range", "labels.npy", "label_sets.original.labels",
     "label 3 of example 3 is outside 0..2"),
    ("length", lambda d: None, lambda f: _set(f, "labels.npy", npy_bytes(np.arange(5) % 3)),
     "length_mismatch", "labels.npy", "label_sets.original.labels",
     "5 labels for an example set of 6"),
    ("float labels", lambda d: None,
     lambda f: _set(f, "labels.npy", npy_bytes(np.zeros(6))), "bad_file", "labels.npy",
     "label_sets.original.labels", "expected a 1-D integer array, got float64 (6,)"),
    ("unknown vote key", lambda d: None,
     lambda f: _set(f, "votes.json", votes_with(lambda v: _set(v[1]["mturk"], "maybe", 1))),
     "unknown_vote_key", "votes.json", "label_sets.corrected.votes.vocabulary",
     "record 1 has the vote key 'maybe'"),
    ("vote on a second example", lambda d: None,
     lambda f: _set(f, "votes.json", votes_with(lambda v: _set(v[0], "id", 9))),
     "unknown_example", "votes.json", "label_sets.corrected.votes (record 0)",
     "id 9 names no example of 'toy-test'"),
    ("vote file out of step", lambda d: None,
     lambda f: _set(f, "votes.json", votes_with(lambda v: _set(v[0], "given_original_label", 2))),
     "vote_mismatch", "votes.json", "label_sets.corrected.votes (record 0)",
     "the original label 2, the label file 1"),
    ("guessed label out of range", lambda d: None,
     lambda f: _set(f, "votes.json", votes_with(lambda v: _set(v[2], "our_guessed_label", 7))),
     "label_out_of_range", "votes.json", "label_sets.corrected.votes (record 2)",
     "our_guessed_label 7 is outside 0..2"),
    ("missing file", lambda d: None, lambda f: f.pop("real.json"),
     "missing_file", "real.json", "label_sets.real", "label set 'real' lacks: real.json"),
    ("ReaL class out of range", lambda d: None,
     lambda f: _set(f, "real.json", b"[[0], [2], [], [0], [1], [2, 3]]"),
     "label_out_of_range", "real.json", "label_sets.real.accepted", "outside 0..2"),
    ("ReaL names an unknown example", lambda d: None,
     lambda f: _set(f, "judged.npz", _npz(info=np.array([["toy_009.png", "0"]]))),
     "unknown_example", "judged.npz", "label_sets.real.judged", "'toy_009.png' names no example"),
    ("object array (AudioSet's label file)", lambda d: None,
     lambda f: _set(f, "labels.npy", npy_bytes(np.array([[0], [1, 2], [2], [0], [1], [2]],
                                                        dtype=object))),
     "pickle", "labels.npy", "label_sets.original.labels",
     "a .npy array of Python objects (dtype=object), stored as pickles"),
    ("pickle named .npy", lambda d: None,
     lambda f: _set(f, "labels.npy", pickle.dumps([0, 1, 2, 0, 1, 2])),
     "pickle", "labels.npy", "label_sets.original.labels", "a pickle: pickles are never loaded"),
    ("pickle named .json", lambda d: None,
     lambda f: _set(f, "votes.json", pickle.dumps({"votes": []}, protocol=4)),
     "pickle", "votes.json", "label_sets.corrected.votes.file", "a pickle"),
    ("pickled member of an .npz", lambda d: None,
     lambda f: _set(f, "judged.npz", _npz(info=np.array(["x", None], dtype=object))),
     "pickle", "judged.npz", "label_sets.real.judged", "dtype=object"),
    ("soft rows of no votes", lambda d: None,
     lambda f: _set(f, "counts.npy", npy_bytes(np.zeros((6, 3)))),
     "bad_file", "counts.npy", "label_sets.humans.counts", "an example has no votes"),
]


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.mark.parametrize(("change_doc", "change_files", "code", "file", "field", "words"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_it_refuses_naming_the_file_the_field_and_the_problem(
    tmp_path: Path, change_doc: Callable[[Doc], None], change_files: Callable[[Files], None],
    code: str, file: str, field: str, words: str,
) -> None:
    document, files = manifest(), data_files()
    change_doc(document)
    change_files(files)
    error = refusal(tmp_path, document, files)
    assert (error.code, error.file, error.field) == (code, file, field)
    assert words in error.message
    assert str(error) == f"{file}: {field}: {error.message}"
    assert error.as_dict() == {"code": code, "message": str(error), "file": file, "field": field}


def test_it_refuses_a_link_that_leads_out_of_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "outside.npy").write_bytes(data_files()["labels.npy"])
    files = data_files()
    del files["labels.npy"]
    path = write_bundle(tmp_path / "bundle", manifest(), files)
    os.symlink(tmp_path / "outside.npy", path.parent / "labels.npy")
    with pytest.raises(BundleError) as caught:
        compile_bundle(read_bundle(path), data_dir=NOWHERE)
    assert (caught.value.code, caught.value.file, caught.value.field) == \
        ("path_escapes", "labels.npy", "label_sets.original")


def test_it_refuses_a_pickle_class_file_by_its_name(tmp_path: Path) -> None:
    document = manifest()
    document["classes"] = {"count": 3, "source": "json_list", "file": "classes.pkl"}
    files = data_files() | {"classes.pkl": b'["cat", "dog", "fox"]'}
    error = refusal(tmp_path, document, files)
    assert (error.code, error.file, error.field) == ("pickle", "classes.pkl", "classes.file")


def test_it_refuses_a_class_named_twice_in_a_folder_name_list(tmp_path: Path) -> None:
    document = manifest()
    document["classes"] = {"count": 3, "source": "folder_names", "file": "paths.json"}
    paths = ["001.cat/1.jpg", "002.dog/2.jpg", "003.cat/3.jpg"]
    error = refusal(tmp_path, document, data_files() | {"paths.json": json.dumps(paths).encode()})
    assert (error.code, error.file, error.field) == ("duplicate_class", "paths.json",
                                                     "classes.file")
    assert error.message == "the class name 'cat' appears twice (class 2)"


def test_it_refuses_a_vote_on_a_name_listed_twice(tmp_path: Path) -> None:
    """As IMDB's index-to-name file, which lists 193 names more than once."""
    document = manifest()
    document["example_sets"][0] |= {"naming": "file", "names": "names.json"}
    del document["example_sets"][0]["pattern"], document["example_sets"][0]["first_number"]
    label_set(document, "corrected")["votes"] |= {"ids": "name", "id_prefix": "test/"}
    names = json.dumps(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "e.txt"]).encode()

    def votes(letters: str) -> bytes:  # vote ids 2, 4, 5 -> test/<letter>.txt
        return votes_with(lambda v: [_set(r, "id", f"test/{letters[r['id'] - 1]}.txt")
                                     for r in v])

    error = refusal(tmp_path, document, data_files() | {"names.json": names,
                                                        "votes.json": votes("abcxef")})
    assert (error.code, error.file, error.field) == (
        "unknown_example", "votes.json", "label_sets.corrected.votes (record 1)")
    assert error.message == "'x.txt' names no example of 'toy-test'"
    error = refusal(tmp_path, document, data_files() | {"names.json": names,
                                                        "votes.json": votes("abcdef")})
    assert (error.code, error.field) == ("unknown_example", "label_sets.corrected.votes (record 2)")
    assert error.message == "'e.txt' names several examples of 'toy-test'"


def test_it_refuses_a_manifest_that_is_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "toy.toml"
    path.write_text('schema = 1\nslug = "toy\n')
    with pytest.raises(BundleError) as caught:
        read_bundle(path)
    assert (caught.value.code, caught.value.file, caught.value.field) == \
        ("bad_toml", "toy.toml", "")
    assert caught.value.message.startswith("not valid TOML: ")


# 200,000 nested arrays, one a line: past tomllib's recursion
DEEP_TOML = ("x = " + "[\n" * 200_000 + "]\n" * 200_000).encode()
DEEP = ("line 33: arrays and inline tables nested more than 32 deep, the most a manifest "
        "may nest them")


def test_it_refuses_a_manifest_nested_too_deeply_as_bad_toml(tmp_path: Path) -> None:
    # refused by the limits before tomllib's recursive parser would overflow: a malformed
    # manifest, not a server fault, whether read from a folder or from a zip
    path = tmp_path / "toy.toml"
    path.write_bytes(DEEP_TOML)
    with pytest.raises(BundleError) as caught:
        read_bundle(path)
    error = caught.value
    assert (error.code, error.file, error.field, error.message) == ("bad_toml", "toy.toml", "",
                                                                    DEEP)

    error = open_zip(tmp_path, zip_bytes({"toy/toy.toml": DEEP_TOML}))
    assert (error.code, error.file, error.field, error.message) == ("bad_toml", "toy.toml", "",
                                                                    DEEP)


def test_it_refuses_a_manifest_past_the_stack_as_bad_toml_when_the_limits_allow_it() -> None:
    # the backstop behind the limits: tomllib's RecursionError, in the child and in the parser
    lifted = ManifestLimits(max_depth=10**6, max_array_items=10**6)
    with pytest.raises(BundleError) as caught:
        parse_manifest(DEEP_TOML, path=Path("toy.toml"), limits=lifted)
    assert (caught.value.code, caught.value.message) == ("bad_toml",
                                                         "not valid TOML: nested too deeply")


def test_it_says_which_setting_an_optional_source_lacks(data_dir: Path) -> None:
    from tests.helpers import PROJECT_ROOT

    data = BundleData(read_bundle(PROJECT_ROOT / "benchmarks/imagenet.toml"), data_dir=data_dir)
    with pytest.raises(BundleError) as caught:
        compile_bundle_label_set(data, "imagenet-m")
    assert (caught.value.code, caught.value.field) == ("not_configured", "label_sets.imagenet-m")
    assert caught.value.message == "label set 'imagenet-m' lacks: setting multilabel_file"


# ---------------------------------------------------------------- zip bundles


def open_zip(tmp_path: Path, content: bytes, limits: ZipLimits | None = None) -> BundleError:
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(content)
    with pytest.raises(BundleError) as caught, open_bundle(archive, limits=limits):
        pass
    return caught.value


@pytest.mark.parametrize(("name", "why"), [
    ("../toy.toml", "a `..` part leads out of the bundle"),
    ("toy/../../x.npy", "a `..` part leads out of the bundle"),
    ("/etc/cron.d/x", "an absolute path"),
    ("C:/x.npy", "an absolute path"),
    ("toy\\x.npy", "a backslash in the name"),
    ("toy//x.npy", "an empty or `.` part"),
    ("toy/\x01.npy", "an empty name or a control character"),
])
def test_it_refuses_a_zip_entry_that_could_land_outside(tmp_path: Path, name: str,
                                                        why: str) -> None:
    error = open_zip(tmp_path, zip_bytes(bundle_entries() | {name: b"x"}))
    assert (error.code, error.file, error.message) == ("zip_unsafe_entry", name,
                                                       f"entry {name!r}: {why}")
    assert not (tmp_path / "x.npy").exists() and not (tmp_path.parent / "toy.toml").exists()


def test_it_refuses_a_link_in_a_zip(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in bundle_entries().items():
            archive.writestr(name, content)
        link = zipfile.ZipInfo("toy/passwd")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    error = open_zip(tmp_path, buffer.getvalue())
    assert (error.code, error.file) == ("zip_unsafe_entry", "toy/passwd")
    assert "a link or special file" in error.message


def test_it_refuses_a_zip_bomb_by_its_ratio(tmp_path: Path) -> None:
    error = open_zip(tmp_path, zip_bytes(bundle_entries() | {"toy/zeros.bin": bytes(50 << 20)}))
    assert (error.code, error.file) == ("zip_bomb", "bundle.zip")
    assert error.message == ("refused as a possible zip bomb: 'toy/zeros.bin' is compressed "
                             "more than 200 to 1")


@pytest.mark.parametrize(("limits", "words"), [
    (ZipLimits(max_entries=7), "8 entries, more than 7"),
    (ZipLimits(max_entry_bytes=100), "unpacks to"),
    (ZipLimits(max_total_bytes=1000), "more than 1000"),
])
def test_it_refuses_a_zip_past_its_caps(tmp_path: Path, limits: ZipLimits, words: str) -> None:
    error = open_zip(tmp_path, zip_bytes(bundle_entries() | {"toy/x.bin": os.urandom(2000)}),
                     limits)
    assert error.code == "zip_bomb" and words in error.message


@pytest.mark.parametrize(("extra", "words"), [
    ({}, "it holds 0"), ({"toy/other.toml": b"schema = 1\n"}, "it holds 2")])
def test_it_refuses_a_zip_without_exactly_one_manifest(tmp_path: Path, extra: dict[str, bytes],
                                                       words: str) -> None:
    entries = bundle_entries()
    if not extra:
        del entries["toy/toy.toml"]
    error = open_zip(tmp_path, zip_bytes(entries | extra))
    assert error.code == "zip_manifest" and words in error.message


def test_it_refuses_a_pickle_inside_a_zip_and_a_file_that_is_no_zip(tmp_path: Path) -> None:
    error = open_zip(tmp_path, zip_bytes(bundle_entries() | {"toy/model.bin": pickle.dumps(1)}))
    assert (error.code, error.file) == ("pickle", "toy/model.bin")
    error = open_zip(tmp_path, b"PK\x03\x04 not really a zip")
    assert (error.code, error.file) == ("bad_zip", "bundle.zip")
