"""The limits of a manifest's TOML, checked by one cheap pass before `tomllib` reads it
(docs/bundles.md §1, "Limits of a manifest").

`tomllib` needs memory roughly quadratic in the parts of one dotted key: for every prefix of
`a.a.a...` it keeps a tuple of that prefix, so one key of 300,000 parts (600 kB, zipped to 740
bytes) took a worker past 22 GB. Table headers and keys cost a few kilobytes each whatever
their length. So before parsing, one pass over the text (a tokenizer that knows TOML's strings,
comments, keys, headers and values, in time linear in the text) refuses a manifest with a line,
a string, a key of too many dotted parts, or too many keys, tables, array items or levels of
nesting, naming the limit (`bad_toml`). With these limits the costliest manifest measured
(1,000 table headers of 16 parts, ten 16-part keys under each) parses in under 200 MB; the
parse still runs under a memory limit (bounded.py), should `tomllib` have another such path.

The pass only counts: anything it cannot read is left to `tomllib`, which refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import BundleError


@dataclass(frozen=True)
class ManifestLimits:
    """What one manifest may hold (the real bundles: lines under 300 characters, keys of at
    most three parts, about 100 keys and 20 tables), and the child process's limits for its
    parse (bounded.py; `isolated` False: parsed in this process, for the built-in bundles)."""

    max_line_chars: int = 65_536
    max_string_chars: int = 65_536
    max_key_parts: int = 16  # of one key or table header: `votes.vocabulary` has two
    max_keys: int = 10_000  # key/value pairs, inline tables' included
    max_tables: int = 1_000  # table headers (`[x]`, `[[x]]`) and inline tables
    max_array_items: int = 100_000  # all arrays together
    max_depth: int = 32  # arrays and inline tables, one inside another
    isolated: bool = True
    parse_memory_bytes: int = 512 << 20  # the child's address space beyond its parent's
    parse_cpu_seconds: int = 30


# One token at a position. Strings as `tomllib` reads them: a multi-line string ends at the
# first unescaped `"""` (or `'''`), which may be followed by up to two more quotes of its
# content. Blank and comment-only lines are one `nl` token. Possessive quantifiers: a string
# left open fails to match in linear time.
_TOKEN = re.compile(r"""
    (?P<nl>(?:[ \t]*+(?:\#[^\n]*+)?\n)++)
  | (?P<ws>[ \t]++)
  | (?P<comment>\#[^\n]*+)
  | (?P<string>"{3}(?:[^"\\]|\\[\s\S]|"(?!""))*+"{3}"{0,2}
              | '{3}(?:[^']|'(?!''))*+'{3}'{0,2}
              | "(?:[^"\\\n]|\\.)*+"
              | '[^'\n]*+')
  | (?P<bare>[A-Za-z0-9_+\-:.]++)
  | (?P<punct>[\[\]{},=])
""", re.VERBOSE)

_TABLES = "tables (table headers and inline tables)"
_ITEMS = "array items (all arrays together)"
_LINE = re.compile(r"[^\n]++")

# What the pass expects next.
_KEY = "key"  # a key (or, at the start of a top-level line, a table header)
_HEADER = "header"  # inside `[...]`
_HEADER_END = "header end"  # after a header's `]`
_VALUE = "value"
_AFTER = "after"  # after a value


class _Scan:
    """The counts of one pass; `refuse` says where and which limit."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.keys = self.tables = self.items = 0

    def refuse(self, pos: int, message: str) -> BundleError:
        line = self.text.count("\n", 0, pos) + 1
        return BundleError("bad_toml", f"line {line}: {message}", file=self.file)

    def count(self, pos: int, attribute: str, limit: int, what: str) -> None:
        value = getattr(self, attribute) + 1
        setattr(self, attribute, value)
        if value > limit:
            raise self.refuse(pos, f"more than {limit:,} {what}, the most a manifest may have")


def check_manifest_limits(text: str, *, file: str, limits: ManifestLimits) -> bool:
    """Refuse (`bad_toml`, naming the limit and the line) a manifest past `limits`. True when
    the pass read the whole text; False when it stopped at something it cannot tokenize
    (not TOML: `tomllib` refuses it there)."""
    text = text.replace("\r\n", "\n")  # as tomllib reads it
    scan = _Scan(text, file)
    if len(text) > limits.max_line_chars:
        for line in _LINE.finditer(text):  # each line once: linear
            if line.end() - line.start() > limits.max_line_chars:
                raise scan.refuse(line.start(), f"longer than {limits.max_line_chars:,} "
                                  "characters, the most a manifest's line may have (an array "
                                  "may span lines)")
    stack: list[str] = []  # "a": an array, "t": an inline table
    mode, parts, continued = _KEY, 0, False
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return False  # a string left open, a character TOML does not allow: tomllib refuses
        kind, token = match.lastgroup, match.group()
        at, pos = pos, match.end()
        if kind in ("ws", "comment"):
            continue
        quotes = 6 if token[:3] in ('"""', "'''") else 2
        if kind == "string" and len(token) - quotes > limits.max_string_chars:
            raise scan.refuse(at, f"a string longer than {limits.max_string_chars:,} "
                              "characters, the most a manifest's string may have")
        if kind == "nl":
            if stack and stack[-1] == "a":
                continue  # an array may span lines
            if stack or mode not in (_AFTER, _HEADER_END) and not (mode == _KEY and not parts):
                return False
            mode, parts = _KEY, 0
            continue
        if mode in (_KEY, _HEADER):
            if kind in ("bare", "string"):
                # a key's parts are one more than its dots outside quotes (`a . "b.c"`: 2)
                parts += (token.count(".") if kind == "bare" else 0) + (0 if parts else 1)
                if parts > limits.max_key_parts:
                    raise scan.refuse(at, f"a key or table header of more than "
                                      f"{limits.max_key_parts} dotted parts, the most a "
                                      "manifest's key may have")
            elif token == "[" and mode == _KEY and not parts and not stack:
                mode = _HEADER
                scan.count(at, "tables", limits.max_tables, _TABLES)
            elif token == "[" and mode == _HEADER and not parts:
                pass  # `[[`: an array of tables
            elif token == "]" and mode == _HEADER and parts:
                mode = _HEADER_END
            elif token == "=" and mode == _KEY and parts:
                scan.count(at, "keys", limits.max_keys, "keys")
                mode, parts = _VALUE, 0
            elif token == "}" and mode == _KEY and not parts and stack and stack[-1] == "t":
                stack.pop()  # an empty inline table
                mode = _AFTER
            else:
                return False
        elif mode == _HEADER_END:
            if token != "]":
                return False
        elif mode == _VALUE:
            if stack and stack[-1] == "a" and token != "]":
                scan.count(at, "items", limits.max_array_items, _ITEMS)
            continued = False
            if token in ("[", "{"):
                stack.append("a" if token == "[" else "t")
                if len(stack) > limits.max_depth:
                    raise scan.refuse(at, f"arrays and inline tables nested more than "
                                      f"{limits.max_depth} deep, the most a manifest may "
                                      "nest them")
                if token == "{":
                    scan.count(at, "tables", limits.max_tables, _TABLES)
                    mode, parts = _KEY, 0
            elif token == "]" and stack and stack[-1] == "a":
                stack.pop()  # an empty array, or a comma before the bracket
                mode = _AFTER
            elif kind in ("bare", "string"):
                mode = _AFTER
            else:
                return False
        else:  # _AFTER
            if token == "," and stack:
                mode, parts = (_VALUE, 0) if stack[-1] == "a" else (_KEY, 0)
            elif token in ("]", "}") and stack and stack[-1] == ("a" if token == "]" else "t"):
                stack.pop()
            elif kind == "bare" and not continued:
                continued = True  # a date-time's time after a space: 1979-05-27 07:32:00
            else:
                return False
    return True
