"""Reading rendered pages back in tests: the leaderboard table, fields with errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    acc: str = ""
    ci: str = ""
    rank: str = ""
    shift: str = ""
    shift_class: str = ""


@dataclass
class Row:
    submission_id: int
    rank: str = ""
    model: str = ""
    href: str = ""
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class Header:
    slug: str
    href: str = ""
    active: bool = False
    version: str = ""
    version_title: str = ""


class _LeaderboardParser(HTMLParser):
    """Collects `table#leaderboard`: header links and, per row, the text of each cell part."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self.headers: list[Header] = []
        self.in_table = False
        self.row: Row | None = None
        self.header: Header | None = None
        self.cell: Cell | None = None
        self.part: str | None = None  # which text is being collected
        self.depth = 0  # spans open inside the current part

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "table" and a.get("id") == "leaderboard":
            self.in_table = True
        if not self.in_table:
            return
        if tag == "th" and "col-score" in classes and self.row is None:
            self.header = Header(a["data-label-set"], active="active" in classes)
            self.headers.append(self.header)
        elif tag == "a" and self.header is not None:
            self.header.href = a.get("href", "")
        elif tag == "span" and self.header is not None and "version" in classes:
            self.header.version_title = a.get("title", "")
            self.part, self.depth = "version", 1
        elif tag == "tr" and "data-submission" in a:
            self.row = Row(int(a["data-submission"]))
            self.rows.append(self.row)
        elif self.row is not None and tag == "td" and "col-rank" in classes:
            self.part, self.depth = "rank", 0
        elif self.row is not None and tag == "th" and "col-model" in classes:
            self.part, self.depth = "model", 0
        elif self.row is not None and tag == "a" and self.part == "model":
            self.row.href = a.get("href", "")
        elif self.row is not None and tag == "span" and "owner" in classes:
            self.part = None
        elif self.row is not None and tag == "td" and "col-score" in classes:
            self.cell = Cell()
            self.row.cells[a["data-label-set"]] = self.cell
        elif self.cell is not None and tag == "span":
            for name in ("acc", "ci", "rank", "shift"):
                if name in classes:
                    self.part, self.depth = name, 1
                    if name == "shift":
                        self.cell.shift_class = next(c for c in classes if c != "shift")
                    return
            if self.part:
                self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if not self.in_table:
            return
        if tag == "table":
            self.in_table = False
        elif tag == "th" and self.header is not None:
            self.header = None
            self.part = None
        elif tag == "tr":
            self.row = None
        elif tag == "td":
            self.cell, self.part = None, None
        elif tag == "th" and self.part == "model":
            self.part = None
        elif tag == "span" and self.part and self.depth:
            self.depth -= 1
            if self.depth == 0:
                self.part = None

    def handle_data(self, data: str) -> None:
        if self.part == "version" and self.header is not None:
            self.header.version += data.strip()
        elif self.part == "rank" and self.row is not None and self.cell is None:
            self.row.rank += data.strip()
        elif self.part == "model" and self.row is not None:
            self.row.model += data.strip()
        elif self.part and self.cell is not None:
            setattr(self.cell, self.part, getattr(self.cell, self.part) + data.strip())


def leaderboard_table(html: str) -> tuple[list[Header], list[Row]]:
    parser = _LeaderboardParser()
    parser.feed(html)
    return parser.headers, parser.rows


class _FieldErrors(HTMLParser):
    """Names of the form fields marked with errors (`.field.has-error[data-field]`)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "has-error" in a.get("class", "").split():
            self.names.append(a.get("data-field", ""))


def fields_with_errors(html: str) -> list[str]:
    parser = _FieldErrors()
    parser.feed(html)
    return parser.names


class _ScoreTables(HTMLParser):
    """`section#score-<slug>` -> its metric rows, each a list of cell texts; plus the version
    line of each section."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.versions: dict[str, str] = {}
        self.section: str | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.in_version = False
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and a.get("id", "").startswith("score-"):
            self.section = a["id"][len("score-"):]
            self.tables[self.section] = []
            self.versions[self.section] = ""
        elif self.section is None:
            return
        elif tag == "p" and "version" in a.get("class", "").split():
            self.in_version = True
        elif tag == "tbody":
            self.in_body = True
        elif tag == "tr" and self.in_body:
            self.row = []
            self.tables[self.section].append(self.row)
        elif tag in ("th", "td") and self.row is not None:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.section = None
        elif tag == "p":
            self.in_version = False
        elif tag == "tbody":
            self.in_body = False
        elif tag in ("th", "td") and self.row is not None and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr":
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        elif self.in_version and self.section is not None:
            self.versions[self.section] += data


def score_tables(html: str) -> tuple[dict[str, list[list[str]]], dict[str, str]]:
    parser = _ScoreTables()
    parser.feed(html)
    return parser.tables, {k: " ".join(v.split()) for k, v in parser.versions.items()}


@dataclass
class HomeCard:
    """One benchmark's card on the home page, its texts with spaces collapsed."""

    slug: str
    shown: bool  # not `hidden` (by the search, the modality filter or the page's script)
    modality: str = ""  # data-modality
    name: str = ""
    kind: str = ""  # the line under the name: modality, classes, slug
    test_sets: str = ""
    facts: dict[str, str] = field(default_factory=dict)  # each <dt>'s text -> its <dd>'s
    links: dict[str, str] = field(default_factory=dict)  # each link's text -> its href


_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "source", "track", "wbr"})


class _HomeCards(HTMLParser):
    """Collects each `li.benchmark` of the home page's grid."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: dict[str, HomeCard] = {}
        self.card: HomeCard | None = None
        self.depth = 0
        self.card_depth = 0
        # (what, depth it opened at, href, text so far) of each text being collected
        self.open: list[tuple[str, int, str, list[str]]] = []
        self.fact = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag in _VOID:
            return
        self.depth += 1
        if tag == "li" and "benchmark" in classes:
            self.card = HomeCard(a["id"].removeprefix("benchmark-"), "hidden" not in a,
                                 a.get("data-modality", ""))
            self.cards[self.card.slug] = self.card
            self.card_depth = self.depth
            return
        if self.card is None:
            return
        what = ("name" if tag == "h2" else "kind" if "benchmark-kind" in classes
                else "test_sets" if "test-sets" in classes else tag if tag in ("dt", "dd", "a")
                else "")
        if what:
            self.open.append((what, self.depth, a.get("href", ""), []))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if self.open and self.open[-1][1] == self.depth:
            what, _, href, parts = self.open.pop()
            text = " ".join("".join(parts).split())
            assert self.card is not None
            if what == "dt":
                self.fact = text
            elif what == "dd":
                self.card.facts[self.fact] = text
            elif what == "a":
                self.card.links[text] = href
            else:
                setattr(self.card, what, text)
        if self.card is not None and self.depth == self.card_depth:
            self.card = None
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        for _, _, _, parts in self.open:
            parts.append(data)


def home_cards(html: str) -> dict[str, HomeCard]:
    """The home page's benchmark cards by slug, in the page's order."""
    parser = _HomeCards()
    parser.feed(html)
    return parser.cards
