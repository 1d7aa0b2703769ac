"""Template filters and tags of the HTML pages: percentages, intervals, rank shifts, roles."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from leaderboard.catalog.hosting.selectors import user_hosts_any_team
from leaderboard.catalog.teams.permissions import user_is_maintainer

register = template.Library()

MISSING = "—"


def percent(value: float | None, digits: int = 2) -> str:
    """0.93574 -> "93.57" (no % sign); None -> "—". Tests compute expectations with this."""
    if value is None:
        return MISSING
    return f"{value * 100:.{digits}f}"


@register.filter
def pct(value: float | None) -> str:
    """An accuracy as a percentage with two decimals: 0.9357 -> "93.57%"."""
    text = percent(value)
    return text if value is None else f"{text}%"


@register.filter
def ci(record: Any) -> str:
    """A record's 95% interval in percent: "93.08–94.04"; "" when it has none."""
    if not isinstance(record, dict):
        record = {"ci_low": getattr(record, "ci_low", None),
                  "ci_high": getattr(record, "ci_high", None)}
    low, high = record.get("ci_low"), record.get("ci_high")
    if low is None or high is None:
        return ""
    return f"{percent(low)}–{percent(high)}"


@register.filter
def count(record: Any) -> str:
    """A record's count: "9,357 / 10,000"."""
    if not isinstance(record, dict):
        record = {"correct": getattr(record, "correct", None),
                  "total": getattr(record, "total", None)}
    correct, total = record.get("correct"), record.get("total")
    if correct is None or not total:
        return ""
    return f"{correct:,} / {total:,}"


@register.filter
def breakable(value: str) -> SafeString:
    """Escaped text with a line-break opportunity after each _ - . / (model names such as
    shake_shake_26_2x64d_SSI wrap at their parts in a narrow column, not mid-word)."""
    return mark_safe(re.sub(r"([_\-./])", r"\1<wbr>", str(escape(value))))


@register.filter
def thousands(value: int | None) -> str:
    """10000 -> "10,000"."""
    return "" if value is None else f"{value:,}"


@register.filter
def shorthash(value: str | None) -> str:
    return (value or "")[:12]


@register.filter
def get(mapping: Any, key: str) -> Any:
    """mapping[key] in a template (slugs contain dots and dashes); None when missing."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def shift(value: int | None) -> str:
    """A rank shift as an arrow and a number: ▲3 (moved up), ▼2 (down), – (unchanged)."""
    if value is None:
        return ""
    if value > 0:
        return f"▲{value}"
    if value < 0:
        return f"▼{-value}"
    return "–"


@register.filter
def shift_class(value: int | None) -> str:
    if not value:
        return "shift-same"
    return "shift-up" if value > 0 else "shift-down"


@register.filter
def is_reviewer(user: Any) -> bool:
    """Whether the nav shows the review queue (the members of a host team, superusers:
    docs/hosts/teams.md)."""
    return user_is_maintainer(user=user)


@register.filter
def is_host(user: Any) -> bool:
    """Whether the nav shows the bundles (the hosts and admins of a host team, superusers)."""
    return user_hosts_any_team(user=user)
