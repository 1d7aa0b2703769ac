"""The plots page of a benchmark and the downloads of each chart (SVG, and the data behind it
as CSV and JSON).

`/benchmarks/<slug>/plots/?new=<new test set>&labels=<label set>&ids=1,2,3` shows the
new-test-set scatter with its linear fit (docs/metrics.md §8), the label-set scatter and the
rank-vs-rank view, and the noise-prevalence curves (docs/metrics.md §9) of the chosen
submissions (default: the top 5 on corrected labels). The data comes from
`selectors` (cached per leaderboard generation); the charts are drawn by `scatter` and `noise`
(all in leaderboard/presentation/charts/).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import (
    benchmark_get,
    label_set_class_mean_slugs,
    label_set_hidden_count,
    label_set_reference_slug,
)
from leaderboard.presentation.caching import cached_render, source_format
from leaderboard.presentation.charts import selectors as selectors_plots
from leaderboard.presentation.charts.exports import band_csv, crossings_csv, curves_csv, points_csv
from leaderboard.presentation.charts.noise import auto_max_prevalence, noise_svg
from leaderboard.presentation.charts.scatter import (
    NARROW,
    WIDE,
    Layout,
    Link,
    rank_svg,
    scatter_svg,
)
from leaderboard.presentation.charts.selectors import PlotQueryError
from workers.scoring.stats import FIT_SCALES

Draw = Callable[..., str]
# What a cached chart is drawn from: its data and the drawing (the format in its key).
PLOT_SVG_MODULES = (*selectors_plots.PLOT_DATA_MODULES, "leaderboard.presentation.charts.scatter",
                    "leaderboard.presentation.charts.noise", "leaderboard.common.chart_axes")
SVG = {"new-test-set": scatter_svg, "label-set": scatter_svg, "ranks": rank_svg}


def _benchmark(slug: str) -> Benchmark:
    try:
        return benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None


def _link(request: HttpRequest, *, absolute: bool = False) -> Link:
    def link(submission_id: int) -> str:
        url = reverse("submission_detail", args=[submission_id])
        return request.build_absolute_uri(url) if absolute else url

    return link


def _data(benchmark: Benchmark, kind: str, label_set: str, scale: str,
          choices: selectors_plots.PlotChoices | None = None) -> dict[str, Any]:
    if kind == "new-test-set":
        return selectors_plots.new_test_set_plot(benchmark=benchmark, label_set=label_set,
                                                 scale=scale, choices=choices)
    return selectors_plots.label_set_plot(benchmark=benchmark, label_set=label_set,
                                          choices=choices)


def _scale(request: HttpRequest) -> str:
    """The new-test-set fit's scale (`?scale=linear|probit|logit`; default linear)."""
    return request.GET.get("scale") or "linear"


def _both(benchmark: Benchmark, draw: Draw, data: dict[str, Any], link: Link, ident: str,
          key: tuple[object, ...]) -> dict[str, Any]:
    """The chart in both layouts, kept in the cache under `key` (everything the drawing
    depends on besides the generation, read with the benchmark before `data` was); built from
    numbers, its text escaped: safe to inline."""
    layouts: tuple[tuple[str, Layout], ...] = (("svg", WIDE), ("svg_narrow", NARROW))
    return {name: mark_safe(cached_render(
        ("plots-svg", source_format(modules=PLOT_SVG_MODULES), benchmark.pk,
         benchmark.leaderboard_generation, ident, name, *key),
        partial(draw, data, link=link, layout=layout, ident=f"{ident}-{name}")))
        for name, layout in layouts}


def _downloads(benchmark: Benchmark, kind: str, label_set: str,
               scale: str) -> dict[str, str]:
    data_kind = "label-set" if kind == "ranks" else kind
    query = f"?scale={scale}" if kind == "new-test-set" and scale != "linear" else ""
    return {fmt: reverse("plot_download", kwargs={
        "slug": benchmark.slug, "kind": kind if fmt == "svg" else data_kind,
        "label_set": label_set, "fmt": fmt}) + query for fmt in ("svg", "csv", "json")}


def _chosen(request: HttpRequest, name: str, choices: list[tuple[str, str]]) -> str | None:
    return request.GET.get(name) or (choices[0][0] if choices else None)


def _scatter_sections(request: HttpRequest, benchmark: Benchmark,
                      choices: selectors_plots.PlotChoices) -> dict[str, Any]:
    link = _link(request)
    out: dict[str, Any] = {"new": _chosen(request, "new", choices.new_test_sets),
                           "labels": _chosen(request, "labels", choices.label_sets),
                           "scale": _scale(request), "scales": FIT_SCALES}
    # the sections: a new test set's accuracy against the reference's with its fit
    # (`new_fit`), another label set's against the reference's, and their ranks
    specs = (("new_fit", "new-test-set", out["new"]),
             ("label_set", "label-set", out["labels"]), ("ranks", "ranks", out["labels"]))
    for key, kind, slug in specs:
        if slug is None:
            out[key] = None
            continue
        try:
            data = _data(benchmark, kind, slug, out["scale"], choices)
        except PlotQueryError as exc:
            out[key] = {"error": exc.message}
            continue
        out[key] = {"data": data,
                    **_both(benchmark, SVG[kind], data, link, kind, (slug, out["scale"])),
                    "downloads": _downloads(benchmark, kind, slug, out["scale"])}
    if isinstance(out["new_fit"], dict) and "data" in out["new_fit"]:
        points = out["new_fit"]["data"]["points"]  # most effectively robust first
        out["new_fit"]["table"] = sorted(points, key=lambda p: -p.get("residual", 0.0))
    return out


