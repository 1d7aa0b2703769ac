"""The limits of a manifest (docs/bundles.md §1; security issue 37, item 3): a key of too many
dotted parts, a line, a string, too many keys, tables or array items, too deep a nesting are
refused as bad_toml naming the limit and the line before tomllib reads the text; the parse
itself runs first in a forked child under a memory and a CPU limit (bounded.py), whose
exhaustion is a bad_toml naming the limit, never a dead worker.

tomllib's memory grows with the square of one key's parts (measured, peak RSS of a fresh
interpreter: 1,000 parts 15 MB, 2,000 27 MB, 4,000 73 MB, 8,000 258 MB; the issue's 40,000
took 6.3 GB and its 300,000 a worker past 22 GB). Nothing here parses such a key unlimited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.bundles.bundle_files import manifest, toml_dumps, zip_bytes
from workers.scoring.bundles import (
    BundleError,
    ManifestLimits,
    builtin_bundle_paths,
    open_bundle,
    parse_manifest,
)
from workers.scoring.bundles.bounded import LimitExceeded, bounded_check
from workers.scoring.bundles.toml_limits import check_manifest_limits

LIMITS = ManifestLimits()
TOY = toml_dumps(manifest())  # one `key = value` line per top-level key
TOY_LINES = TOY.count("\n")
PARTS = (f"line {TOY_LINES + 1}: a key or table header of more than 16 dotted parts, the most "
         "a manifest's key may have")


def refusal(text: str, limits: ManifestLimits | None = None) -> tuple[str, str, str, str]:
    with pytest.raises(BundleError) as caught:
        parse_manifest(text.encode(), path=Path("toy.toml"), limits=limits)
    error = caught.value
    return error.code, error.file, error.field, error.message


@pytest.mark.parametrize("line", [
    "a" + ".a" * 999 + " = 1",
    "[" + "a." * 16 + "a]",
    "[[" + "a." * 16 + "a]]",
    "x = { " + "b . " * 16 + "b = 1 }",
    '"q".' + '"r.s".' * 16 + "t = 1",
], ids=["key", "table", "array-of-tables", "inline-table-key-with-spaces", "quoted-parts"])
def test_it_refuses_a_key_of_more_dotted_parts_than_the_limit_before_parsing(line: str) -> None:
    assert refusal(TOY + line + "\n") == ("bad_toml", "toy.toml", "", PARTS)


def test_it_refuses_the_740_byte_bundle_of_the_issue_before_parsing(tmp_path: Path) -> None:
    # one key of 300,000 parts, 600 kB, zipped to 732 bytes here (740 in the issue): it took
    # a worker past 22 GB
    key = b"a" + b".a" * 299_999 + b" = 1\n"
    archive = tmp_path / "toy.zip"
    archive.write_bytes(zip_bytes({"toy/toy.toml": key}))
    assert (len(key), archive.stat().st_size) == (600_004, 732)
    with pytest.raises(BundleError) as caught, open_bundle(archive):
        pass
    assert (caught.value.code, caught.value.file, caught.value.message) == (
        "bad_toml", "toy.toml", "line 1: longer than 65,536 characters, the most a manifest's "
        "line may have (an array may span lines)")


def _many(template: str, n: int) -> str:
    return "".join(template.format(i=i) for i in range(n))


# (id, text past the limit, the message, text at the limit)
PAST: list[tuple[str, str, str, str]] = [
    ("keys", _many("k{i} = 1\n", 10_001),
     "line 10001: more than 10,000 keys, the most a manifest may have",
     _many("k{i} = 1\n", 10_000)),
    ("tables", _many("[t{i}]\n", 1_001),
     "line 1001: more than 1,000 tables (table headers and inline tables), the most a "
     "manifest may have", _many("[t{i}]\n", 1_000)),
    ("inline tables", "x = [\n" + "{},\n" * 1_001 + "]\n",
     "line 1002: more than 1,000 tables (table headers and inline tables), the most a "
     "manifest may have", "x = [\n" + "{},\n" * 1_000 + "]\n"),
    ("array items", "x = [\n" + "1,\n" * 50_000 + "]\ny = [\n" + "2,\n" * 50_001 + "]\n",
     "line 100004: more than 100,000 array items (all arrays together), the most a manifest "
     "may have", "x = [\n" + "1,\n" * 50_000 + "]\ny = [\n" + "2,\n" * 50_000 + "]\n"),
    ("nesting", "x = " + "[{a = " * 16 + "[1]" + "}]" * 16 + "\n",
     "line 1: arrays and inline tables nested more than 32 deep, the most a manifest may nest "
     "them", "x = " + "[{a = " * 15 + "[[1]]" + "}]" * 15 + "\n"),
    ("line", "x = [" + "1, " * 21_844 + "1]\n",
     "line 1: longer than 65,536 characters, the most a manifest's line may have (an array "
     "may span lines)", "x = [" + "1, " * 21_843 + "1]\n"),
    ("string", 'x = """\n' + "abc\n" * 16_383 + 'abcd"""\n',
     "line 1: a string longer than 65,536 characters, the most a manifest's string may have",
     'x = """\n' + "abc\n" * 16_383 + 'abc"""\n'),
]


@pytest.mark.parametrize(("text", "message", "at_limit"), [case[1:] for case in PAST],
                         ids=[case[0] for case in PAST])
def test_it_refuses_a_manifest_past_each_limit_naming_it_and_reads_one_at_it(
    text: str, message: str, at_limit: str,
) -> None:
    tomllib.loads(text)  # valid TOML, refused for its size only
    assert refusal(text) == ("bad_toml", "toy.toml", "", message)
    assert check_manifest_limits(at_limit, file="toy.toml", limits=LIMITS) is True
    # read, then refused by the schema: no top-level `schema`
    assert refusal(at_limit)[:3] == ("missing_field", "toy.toml", "schema")


def test_it_reads_every_built_in_manifest_within_the_limits_to_its_end() -> None:
    for path in builtin_bundle_paths():
        assert check_manifest_limits(path.read_text(), file=path.name, limits=LIMITS), path.name


def test_it_refuses_an_integer_of_more_digits_than_python_reads_as_bad_toml() -> None:
    # tomllib lets int()'s ValueError out (not a TOMLDecodeError): no longer an internal error
    assert refusal(TOY + "x = " + "1" * 5_000 + "\n") == (
        "bad_toml", "toy.toml", "", "not valid TOML: a value this server cannot read (Exceeds "
        "the limit (4300 digits) for integer string conversion: value has 5000 digits)")


# 10,000 keys of 16 parts under a header of 16: within every limit, about 50 MB to parse
HEAVY = ("[" + ".".join(["h"] * 16) + "]\n"
         + _many("k{i}" + ".a" * 15 + " = 1\n", 10_000))
# In a fresh interpreter, as a worker's first bundle: the child may use its budget of address
# space beyond its parent's, which includes the parent's free heap (a long test session's can
# hold more than this manifest needs).
PARSE = """
import json, sys
from pathlib import Path
from workers.scoring.bundles import BundleError, ManifestLimits, parse_manifest
limits = ManifestLimits(parse_memory_bytes=int(sys.argv[1]) << 20)
try:
    parse_manifest(sys.stdin.buffer.read(), path=Path("toy.toml"), limits=limits)
