"""The plots pages' charts as SVG drawn on the server (inline, no script, no CDN), in the style
of leaderboard/audits/charts.py: responsive through the viewBox (width 100%, the height
follows), a `WIDE` layout for desktops and downloads and a `NARROW` one whose text stays
readable on a 375 px phone. Input: the dicts of `leaderboard.presentation.charts.selectors`.

Each point is a link to its submission's page with a <title> (a tooltip naming the model and
its figures); hovering or focusing it also shows the name beside it (CSS in the SVG).
Accuracies are drawn in percent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape

from leaderboard.common.chart_axes import nice_ticks

COLOURS = {"axis": "#5b6475", "grid": "#e3e6ec", "text": "#1d2330", "point": "#1f5fbf",
           "bar": "#7f9cc9", "diagonal": "#8a93a3", "fit": "#b3261e", "band": "#f6d3cf",
           "up": "#137333", "down": "#b3261e", "same": "#8a93a3"}
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
STYLE = ("<style>.plot-pt-name{display:none;paint-order:stroke;stroke:#fff;stroke-width:3px;"
         "font-weight:600}.plot-pt:hover .plot-pt-name,.plot-pt:focus .plot-pt-name"
         "{display:inline}.plot-pt:hover circle,.plot-pt:focus circle{stroke:#1d2330;"
         "stroke-width:2}.plot-pt line{pointer-events:none}</style>")
Link = Callable[[int], str]  # submission id -> the URL of its page


@dataclass(frozen=True)
class Layout:
    width: int
    plot_h: int
    left: int
    right: int
    font_size: int
    legend_columns: int
    ticks: int
    name_chars: int  # longer names are cut in legends (the tooltip has them whole)
    point_r: float


WIDE = Layout(640, 420, 60, 18, 13, 2, 7, 42, 4.5)
NARROW = Layout(360, 320, 50, 12, 13, 1, 4, 40, 4.0)


def fmt(value: float, digits: int = 2) -> str:
    """A fraction in percent: 0.93456 -> "93.46%"."""
    return f"{value * 100:.{digits}f}%"


def short(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _tick_label(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


class Frame:
    """A chart under construction: the legend on top, then the plot, then the x axis."""

    def __init__(self, layout: Layout, legend_rows: int, x_range: tuple[float, float],
                 y_range: tuple[float, float], *, plot_h: int | None = None) -> None:
        self.L = layout
        self.line_h = layout.font_size + 6
        self.top = 10 + legend_rows * self.line_h + (8 if legend_rows else 0)
        self.plot_w = layout.width - layout.left - layout.right
        self.plot_h = plot_h or layout.plot_h
        self.bottom = self.top + self.plot_h
        self.height = self.bottom + 2 * layout.font_size + 18
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        self.parts: list[str] = []

    def sx(self, value: float) -> float:
        span = self.x1 - self.x0
        return self.L.left + ((value - self.x0) / span * self.plot_w if span else 0.0)

    def sy(self, value: float) -> float:
        span = self.y1 - self.y0
        return self.bottom - ((value - self.y0) / span * self.plot_h if span else 0.0)

    def open(self, ident: str, css: str, title: str, desc: str) -> None:
        L = self.L  # noqa: N806 - short, read everywhere below
        self.ident = ident
        # role "group", not "img": the points are links, and an image's children are not
        # reachable by assistive technology (WAI-ARIA 1.2, children presentational)
        self.parts += [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {L.width} {self.height}" '
            f'width="100%" role="group" aria-labelledby="{ident}-title {ident}-desc" '
            f'class="{css}" font-family="{FONT}" font-size="{L.font_size}">',
            f'<title id="{ident}-title">{escape(title)}</title>',
            f'<desc id="{ident}-desc">{escape(desc)}</desc>', STYLE,
            f'<rect x="0" y="0" width="{L.width}" height="{self.height}" fill="#fff"/>',
            f'<clipPath id="{ident}-clip"><rect x="{L.left}" y="{self.top}" '
            f'width="{self.plot_w}" height="{self.plot_h}"/></clipPath>',
        ]

    @property
    def clip(self) -> str:
        return f'clip-path="url(#{self.ident}-clip)"'

    def axes(self, x_ticks: Sequence[float], y_ticks: Sequence[float], x_title: str,
             y_title: str) -> None:
        L, axis = self.L, COLOURS["axis"]  # noqa: N806
        right = L.left + self.plot_w
        for tick in y_ticks:
            y = self.sy(tick)
            self.parts.append(f'<line x1="{L.left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                              f'stroke="{COLOURS["grid"]}"/>')
            self.parts.append(f'<text x="{L.left - 5}" y="{y + 4:.1f}" text-anchor="end" '
                              f'fill="{axis}">{_tick_label(tick)}</text>')
        for tick in x_ticks:
            x = self.sx(tick)
            self.parts.append(f'<line x1="{x:.1f}" y1="{self.top}" x2="{x:.1f}" '
                              f'y2="{self.bottom}" stroke="{COLOURS["grid"]}"/>')
            self.parts.append(f'<text x="{x:.1f}" y="{self.bottom + L.font_size + 5}" '
                              f'text-anchor="middle" fill="{axis}">{_tick_label(tick)}</text>')
        self.parts += [
            f'<rect x="{L.left}" y="{self.top}" width="{self.plot_w}" height="{self.plot_h}" '
            f'fill="none" stroke="{axis}"/>',
            f'<text x="{L.left + self.plot_w / 2:.1f}" y="{self.height - 7}" '
            f'text-anchor="middle" fill="{COLOURS["text"]}">{escape(x_title)}</text>',
            f'<text transform="translate({L.font_size + 1} {self.top + self.plot_h / 2:.1f}) '
            f'rotate(-90)" text-anchor="middle" fill="{COLOURS["text"]}">'
            f'{escape(y_title)}</text>',
        ]

    def legend(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """entries: (shape, colour, label); shape is point, ring, line, dashed, band or text."""
        L = self.L  # noqa: N806
        column_w = (L.width - L.left - L.right) / L.legend_columns
        self.parts.append('<g class="legend">')
        for index, (shape, colour, label) in enumerate(entries):
            row, column = divmod(index, L.legend_columns)
            x, y = L.left + column * column_w, 10 + row * self.line_h
            mid = y + self.line_h / 2 - 2
            if shape == "point":
                self.parts.append(f'<circle cx="{x + 7:.1f}" cy="{mid:.1f}" r="{L.point_r}" '
                                  f'fill="{colour}"/>')
            elif shape == "ring":
                self.parts.append(f'<circle cx="{x + 7:.1f}" cy="{mid:.1f}" r="{L.point_r}" '
                                  f'fill="#fff" stroke="{colour}" stroke-width="2"/>')
            elif shape == "band":
                self.parts.append(f'<rect x="{x:.1f}" y="{mid - 5:.1f}" width="14" height="10" '
                                  f'fill="{colour}"/>')
            elif shape in ("line", "dashed"):
                dash = ' stroke-dasharray="5 3"' if shape == "dashed" else ""
                self.parts.append(f'<line x1="{x:.1f}" y1="{mid:.1f}" x2="{x + 14:.1f}" '
                                  f'y2="{mid:.1f}" stroke="{colour}" stroke-width="2"{dash}/>')
            offset = 0 if shape == "text" else 20
            self.parts.append(f'<text x="{x + offset:.1f}" y="{mid + 4:.1f}" '
                              f'fill="{COLOURS["text"]}">{escape(label)}</text>')
        self.parts.append("</g>")

    def point(self, *, url: str, tooltip: str, name: str, x: float, y: float, colour: str,
              x_err: tuple[float, float] | None = None,
              y_err: tuple[float, float] | None = None) -> None:
        """A linked point (data units) with optional error bars and its hover name."""
        px, py = self.sx(x), self.sy(y)
        bars = []
        if x_err is not None:
            bars.append(f'<line x1="{self.sx(x_err[0]):.1f}" y1="{py:.1f}" '
                        f'x2="{self.sx(x_err[1]):.1f}" y2="{py:.1f}"/>')
        if y_err is not None:
            bars.append(f'<line x1="{px:.1f}" y1="{self.sy(y_err[0]):.1f}" x2="{px:.1f}" '
                        f'y2="{self.sy(y_err[1]):.1f}"/>')
        right_half = px > self.L.left + self.plot_w * 0.55
        anchor, tx = ("end", px - 8) if right_half else ("start", px + 8)
        self.parts.append(
            f'<a href="{escape(url)}" class="plot-pt"><title>{escape(tooltip)}</title>'
            + (f'<g stroke="{colour}" stroke-opacity=".45">{"".join(bars)}</g>' if bars else "")
            + f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{self.L.point_r}" fill="{colour}" '
            f'fill-opacity=".85"/><text class="plot-pt-name" x="{tx:.1f}" y="{py - 7:.1f}" '
            f'text-anchor="{anchor}" fill="{COLOURS["text"]}">{escape(name)}</text></a>')

    def close(self) -> str:
        return "\n".join([*self.parts, "</svg>"])


def _range(values: Sequence[float], pad: float = 0.04, minimum: float = 1.0
           ) -> tuple[float, float]:
    low, high = min(values), max(values)
    span = max(high - low, minimum)
    middle = (low + high) / 2
    low, high = min(low, middle - span / 2), max(high, middle + span / 2)
    return low - span * pad, high + span * pad


def _diagonal(frame: Frame) -> str:
    low, high = min(frame.x0, frame.y0), max(frame.x1, frame.y1)
    return (f'<line class="diagonal" x1="{frame.sx(low):.1f}" y1="{frame.sy(low):.1f}" '
            f'x2="{frame.sx(high):.1f}" y2="{frame.sy(high):.1f}" stroke="{COLOURS["diagonal"]}" '
            f'stroke-width="1.5" stroke-dasharray="6 4" {frame.clip}/>')


def _empty(frame: Frame, text: str) -> None:
    frame.parts.append(f'<text x="{frame.L.left + frame.plot_w / 2:.1f}" '
                       f'y="{frame.top + frame.plot_h / 2:.1f}" text-anchor="middle" '
                       f'fill="{COLOURS["axis"]}">{escape(text)}</text>')


def equation(fit: dict[str, Any], y: str = "y", x: str = "x") -> str:
    """The fit as an equation: on the linear scale in the axes' units (percent), "y = 1.234 ×
    x − 29.85"; on probit or logit, of the transformed fractions, "probit(y) = 1.102 ×
    probit(x) − 0.338"."""
    intercept = fit["intercept"] * (100 if fit.get("scale", "linear") == "linear" else 1)
    sign = "−" if intercept < 0 else "+"
    digits = 2 if fit.get("scale", "linear") == "linear" else 3
    if fit.get("scale", "linear") != "linear":
        y, x = f"{fit['scale']}({y})", f"{fit['scale']}({x})"
    return f"{y} = {fit['slope']:.3f} × {x} {sign} {abs(intercept):.{digits}f}"