def _max_prevalence(request: HttpRequest) -> float | None:
    """`?nmax=<percent>`: where the noise chart's x axis ends (1 to 100); default automatic."""
    raw = request.GET.get("nmax", "")
    return int(raw) / 100 if raw.isdigit() and 1 <= int(raw) <= 100 else None


def _noise_section(request: HttpRequest, benchmark: Benchmark,
                   choices: selectors_plots.PlotChoices) -> dict[str, Any]:
    raw = request.GET.get("ids", "")
    try:
        ids = selectors_plots.parse_ids(raw)
        data = selectors_plots.noise_prevalence_plot(benchmark=benchmark, ids=ids,
                                                     choices=choices)
    except PlotQueryError as exc:
        return {"error": exc.message, "ids": raw}
    params: dict[str, str] = {"ids": ",".join(map(str, ids))} if ids else {}
    query = "?" + urlencode(params) if params else ""
    names = {s["submission_id"]: s["model_name"] for s in data["submissions"]}
    crossings = []
    for number, c in enumerate(data["crossings"], start=1):
        after = c["second"] if c["ahead_before"] == c["first"] else c["first"]
        crossings.append({**c, "number": number, "ahead_before_name": names[c["ahead_before"]],
                          "ahead_after_name": names[after]})
    top = _max_prevalence(request)
    shown = auto_max_prevalence(data) if top is None else top
    base = {fmt: reverse("noise_prevalence_download", kwargs={"slug": benchmark.slug,
                                                                 "fmt": fmt})
            for fmt in ("svg", "csv", "json")}
    zoom: dict[str, str] = {k: str(v) for k, v in request.GET.items() if k != "nmax"}
    return {"data": data, **_both(benchmark, partial(noise_svg, max_prevalence=top), data,
                                  _link(request), "noise", (params.get("ids"), top)),
            "max_prevalence": shown, "crossings": crossings,
            # the other end of the x axis: everything (100%), or back to the automatic range
            "zoom_url": "?" + urlencode({**zoom, "nmax": "100"} if shown < 1 else zoom),
            "downloads": {
                "svg": base["svg"] + "?" + urlencode({**params, "nmax": str(round(shown * 100))}),
                "csv": base["csv"] + query, "json": base["json"] + query,
                "crossings_csv": base["csv"] + "?" + urlencode({**params, "part": "crossings"})}}


@require_GET
def plots(request: HttpRequest, slug: str) -> HttpResponse:
    benchmark = _benchmark(slug)
    choices = selectors_plots.plot_choices(benchmark=benchmark)
    context: dict[str, Any] = {"benchmark": benchmark, "choices": choices,
                               **_scatter_sections(request, benchmark, choices)}
    # the page's choices handed to each section: read once, not once a chart
    context["noise"] = _noise_section(request, benchmark, choices) if choices.noise else None
    # hidden label sets have no plots: the page says so rather than "only original labels"
    context["hidden_label_sets"] = label_set_hidden_count(benchmark=benchmark)
    context["class_mean_label_sets"] = label_set_class_mean_slugs(benchmark=benchmark)
    # the scatter's x when it is not a private part's public part (docs/families.md)
    context["reference"] = label_set_reference_slug(benchmark_id=benchmark.pk)
    failed = any(isinstance(context.get(k), dict) and "error" in context[k]
                 for k in ("new_fit", "label_set", "noise"))
    return render(request, "leaderboard/plots_index.html", context, status=400 if failed else 200)


def _error(exc: PlotQueryError) -> JsonResponse:
    return JsonResponse({"error": {"code": exc.code, "message": exc.message,
                                   "field": exc.field}}, status=400)


def _file(body: str, content_type: str, name: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _svg_body(svg: str) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg


@require_GET
def plot_download(request: HttpRequest, slug: str, kind: str, label_set: str,
                  fmt: str) -> HttpResponse:
    """One scatter's SVG, or its data as CSV (`?part=band`: the fit and its band) or JSON;
    `?scale=probit|logit` fits a new test set on that scale."""
    benchmark = _benchmark(slug)
    try:
        data = _data(benchmark, kind, label_set, _scale(request))
    except PlotQueryError as exc:
        return _error(exc)
    name = f"{benchmark.slug}-{kind}-{label_set}"
    if kind == "new-test-set" and _scale(request) != "linear":
        name += f"-{_scale(request)}"
    if fmt == "json":
        return JsonResponse(data)
    if fmt == "csv":
        if request.GET.get("part") == "band" and kind == "new-test-set":
            return _file(band_csv(data), "text/csv", f"{name}-fit-band.csv")
        return _file(points_csv(data), "text/csv", f"{name}.csv")
    svg = SVG[kind](data, link=_link(request, absolute=True), layout=WIDE, ident=kind)
    return _file(_svg_body(svg), "image/svg+xml", f"{name}.svg")


@require_GET
def noise_prevalence_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    """The noise-prevalence chart (SVG) or its data: CSV of the curves (`?part=crossings`:
    the crossings) or JSON; `?ids=1,2,3` as on the page."""
    benchmark = _benchmark(slug)
    try:
        ids = selectors_plots.parse_ids(request.GET.get("ids"))
        data = selectors_plots.noise_prevalence_plot(benchmark=benchmark, ids=ids)
    except PlotQueryError as exc:
        return _error(exc)
    name = f"{benchmark.slug}-noise-prevalence"
    if fmt == "json":
        return JsonResponse(data)
    if fmt == "csv":
        if request.GET.get("part") == "crossings":
            return _file(crossings_csv(data), "text/csv", f"{name}-crossings.csv")
        return _file(curves_csv(data), "text/csv", f"{name}.csv")
    svg = noise_svg(data, link=_link(request, absolute=True), layout=WIDE,
                    max_prevalence=_max_prevalence(request))
    return _file(_svg_body(svg), "image/svg+xml", f"{name}.svg")