except BundleError as error:
    print(json.dumps([error.code, error.file, error.field, error.message]))
"""


def fresh_refusal(text: str, memory_mib: int) -> tuple[str, ...]:
    done = subprocess.run([sys.executable, "-c", PARSE, str(memory_mib)], input=text.encode(),
                          cwd=PROJECT_ROOT, capture_output=True, check=True)
    return tuple(json.loads(done.stdout))


def test_it_refuses_a_manifest_whose_parse_needs_more_memory_than_its_limit() -> None:
    assert fresh_refusal(HEAVY, 16) == (
        "bad_toml", "toy.toml", "",
        "reading the manifest needs more than the 16 MiB of memory a manifest's parse may use")
    # under the default limit it is parsed, then refused by the schema
    assert fresh_refusal(HEAVY, 512)[:3] == ("missing_field", "toy.toml", "schema")


# ------------------------------------------------------------ the child (bounded.py)


def _spin() -> None:
    while True:
        pass


def _allocate() -> None:
    blocks = []
    while True:
        blocks.append(bytearray(1 << 20))


@pytest.mark.parametrize(("work", "reason", "message"), [
    (_allocate, "memory", "needs more than 32 MiB of memory"),
    (_spin, "cpu", "needs more than 1 s of CPU"),
    (os.abort, "crashed", "failed with signal SIGABRT"),
    (lambda: {}["missing"], "crashed", "failed with an unexpected error"),
], ids=["memory", "cpu", "abort", "unexpected-exception"])
def test_it_turns_a_child_past_its_limits_into_a_named_refusal(
    work: Any, reason: str, message: str,
) -> None:
    with pytest.raises(LimitExceeded) as caught:
        bounded_check(work, memory_bytes=32 << 20, cpu_seconds=1)
    assert (caught.value.reason, str(caught.value)) == (reason, message)


def test_it_returns_when_the_child_finishes_or_raises_an_expected_refusal() -> None:
    bounded_check(lambda: tomllib.loads("x = 1"), memory_bytes=32 << 20, cpu_seconds=5)
    bounded_check(lambda: tomllib.loads("x = "), memory_bytes=32 << 20, cpu_seconds=5,
                  expected=(tomllib.TOMLDecodeError,))


# ------------------------------------------------------------ the pass against tomllib

_BARE = st.sampled_from(["a", "b-c", "d_e", "F9", "1", "true", "inf"])
_QUOTED = st.sampled_from(['"q"', '"a.b"', "'c.d'", '"#[="', '"\\"x"', "''", '"\\u0041"'])
_DOT = st.sampled_from([".", " . ", "\t.", ". "])
_SCALARS = st.sampled_from([
    "0", "-17", "+42", "1_000", "0x1F", "0o17", "0b101", "1.5", "-0.5e3", "6.02E+23", "inf",
    "-nan", "true", "false", "1979-05-27T07:32:00Z", "1979-05-27 07:32:00.999", "1979-05-27",
    "07:32:00", '"a\\"b#[=.\\\\"', "'a\"b#[=.'", '"""\na""b\\\n  c"""', '"""a""""', "''''a'''",
    "'''a''b\n[c]\n'''", '""', "''", '"a.b.c = [[["',
])
_SEPARATORS = st.sampled_from([", ", ",", ",\n  ", " , # c [\n", ",\n\n"])


def _key(parts: list[str], dots: list[str]) -> str:
    """The parts joined by the dots between them."""
    return parts[0] + "".join(dot + part for dot, part in zip(dots, parts[1:], strict=False))


@st.composite
def _value(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["scalar", "array", "table"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        return draw(_SCALARS)
    if kind == "array":
        items = draw(st.lists(_value(depth + 1), max_size=4))
        separator = draw(_SEPARATORS)
        trailing = separator if items and draw(st.booleans()) else ""
        return "[" + separator.join(items) + trailing + "]"
    n = draw(st.integers(0, 3))
    pairs = [f"k{i}{draw(_DOT)}{draw(_BARE)} = {draw(_value(depth + 1))}" for i in range(n)]
    return "{" + ", ".join(pairs) + "}"


@st.composite
def _document(draw: st.DrawFn) -> str:
    """Valid TOML of every syntax a manifest may use; fresh names keep it free of clashes."""
    lines = []
    for i in range(draw(st.integers(1, 8))):
        parts = draw(st.lists(_BARE | _QUOTED, min_size=1, max_size=4))
        dots = draw(st.lists(_DOT, min_size=len(parts), max_size=len(parts)))
        comment = draw(st.sampled_from(["", " # a.b.c = [", "  #"]))
        shape = draw(st.sampled_from(["pair", "table", "array-table", "blank"]))
        if shape == "pair":
            lines.append(f"n{i}{dots[0]}{_key(parts, dots[1:])} = {draw(_value())}{comment}")
        elif shape == "table":
            lines.append(f"[t{i}{dots[0]}{_key(parts, dots[1:])}]{comment}")
        elif shape == "array-table":
            lines.append(f"[[ r{i}{dots[0]}{_key(parts, dots[1:])} ]]{comment}")
        else:
            lines.append(comment)
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_document())
def test_it_reads_any_valid_toml_to_its_end_and_still_sees_a_key_after_it(text: str) -> None:
    tomllib.loads(text)  # the generator's own check: valid TOML
    assert check_manifest_limits(text, file="t.toml", limits=LIMITS) is True
    # a key appended after any document is counted: the pass followed strings, comments,
    # arrays and tables to the right state
    long_key = "zz" + ".y" * 16 + " = 1\n"
    tomllib.loads(text + long_key)
    with pytest.raises(BundleError) as caught:
        check_manifest_limits(text + long_key, file="t.toml", limits=LIMITS)
    assert caught.value.message == (f"line {text.count(chr(10)) + 1}: a key or table header "
                                    "of more than 16 dotted parts, the most a manifest's key "
                                    "may have")
