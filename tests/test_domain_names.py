"""No family name, bundle kind, layout name or built-in benchmark slug is compared with, or
used as a key, outside the families, the bundles and the demo (docs/architecture.md, "A
benchmark is data"): a module that needs one of them asks the registry or the benchmark's
rows instead.

The scan reads every module of the project's packages (not the tests) and finds such a
string in a comparison (`==`, `in`), a subscript, a dictionary key, a `.get()` key, a query's
keyword (`slug=`, `family=`, ...), a parameter's default or a constant that names it, and fails
on any."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT
from workers.scoring.bundles import builtin_slugs
from workers.scoring.families.registry import BUNDLE_KINDS, FAMILIES, layouts_of

PACKAGES = ("evalserver", "leaderboard", "workers")
# Where these names are the subject: the families and their registry, the bundle code that
# reads them, the demo that seeds the built-in benchmarks, and the migrations' history.
HOMES = ("workers/scoring/families/", "workers/scoring/bundles/", "leaderboard/demo/",
         "leaderboard/migrations/")
QUERY_KEYWORDS = frozenset({"slug", "slug__in", "family", "family__in", "kind", "benchmark",
                            "benchmark__slug", "label_set__slug"})


def domain_names() -> frozenset[str]:
    layouts = {layout for kind in BUNDLE_KINDS for layout in layouts_of(kind)}
    return frozenset(FAMILIES) | frozenset(BUNDLE_KINDS) | layouts | frozenset(builtin_slugs())


def _strings(node: ast.AST | None, names: frozenset[str]) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element, names)


def _used(node: ast.AST, names: frozenset[str]) -> Iterator[str]:
    """The domain names `node` compares with or uses as a key."""
    if isinstance(node, ast.Compare):
        for side in (node.left, *node.comparators):
            yield from _strings(side, names)
    elif isinstance(node, ast.Subscript):
        yield from _strings(node.slice, names)
    elif isinstance(node, ast.Dict):
        for key in node.keys:
            yield from _strings(key, names)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("get", "pop", "setdefault") and node.args:
        yield from _strings(node.args[0], names)
    elif isinstance(node, ast.keyword) and node.arg in QUERY_KEYWORDS:
        yield from _strings(node.value, names)
    elif isinstance(node, ast.arguments):
        for default in (*node.defaults, *node.kw_defaults):
            yield from _strings(default, names)
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        yield from _strings(node.value, names)


def occurrences(root: Path, names: frozenset[str]) -> Counter[str]:
    """Per module (its path under `root`), how many domain names it compares or keys by."""
    found: Counter[str] = Counter()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(HOMES):
                continue
            tree = ast.parse(path.read_text(), filename=relative)
            # a class's own constants (an enum such as LabelSet.Kind's label kinds) are its
            # vocabulary, not a lookup
            members = {id(statement) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                       for statement in node.body if isinstance(statement, ast.Assign)}
            count = sum(1 for node in ast.walk(tree) if id(node) not in members
                        for _ in _used(node, names))
            if count:
                found[relative] = count
    return found


def test_it_finds_each_way_of_comparing_or_keying_by_a_domain_name(tmp_path: Path) -> None:
    (tmp_path / "leaderboard").mkdir()
    (tmp_path / "leaderboard" / "sample.py").write_text(
        'ORIGINAL = "original"\n'
        'def f(ls, d, sort="real"):\n'
        '    if ls.family == "corrected" or ls.slug in ("mnist", "other"):\n'
        '        return d["imagenet"], d.get("soft"), {"subset": 1}\n'
        '    return LabelSet.objects.filter(slug="cifar10", name="original")\n'
        'TEXT = "the original labels"\n')
    assert occurrences(tmp_path, domain_names()) == {"leaderboard/sample.py": 8}


def test_it_keeps_domain_names_in_the_families_the_bundles_and_the_demo() -> None:
    found = occurrences(PROJECT_ROOT, domain_names())
    assert found == {}, "ask the registry or the benchmark's rows instead (docs/architecture.md)"


@pytest.mark.parametrize("name", ["original", "real", "human_accuracy", "cifar10", "multi"])
def test_it_knows_the_names_it_looks_for(name: str) -> None:
    assert name in domain_names()