def _intervals(*axes: dict[str, Any]) -> str:
    """What the bars are: Clopper-Pearson intervals, but the normal approximation for an
    accuracy that is a mean over classes (docs/metrics.md §1.7), as each axis's column says."""
    means = [axis["label_set"] for axis in axes if axis.get("ci_method", "") == "normal"]
    if means:
        return (f"intervals (Clopper-Pearson; for the mean over classes on "
                f"{' and '.join(means)}, the normal approximation)")
    return "Clopper-Pearson intervals"


def scatter_svg(data: dict[str, Any], *, link: Link, layout: Layout = WIDE,
                ident: str = "scatter", title: str | None = None) -> str:
    """Original (x) against another label set's accuracy (y), in percent: every point with
    its two 95% intervals, the y = x line, and for a new test set the linear fit with its
    bootstrap band and equation."""
    points, fit = data["points"], data.get("fit")
    xs = [v * 100 for p in points for v in (p["x_low"], p["x_high"], p["x"]) if v is not None]
    ys = [v * 100 for p in points for v in (p["y_low"], p["y_high"], p["y"]) if v is not None]
    if fit:
        ys += [v * 100 for v in (*fit["band_low"], *fit["band_high"])]
    x_name, y_name = data["x"]["label_set"], data["y"]["label_set"]
    entries = [("point", COLOURS["point"], "submission, 95% intervals"),
               ("dashed", COLOURS["diagonal"], "y = x")]
    if fit:
        entries += [("line", COLOURS["fit"], f"fit: {equation(fit)}"),
                    ("band", COLOURS["band"], f"95% bootstrap band (n = {fit['n']})")]
    rows = -(-len(entries) // layout.legend_columns)
    frame = Frame(layout, rows, _range(xs or [0, 100]), _range(ys or [0, 100]))
    frame.open(ident, "plot-chart plot-scatter",
               title or f"{data['benchmark']}: {x_name} against {y_name} accuracy",
               f"{len(points)} submissions: top-1 accuracy on {x_name} (x) and {y_name} (y), "
               f"in percent, with 95% {_intervals(data['x'], data['y'])}; the dashed line is y = x"
               + (" and the red line the least-squares fit." if fit else "."))
    frame.axes(nice_ticks(frame.x0, frame.x1, layout.ticks),
               nice_ticks(frame.y0, frame.y1, layout.ticks),
               f"{x_name} accuracy (%)", f"{y_name} accuracy (%)")
    if fit:
        grid = [g * 100 for g in fit["grid"]]
        upper = [f"{frame.sx(g):.1f},{frame.sy(v * 100):.1f}"
                 for g, v in zip(grid, fit["band_high"], strict=True)]
        lower = [f"{frame.sx(g):.1f},{frame.sy(v * 100):.1f}"
                 for g, v in zip(grid, fit["band_low"], strict=True)]
        frame.parts.append(f'<polygon class="fit-band" fill="{COLOURS["band"]}" '
                           f'fill-opacity=".8" points="{" ".join(upper + lower[::-1])}" '
                           f'{frame.clip}/>')
    frame.parts.append(_diagonal(frame))
    if fit:
        # the fit at each grid x: a straight line on the linear scale, a curve on the others
        line = " ".join(f"{frame.sx(g * 100):.1f},{frame.sy(v * 100):.1f}"
                        for g, v in zip(fit["grid"], fit["line"], strict=True))
        frame.parts.append(f'<polyline class="fit-line" fill="none" points="{line}" '
                           f'stroke="{COLOURS["fit"]}" stroke-width="2" {frame.clip}/>')
    frame.legend(entries)
    frame.parts.append('<g class="points">')
    for p in points:
        tip = (f"{p['model_name']} (#{p['submission_id']})\n{x_name}: {fmt(p['x'])} "
               f"[{fmt(p['x_low'])}–{fmt(p['x_high'])}]\n{y_name}: {fmt(p['y'])} "
               f"[{fmt(p['y_low'])}–{fmt(p['y_high'])}]")
        if p.get("residual") is not None:
            tip += f"\nresidual from the fit: {p['residual'] * 100:+.2f} points"
        frame.point(url=link(p["submission_id"]), tooltip=tip, name=p["model_name"],
                    x=p["x"] * 100, y=p["y"] * 100, colour=COLOURS["point"],
                    x_err=(p["x_low"] * 100, p["x_high"] * 100),
                    y_err=(p["y_low"] * 100, p["y_high"] * 100))
    frame.parts.append("</g>")
    if not points:
        _empty(frame, "no public scored submissions yet")
    return frame.close()


def _rank_ticks(n: int, count: int) -> list[float]:
    ticks = [t for t in nice_ticks(1, max(n, 2), count) if t == int(t) and t >= 1]
    return sorted({1.0, *ticks})


def rank_svg(data: dict[str, Any], *, link: Link, layout: Layout = WIDE,
             ident: str = "ranks", title: str | None = None) -> str:
    """Rank on original (x) against rank on another label set (y), 1 = best at the origin:
    points above the diagonal moved down on that label set, below it up."""
    points, inv = data["points"], data["inversions"]
    x_name, y_name = data["x"]["label_set"], data["y"]["label_set"]
    n = max([p["rank_x"] for p in points] + [p["rank_y"] for p in points] + [2])
    entries = [("point", COLOURS["up"], f"moved up on {y_name}: {inv['up']}"),
               ("point", COLOURS["down"], f"moved down: {inv['down']}"),
               ("point", COLOURS["same"], f"same rank: {inv['same']}"),
               ("text", COLOURS["text"], f"{inv['swapped_pairs']} swapped pair"
                f"{'' if inv['swapped_pairs'] == 1 else 's'} among {inv['n']}")]
    rows = -(-len(entries) // layout.legend_columns)
    square = layout.width - layout.left - layout.right
    frame = Frame(layout, rows, (0.5, n + 0.5), (0.5, n + 0.5),
                  plot_h=min(square, layout.plot_h + 40))
    frame.open(ident, "plot-chart plot-ranks",
               title or f"{data['benchmark']}: rank on {x_name} against rank on {y_name}",
               f"{inv['n']} submissions' ranks (1 = best) on {x_name} (x) and {y_name} (y); "
               f"{inv['up']} moved up, {inv['down']} moved down, {inv['same']} kept their "
               f"rank; {inv['swapped_pairs']} pairs swap order.")
    frame.axes(_rank_ticks(n, layout.ticks), _rank_ticks(n, layout.ticks),
               f"rank on {x_name}", f"rank on {y_name}")
    frame.parts.append(_diagonal(frame))
    frame.legend(entries)
    frame.parts.append('<g class="points">')
    for p in sorted(points, key=lambda p: p["direction"] != "same"):  # moved ones on top
        tip = (f"{p['model_name']} (#{p['submission_id']})\nrank {p['rank_x']} on {x_name}, "
               f"{p['rank_y']} on {y_name} ({p['shift']:+d})\n{x_name}: {fmt(p['x'])}, "
               f"{y_name}: {fmt(p['y'])}")
        frame.point(url=link(p["submission_id"]), tooltip=tip, name=p["model_name"],
                    x=p["rank_x"], y=p["rank_y"], colour=COLOURS[p["direction"]])
    frame.parts.append("</g>")
    if not points:
        _empty(frame, "no public scored submissions yet")
    return frame.close()
