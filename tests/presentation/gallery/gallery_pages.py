"""Reading the mistake gallery and the about page back in tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Card:
    index: int
    match: str
    verdict: str = ""  # ImageNet-M: "wrong" | "unjudged"
    file_name: str = ""
    image: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # dd class -> its text


class _Gallery(HTMLParser):
    """The cards of `ol.mistake-grid`: index, match, image, and the text of each dd."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: list[Card] = []
        self.card: Card | None = None
        self.part: str | None = None
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "li" and "mistake" in a.get("class", "").split():
            self.card = Card(int(a["data-index"]), a["data-match"], a.get("data-verdict", ""))
            self.cards.append(self.card)
        elif self.card is None:
            return
        elif tag == "img":
            self.card.image = a.get("src", "")
        elif tag == "code" and not self.card.file_name and self.part is None:
            self.part, self.depth = "file", 0
        elif tag == "dd":
            self.part, self.depth = a.get("class", ""), 0
            self.card.labels[self.part] = ""
        elif self.part is not None:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.card is None:
            return
        if tag == "li" and self.part is None:
            self.card = None
        elif self.part is not None and tag in ("dd", "code") and self.depth == 0:
            self.part = None
        elif self.part is not None:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.card is None or self.part is None:
            return
        if self.part == "file":
            self.card.file_name += data
        else:
            self.card.labels[self.part] += data


def gallery_cards(html: str) -> list[Card]:
    parser = _Gallery()
    parser.feed(html)
    for card in parser.cards:
        card.labels = {k: " ".join(v.split()) for k, v in card.labels.items()}
    return parser.cards
