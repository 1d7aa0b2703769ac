"""The AUL histogram of an audit as an inline SVG (drawn on the server, no script, no CDN) and
as CSV: the bars of the AUL values and the two fitted Gaussian components as curves, both in
examples per bin (`workers.audits.aul.Histogram`).

The count axis is logarithmic (log(1 + count)) by default: on a real test set nearly every
example sits in the first few bins and the noisy component and the tail are a few examples a
bin, invisible on a linear axis. Two layouts: `WIDE` for desktops and the download, `NARROW`
for phones (its text stays readable when the chart is scaled to a 375 px screen).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape

from leaderboard.common.chart_axes import log_ticks, nice_ticks
from leaderboard.common.csv_export import csv_text

COLOURS = {"bar": "#9fb3d1", "flagged": "#e8a29c", "low": "#137333", "high": "#b3261e",
           "axis": "#5b6475", "grid": "#e3e6ec", "text": "#1d2330"}


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    left: int
    right: int
    top: int  # room for the legend
    bottom: int
    font_size: int
    legend_columns: int
    x_ticks: int
    compact: bool  # count labels as 1k, 10k


WIDE = Layout(720, 360, 64, 16, 52, 52, 13, 2, 7, False)
NARROW = Layout(360, 330, 50, 10, 86, 46, 13, 1, 4, True)


def _label(value: float, compact: bool = False) -> str:
    if compact and value >= 1000 and value == int(value):
        for size, suffix in ((10**6, "M"), (10**3, "k")):
            if value >= size and value % size == 0:
                return f"{int(value // size)}{suffix}"
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:.3g}"


def _points(xs: Sequence[float], ys: Sequence[float]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))


def _y_scale(values: list[float], scale: str, plot_h: float, bottom: float
             ) -> tuple[Callable[[float], float], list[float]]:
    """The value -> y function and the tick values of the count axis."""
    top_value = max([*values, 1.0])
    if scale == "log":
        ticks = log_ticks(top_value)
        y_max = math.log1p(ticks[-1])
        return (lambda v: bottom - math.log1p(max(v, 0.0)) / y_max * plot_h), ticks
    ticks = nice_ticks(0, top_value * 1.05, 4)
    y_max = max(ticks[-1], top_value)
    return (lambda v: bottom - v / y_max * plot_h), ticks


def histogram_svg(histogram: dict[str, Any], *, title: str = "AUL histogram",
                  layout: Layout = WIDE, scale: str = "log", ident: str = "aul") -> str:
    """A standalone SVG document (also valid inline in HTML): responsive through its viewBox
    (width 100%, the height follows). Bars of the bins where the high-loss component is the
    larger curve are drawn in the flagged colour. `ident` prefixes the element ids (two charts
    on one page)."""
    if scale not in ("log", "linear"):
        raise ValueError(f"scale must be log or linear, not {scale!r}")
    counts: list[int] = histogram["counts"]
    edges: list[float] = histogram["edges"]
    low: list[float] | None = histogram.get("low_curve")
    high: list[float] | None = histogram.get("high_curve")
    L = layout  # noqa: N806 - short, read everywhere below
    plot_w, plot_h = L.width - L.left - L.right, L.height - L.top - L.bottom
    bottom = L.top + plot_h
    x0, x1 = edges[0], edges[-1]
    sy, y_ticks = _y_scale([*counts, *(low or []), *(high or [])], scale, plot_h, bottom)

    def sx(value: float) -> float:
        return L.left + (value - x0) / (x1 - x0) * plot_w if x1 > x0 else L.left

    axis, text = COLOURS["axis"], COLOURS["text"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {L.width} {L.height}" '
        f'width="100%" role="img" aria-labelledby="{ident}-title {ident}-desc" '
        f'class="aul-histogram" font-family="system-ui, -apple-system, Segoe UI, Roboto, '
        f'sans-serif" font-size="{L.font_size}">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">Histogram of {sum(counts):,} examples\' area under the loss '
        f'curve in {len(counts)} bins ({scale} count axis), with the two fitted Gaussian '
        f'components.</desc>',
        f'<rect x="0" y="0" width="{L.width}" height="{L.height}" fill="#fff"/>',
    ]
    for tick in y_ticks:
        y = sy(tick)
        parts.append(f'<line x1="{L.left}" y1="{y:.1f}" x2="{L.left + plot_w}" y2="{y:.1f}" '
                     f'stroke="{COLOURS["grid"]}"/>')
        if scale == "log" and tick == 0:
            continue  # the axis itself; its label would sit on top of the 1
        parts.append(f'<text x="{L.left - 5}" y="{y + 4:.1f}" text-anchor="end" '
                     f'fill="{axis}">{_label(tick, L.compact)}</text>')
    parts.append('<g class="bars">')
    for i, count in enumerate(counts):
        flagged = low is not None and high is not None and high[i] > low[i]
        left, right = sx(edges[i]), sx(edges[i + 1])
        width = max(right - left - (1 if right - left > 3 else 0), 0.5)
        parts.append(f'<rect x="{left:.1f}" y="{sy(count):.1f}" width="{width:.1f}" '
                     f'height="{bottom - sy(count):.1f}" '
                     f'fill="{COLOURS["flagged" if flagged else "bar"]}"><title>'
                     f'{_label(edges[i])}–{_label(edges[i + 1])}: {count:,}</title></rect>')
    parts.append("</g>")
    centres = histogram["centres"]
    for name, curve in (("low", low), ("high", high)):
        if curve is not None:
            parts.append(f'<polyline class="curve-{name}" fill="none" stroke="{COLOURS[name]}" '
                         f'stroke-width="2.5" stroke-linejoin="round" points="'
                         f'{_points([sx(c) for c in centres], [sy(v) for v in curve])}"/>')
    parts += [
        f'<line x1="{L.left}" y1="{bottom}" x2="{L.left + plot_w}" y2="{bottom}" '
        f'stroke="{axis}"/>',
        f'<line x1="{L.left}" y1="{L.top}" x2="{L.left}" y2="{bottom}" stroke="{axis}"/>',
    ]
    for tick in nice_ticks(x0, x1, L.x_ticks):
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" '
                     f'stroke="{axis}"/>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle" '
                     f'fill="{axis}">{_label(tick)}</text>')
    y_title = "examples per bin" + (" (log scale)" if scale == "log" else "")
    if L.compact and scale == "log":
        y_title = "examples per bin (log)"
    parts += [
        f'<text x="{L.left + plot_w / 2:.1f}" y="{L.height - 8}" text-anchor="middle" '
        f'fill="{text}">area under the loss curve (summed losses)</text>',
        f'<text transform="translate({L.font_size + 1} {L.top + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" fill="{text}">{y_title}</text>',
    ]
    parts.append(_legend(layout, with_curves=low is not None))
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(layout: Layout, *, with_curves: bool) -> str:
    entries = [("rect", COLOURS["bar"], "examples"),
               ("rect", COLOURS["flagged"], "bins the high component wins")]
    if with_curves:
        entries += [("line", COLOURS["low"], "low-loss component (clean)"),
                    ("line", COLOURS["high"], "high-loss component (noisy)")]
    column_w = (layout.width - layout.left - layout.right) / layout.legend_columns
    parts = ['<g class="legend">']
    for index, (shape, colour, label) in enumerate(entries):
        row, column = divmod(index, layout.legend_columns)
        x, y = layout.left + column * column_w, 10 + row * (layout.font_size + 5)
        if shape == "rect":
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="14" height="10" fill="{colour}"/>')
        else:
            parts.append(f'<line x1="{x:.1f}" y1="{y + 5}" x2="{x + 14:.1f}" y2="{y + 5}" '
                         f'stroke="{colour}" stroke-width="2.5"/>')
        parts.append(f'<text x="{x + 20:.1f}" y="{y + 10}" fill="{COLOURS["text"]}">'
                     f'{escape(label)}</text>')
    parts.append("</g>")
    return "".join(parts)


def histogram_csv(histogram: dict[str, Any]) -> str:
    """One row per bin: its edges and centre, the count, and both components' expected
    counts (empty when no mixture was fitted)."""
    low, high = histogram.get("low_curve"), histogram.get("high_curve")
    edges = histogram["edges"]
    return csv_text(
        ["bin_low", "bin_high", "centre", "count", "low_component", "high_component"],
        ([float(edges[i]), float(edges[i + 1]), float(histogram["centres"][i]), int(count),
          None if low is None else float(low[i]), None if high is None else float(high[i])]
         for i, count in enumerate(histogram["counts"])))
