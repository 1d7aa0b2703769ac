"""The bundle reader on hypothesis-generated input: mutated manifests, replaced data files,
raw manifest bytes and zip archives of any entries either give a bundle whose label sets
compile, or are refused with a BundleError of a known code (workers/scoring/bundles/
errors.py), a message, and nothing written outside the extraction folder. No other
exception may escape. The raw manifest bytes are parsed as an upload's are (its parse first
proven in a child process to fit its limits); the compiled bundles' manifests, ordinary
documents, are parsed in this process (the child's cost, a fork each, is tested once there).
"""

from __future__ import annotations

import copy
import io
import json
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.workers.scoring.bundles.bundle_files import (
    bundle_entries,
    data_files,
    manifest,
    toml_dumps,
    write_bundle,
)
from workers.scoring.bundles import (
    CODES,
    BundleError,
    ManifestLimits,
    ZipLimits,
    compile_bundle,
    extract_bundle,
    parse_manifest,
    read_bundle,
)
from workers.scoring.families.registry import family_named

NOWHERE = Path("/nonexistent-data-dir")
IN_PROCESS = ManifestLimits(isolated=False)
TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
SCALARS = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.integers(-3, 12),
                    st.floats(), TEXT)
TOML_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner,
                                                                         max_size=3),
    max_leaves=8)
# Values the schema gives meaning to, so that mutations reach past the first type check.
PLAUSIBLE = st.sampled_from([
    "single", "validated", "multi", "soft", "subset", "new_test_set", "real", "human_accuracy",
    "index", "pattern", "file", "number", "name", "id", "none", "original", "guessed", "both",
    "neither", "inline", "json_list", "folder_names", "vote_file", "records", "bundle", "data",
    "text", "toy-test", "toy-new", "corrected", "real", "labels.npy", "votes.json", "real.json",
    "judged.npz", "counts.npy", "new_labels.npy", "../labels.npy", "/etc/passwd", "a\\b",
    "toy_{number:03d}.png", "{number}", "imagenet-vasudevan2022", "multilabel_file",
]) | st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, -1, 2**40, [3, 4, 5], [3, 3], [], {}])


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += paths(item, prefix + (i,))
    return out


def mutate(document: dict[str, Any], data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths(document)))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        op = data.draw(st.sampled_from(["delete", "set", "set", "add"]))
        if op == "delete":
            del parent[path[-1]]
            return
        # a copy: sampled_from hands out the same list or dict object every time, and a later
        # mutation inside it would change the strategy itself (and could make it contain itself)
        value = copy.deepcopy(data.draw(PLAUSIBLE | TOML_VALUES))
        if op == "set":
            parent[path[-1]] = value
        elif isinstance(parent, dict):
            parent[data.draw(TEXT | st.sampled_from(["order", "counts", "thresholds"]))] = value


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


FILE_CONTENTS = st.one_of(
    st.binary(max_size=200),
    hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=2, max_side=8))
    .map(npy),
    st.lists(st.integers(-2, 5), max_size=8).map(lambda v: npy(np.array(v, dtype=np.int64))),
    st.recursive(st.one_of(st.booleans(), st.integers(-3, 2**70), TEXT), lambda inner:
                 st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=3),
                 max_leaves=10).map(lambda v: json.dumps(v).encode()),
    st.just(pickle.dumps([0, 1, 2, 0, 1, 2])),
    st.just(npy(np.array([[0], [1, 2], [2], [0], [1], [2]], dtype=object))),
)


def assert_outcome(result: dict[str, Any] | BundleError) -> None:
    if isinstance(result, BundleError):
        event(result.code)
        assert result.code in CODES, result
        assert result.message.strip()
        assert str(result).endswith(result.message)
        return
    event("compiled")
    for compiled in result.values():
        assert set(family_named(compiled.family).arrays) <= set(compiled.arrays)
        assert len(compiled.content_hash) == 64


