"""The project's packages import one another without a circle, module by module.

import-linter's contracts (pyproject.toml) say which layer may import which; this test says
that no module reaches itself again through its imports, whatever the packages: the graph of
every import statement (grimp's, the graph import-linter reads) has no strongly connected
component of more than one module, and no module imports itself."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from tests.helpers import PROJECT_ROOT

PROJECT_PACKAGES = ("evalserver", "leaderboard", "workers")


def import_circles(*packages: str) -> list[list[str]]:
    """Each group of modules that import one another in a circle (sorted), from the import
    statements of `packages` (importable from sys.path)."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    modules = sorted(graph.modules)
    index = {name: i for i, name in enumerate(modules)}
    edges = [(index[source], index[target]) for source in modules
             for target in graph.find_modules_directly_imported_by(source)]
    sources, targets = np.array(edges, dtype=np.int64).reshape(-1, 2).T
    adjacency = csr_matrix((np.ones(len(edges)), (sources, targets)),
                           shape=(len(modules), len(modules)))
    _, component_of = connected_components(adjacency, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, component in zip(modules, component_of, strict=True):
        groups.setdefault(int(component), []).append(name)
    self_importing = [[source] for source, target in edges if source == target]
    return sorted([group for group in groups.values() if len(group) > 1] + self_importing)


@pytest.fixture
def circular_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway package whose modules a and b import each other through c, beside an
    innocent module d."""
    package = tmp_path / "circle_demo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle_demo import b\n")
    (package / "b.py").write_text("import circle_demo.c\n")
    (package / "c.py").write_text("from circle_demo.a import *\n")
    (package / "d.py").write_text("from circle_demo import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "circle_demo"
    sys.modules.pop("circle_demo", None)


def test_it_finds_a_circle_through_three_modules(circular_package: str) -> None:
    assert import_circles(circular_package) == [
        ["circle_demo.a", "circle_demo.b", "circle_demo.c"]]


def test_it_finds_no_import_circle_in_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT))
    assert import_circles(*PROJECT_PACKAGES) == []
