"""Every relative link of the project's markdown (README.md, CONTRIBUTING.md, CHANGELOG.md,
docs/**/*.md) leads to a file that exists, and a `#anchor` to a heading of that file.

Anchors follow GitHub's rule: the heading in lower case, punctuation but `-` and `_` dropped,
spaces made `-`."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _pages() -> list[Path]:
    top = [PROJECT_ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    return [path for path in top if path.exists()] + sorted(
        (PROJECT_ROOT / "docs").rglob("*.md"))


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def _broken_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


def test_it_finds_the_links_of_every_page() -> None:
    pages = _pages()
    assert PROJECT_ROOT / "docs" / "README.md" in pages
    assert PROJECT_ROOT / "docs" / "participants" / "troubleshooting.md" in pages
    index_links = LINK.findall((PROJECT_ROOT / "docs" / "README.md").read_text())
    assert len(index_links) > 25


def test_it_resolves_every_relative_link_to_a_file_and_a_heading() -> None:
    broken = {str(page.relative_to(PROJECT_ROOT)): _broken_links(page) for page in _pages()}

    assert {page: links for page, links in broken.items() if links} == {}


def test_it_reads_an_anchor_as_github_does() -> None:
    page = PROJECT_ROOT / "docs" / "operators" / "many-machines.md"

    assert {"files-in-object-storage", "when-a-worker-dies"} <= _anchors(page)