def outcome(folder: Path) -> dict[str, Any] | BundleError:
    try:
        return compile_bundle(read_bundle(folder / "toy.toml", limits=IN_PROCESS),
                              data_dir=NOWHERE)
    except BundleError as error:
        return error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_it_compiles_or_refuses_by_code_any_mutated_manifest(data: st.DataObject) -> None:
    document = manifest()
    mutate(document, data)
    with tempfile.TemporaryDirectory() as folder:
        write_bundle(Path(folder), document)
        assert_outcome(outcome(Path(folder)))


@settings(max_examples=300, deadline=None)
@given(replaced=st.dictionaries(st.sampled_from(sorted(data_files())), FILE_CONTENTS,
                                min_size=1, max_size=2))
def test_it_compiles_or_refuses_by_code_any_replaced_data_file(replaced: dict[str, bytes]
                                                               ) -> None:
    with tempfile.TemporaryDirectory() as folder:
        write_bundle(Path(folder), manifest(), data_files() | replaced)
        assert_outcome(outcome(Path(folder)))


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=300) | TEXT.map(str.encode)
       | st.builds(lambda d: toml_dumps(d).encode(), st.dictionaries(TEXT, TOML_VALUES,
                                                                     max_size=5)))
def test_it_parses_or_refuses_by_code_any_manifest_bytes(raw: bytes) -> None:
    try:
        parse_manifest(raw, path=Path("any.toml"))
    except BundleError as error:
        assert_outcome(error)


SAFE_NAMES = st.sampled_from(["toy/a.bin", "toy/labels.npy", "toy/x/y.json", "toy/other.toml",
                              "b.npy", "toy/x/", "other/c.bin", "toy/d.json", "toy/e.npy"])
NAME_PARTS = st.sampled_from(["toy", "..", ".", "", "a", "toy.toml", "x.npy", "C:", "a\\b",
                              "labels.npy", "\x01"]) | st.text("abc./", max_size=4)
UNSAFE_NAMES = st.builds(lambda lead, parts: lead + "/".join(parts),
                         st.sampled_from(["", "/"]), st.lists(NAME_PARTS, min_size=1, max_size=3))
ENTRY_NAMES = st.one_of(SAFE_NAMES, SAFE_NAMES, UNSAFE_NAMES)
ENTRY_CONTENTS = st.binary(max_size=64) | st.integers(0, 300_000).map(bytes) \
    | st.binary(min_size=50_000, max_size=50_000) | st.just(pickle.dumps(1))
LIMITS = ZipLimits(max_entries=20, max_entry_bytes=1 << 17, max_total_bytes=1 << 18,
                   max_ratio=50, ratio_floor_bytes=4096)


@pytest.mark.filterwarnings("ignore:Duplicate name")  # two entries of one name: on purpose
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.lists(st.tuples(ENTRY_NAMES, ENTRY_CONTENTS, st.sampled_from(
           [0, 0, 0o100644, 0o120777, 0o040755])), max_size=4),
       keep_bundle=st.booleans(), deflate=st.booleans())
def test_it_extracts_or_refuses_by_code_any_zip(extra: list[tuple[str, bytes, int]],
                                                keep_bundle: bool, deflate: bool) -> None:
    compression = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        entries = [(n, c, 0) for n, c in bundle_entries().items()] if keep_bundle else []
        for name, content, mode in entries + extra:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = compression
            archive.writestr(info, content)
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "bundle.zip").write_bytes(buffer.getvalue())
        (Path(root) / "out").mkdir()
        result: dict[str, Any] | BundleError
        try:
            manifest_path = extract_bundle(Path(root) / "bundle.zip", Path(root) / "out", LIMITS)
            result = compile_bundle(read_bundle(manifest_path, limits=IN_PROCESS),
                                    data_dir=NOWHERE)
        except BundleError as error:
            result = error
        assert sorted(p.name for p in Path(root).iterdir()) == ["bundle.zip", "out"]
        assert_outcome(result)
