"""The noise-prevalence chart (docs/metrics.md §9; Northcutt et al. 2021, appendix E) as SVG,
in the style of the scatter charts (scatter.py): one colour per submission, corrected labels
solid, original labels dashed, and a marker (with a numbered tooltip) where two curves cross."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.utils.html import escape

from leaderboard.common.chart_axes import nice_ticks
from leaderboard.presentation.charts.scatter import (
    COLOURS,
    WIDE,
    Frame,
    Layout,
    Link,
    _range,
    fmt,
    short,
)

# Okabe-Ito, with a darker yellow that reads on white
SERIES = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#1d2330",
          "#8c6d1f")


def series_colour(index: int) -> str:
    return SERIES[index % len(SERIES)]


def auto_max_prevalence(data: dict[str, Any]) -> float:
    """Where the x axis ends by default: past the last crossing (a third more, rounded up to a
    1-2-5 step, at least 5%), or at 100% when no curves cross. The curves are straight lines
    in prevalence, so nothing is hidden that the table of crossings does not list."""
    if not data["crossings"]:
        return 1.0
    last = max(c["prevalence"] for c in data["crossings"]) * 100 * 4 / 3
    for step in (5, 10, 20, 25, 50, 100):
        if last <= step:
            return step / 100
    return 1.0


def noise_svg(data: dict[str, Any], *, link: Link, layout: Layout = WIDE,
              ident: str = "noise", title: str | None = None,
              max_prevalence: float | None = None) -> str:
    """Accuracy (y, %) against noise prevalence (x, %) of each chosen submission, with the x
    axis from 0 to `max_prevalence` (default: `auto_max_prevalence`)."""
    subs, crossings = data["submissions"], data["crossings"]
    top = auto_max_prevalence(data) if max_prevalence is None else max_prevalence
    prevalence = [v * 100 for v in data["prevalence"]]
    entries = [("line", series_colour(i), short(s["model_name"], layout.name_chars))
               for i, s in enumerate(subs)]
    entries += [("line", COLOURS["axis"], "corrected labels"),
                ("dashed", COLOURS["axis"], "original labels"),
                ("ring", COLOURS["text"], f"curves cross ({len(crossings)})")]
    values = []  # the curves over the visible range (straight lines: ends suffice)
    for s in subs:
        for key in ("original", "corrected"):
            end = float(np.interp(top * 100, prevalence, s[key])) if prevalence else 0.0
            values += [v * 100 for n, v in zip(prevalence, s[key], strict=True)
                       if n <= top * 100] + [end * 100]
    rows = -(-len(entries) // layout.legend_columns)
    frame = Frame(layout, rows, (0.0, top * 100), _range(values or [0, 100], minimum=2.0))
    n_c, n_b = data.get("n_c"), data.get("n_b")
    frame.open(ident, "plot-chart plot-noise",
               title or f"{data['benchmark']}: accuracy against noise prevalence",
               f"Accuracy of {len(subs)} submissions on original (dashed) and corrected (solid) "
               f"labels as examples of B (|B| = {n_b}) are removed and the share of the "
               f"correctable set C (|C| = {n_c}) grows (x axis to {top:.0%}); "
               f"{len(crossings)} crossings marked.")
    frame.axes(nice_ticks(0, top * 100, layout.ticks + 1 if layout.ticks < 6 else 10),
               nice_ticks(frame.y0, frame.y1, layout.ticks),
               "noise prevalence (%)", "accuracy (%)")
    frame.legend(entries)
    frame.parts.append('<g class="curves">')
    xs = [frame.sx(v) for v in prevalence]
    for i, s in enumerate(subs):
        for key, dash in (("original", ' stroke-dasharray="6 4"'), ("corrected", "")):
            pts = " ".join(f"{x:.1f},{frame.sy(v * 100):.1f}"
                           for x, v in zip(xs, s[key], strict=True))
            frame.parts.append(
                f'<a href="{escape(link(s["submission_id"]))}"><polyline class="curve-{key}" '
                f'fill="none" stroke="{series_colour(i)}" stroke-width="2"{dash} '
                f'stroke-linejoin="round" points="{pts}" {frame.clip}><title>'
                f'{escape(s["model_name"])} (#{s["submission_id"]}), {key} labels</title>'
                f'</polyline></a>')
    frame.parts.append('</g><g class="crossings">')
    names = {s["submission_id"]: s["model_name"] for s in subs}
    for number, c in enumerate(crossings, start=1):
        if c["prevalence"] > top:
            continue  # past the end of the x axis; the table lists it
        tip = (f"{number}. {names[c['first']]} and {names[c['second']]} cross on "
               f"{c['labels']} labels at noise prevalence {fmt(c['prevalence'])} "
               f"(x = {c['x']:.4f}), accuracy {fmt(c['accuracy'])}")
        frame.parts.append(
            f'<circle class="crossing" cx="{frame.sx(c["prevalence"] * 100):.1f}" '
            f'cy="{frame.sy(c["accuracy"] * 100):.1f}" r="{layout.point_r + 0.5}" fill="#fff" '
            f'stroke="{COLOURS["text"]}" stroke-width="2"><title>{escape(tip)}</title>'
            f'</circle>')
    frame.parts.append("</g>")
    if not subs:
        frame.parts.append(f'<text x="{layout.left + frame.plot_w / 2:.1f}" '
                           f'y="{frame.top + frame.plot_h / 2:.1f}" text-anchor="middle" '
                           f'fill="{COLOURS["axis"]}">no submissions with a corrected score'
                           f'</text>')
    return frame.close()
