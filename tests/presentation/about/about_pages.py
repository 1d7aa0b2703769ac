"""Reading the about page's HTML in tests: each label set's section and its facts table."""

from __future__ import annotations

import re


def about_sections(page: str) -> dict[str, str]:
    """The HTML of each label set's section of the about page, by slug."""
    parts = re.split(r'<section class="card about-label-set[^"]*" id="ls-', page)[1:]
    return {part.split('"', 1)[0]: part.split("</section>", 1)[0] for part in parts}


def about_facts(section: str) -> dict[str, int]:
    """The counts a section's facts table states, by key."""
    return {key: int(value.replace(",", "")) for key, value in re.findall(
        r'data-fact="(\w+)"><th scope="row">[^<]*</th><td class="num">([\d,]+)</td>', section)}
