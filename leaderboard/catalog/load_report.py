"""What a catalog load did, line by line (leaderboard/catalog/bundle_loading.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from leaderboard.catalog.services import Change


@dataclass
class CatalogLoadReport:
    """What a load did, line by line; `echo` sees each line as it comes."""

    echo: Callable[[str, str], None] | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    created: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    warnings: int = 0
    slug: str = ""  # benchmark_bundle_add: the slug of the benchmark it added

    def add(self, level: str, text: str) -> None:
        if level == "error":
            self.errors += 1
        elif level == "warning":
            self.warnings += 1
        self.lines.append((level, text))
        if self.echo is not None:
            self.echo(level, text)

    def count(self, entity: str, change: Change) -> None:
        if change is Change.CREATED:
            self.created[entity] += 1
        elif change is Change.UPDATED:
            self.updated[entity] += 1

    def merge(self, other: CatalogLoadReport) -> None:
        """Take another report's lines (echoed now) and counts."""
        for level, text in other.lines:
            self.add(level, text)
        self.created.update(other.created)
        self.updated.update(other.updated)

    @property
    def changed_anything(self) -> bool:
        return bool(+self.created or +self.updated)
