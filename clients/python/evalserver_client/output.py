"""What the commands print: tables for people, one JSON document with --json, upload progress
on stderr."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO


def emit_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


def percent(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to width: the first `left` ones aligned left, the others right."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def scores_table(scores: dict[str, Any]) -> str:
    rows = []
    for slug, s in scores.items():
        ci = f"[{percent(s.get('ci_low'))}, {percent(s.get('ci_high'))}]"
        rows.append([slug, percent(s.get("accuracy")), f"{s.get('correct')}/{s.get('total')}",
                     ci if s.get("ci_low") is not None else "-"])
    return table(["label set", "accuracy", "correct/total", "95% CI"], rows)


def releases_table(releases: list[dict[str, Any]]) -> str:
    """A hidden label set's released figures: the only figures of it the server gives."""
    rows = [[r["label_set"], percent(r.get("released")), percent(r.get("best")), r["mechanism"]]
            for r in releases]
    return table(["hidden label set", "released", "your best", "mechanism"], rows)


def interval(cell: dict[str, Any]) -> str:
    """A cell's 95% interval, `[94.70, 95.62]` (percent), or "" when it has none."""
    if cell.get("ci_low") is None or cell.get("ci_high") is None:
        return ""
    return f"[{100 * cell['ci_low']:.2f}, {100 * cell['ci_high']:.2f}]"


def leaderboard_heading(board: dict[str, Any]) -> str:
    """What the table's cells mean: the sort column's interval, the shifts, rank (UB)."""
    sort = board["sort"]
    column: dict[str, Any] = next((c for c in board["columns"] if c["slug"] == sort), {})
    shifts_from = column.get("shift_from") or sort
    return (f"{board['benchmark']} leaderboard sorted by {sort} (95% intervals); "
            f"(+n) = places gained against {shifts_from}\n"
            f"rank (UB) = 1 + the rows significantly better on {sort} (McNemar, p < 0.05; "
            "- until computed)")


def leaderboard_table(board: dict[str, Any]) -> str:
    """Per row: rank and rank (UB) on the sort label set, the model, its submitter and id, the
    sort column's accuracy and 95% interval, then every column's accuracy and rank shift."""
    sort = board["sort"]
    slugs = [c["slug"] for c in board["columns"]]
    rows = []
    for row in board["rows"]:
        cells = []
        for slug in slugs:
            shift = row["rank_shift"].get(slug, 0)
            arrow = f" ({'+' if shift > 0 else ''}{shift})" if shift else ""
            cell = row["scores"].get(slug, {})
            shown = percent(cell.get("accuracy")) + arrow
            if slug == sort and interval(cell):
                shown += " " + interval(cell)
            cells.append(shown)
        rank, rank_ub = row["ranks"].get(sort), row.get("rank_ub")
        rows.append([str(rank or "-"), "-" if rank_ub is None else str(rank_ub),
                     row["model_name"], row.get("owner", ""), str(row["submission_id"]),
                     *cells])
    return table(["rank", "rank (UB)", "model", "submitter", "id", *slugs], rows, left=4)


def compare_table(body: dict[str, Any]) -> str:
    """Per label set: both accuracies (rank), the difference, the discordant counts, p."""
    def side(figures: dict[str, Any]) -> str:
        rank = figures.get("rank")
        where = "" if rank is None else f" #{rank}" + ("" if figures["on_board"] else "*")
        return percent(figures.get("accuracy")) + where

    rows = []
    for c in body["label_sets"]:
        diff = c.get("difference")
        p = c.get("p_value")
        rows.append([c["slug"], side(c["first"]), side(c["second"]),
                     "-" if diff is None else f"{100 * diff:+.2f} pt",
                     "-" if c.get("only_first") is None
                     else f"{c['only_first']} / {c['only_second']}",
                     "-" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")])
    return table(["label set", f"#{body['first']['id']}", f"#{body['second']['id']}",
                  "difference", "only first / only second", "McNemar p"], rows)


def benchmarks_table(benchmarks: list[dict[str, Any]]) -> str:
    """One line a benchmark: its classes, main example set and how many sets it has (the API's
    name for example sets: image sets); `benchmark_detail` lists them."""
    rows = []
    for b in benchmarks:
        main = next((s for s in b["image_sets"] if s["slug"] == b["main_image_set"]),
                    {"slug": b["main_image_set"], "size": None})
        rows.append([b["slug"], b["name"], f"{main['slug']} ({main['size']})",
                     str(b["num_classes"]), str(len(b["image_sets"])),
                     str(len(b["label_sets"]))])
    return table(["benchmark", "name", "main example set (examples)", "classes",
                  "example sets", "label sets"], rows, left=3)


def benchmark_detail(b: dict[str, Any]) -> str:
    """A benchmark's example sets (a submission's files) and label sets (its columns)."""
    sets = [[s["slug"], "required" if s["slug"] == b["main_image_set"] else "optional",
             str(s["size"])] for s in b["image_sets"]]
    labels = [[s["slug"], s["image_set"], s["kind"],
               "-" if s.get("version") is None else f"v{s['version']}",
               (s.get("version_hash") or "-")[:12]] for s in b["label_sets"]]
    return "\n".join([
        f"{b['slug']}: {b['name']}, {b['num_classes']} classes",
        "", table(["example set", "in a submission", "examples"], sets, left=2),
        "", table(["label set", "example set", "kind", "version", "hash"], labels, left=5)])


def minutes(stamp: str | None) -> str:
    """An API time (ISO 8601, with microseconds and its offset) as people read it:
    "2026-11-29 12:40 UTC"; as it came when it is not one."""
    if not stamp:
        return ""
    try:
        when = datetime.fromisoformat(stamp)  # 3.11 reads a "Z" too
    except ValueError:
        return stamp
    if when.utcoffset() is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M") + (" UTC" if when.tzinfo else "")


def submissions_table(submissions: list[dict[str, Any]]) -> str:
    rows = [[str(s["id"]), s["benchmark"], s["model_name"],
             s["status"] + (" (withdrawn)" if s.get("withdrawn") else ""),
             percent((s.get("scores") or {}).get("original", {}).get("accuracy")),
             minutes(s.get("created"))] for s in submissions]
    return table(["id", "benchmark", "model", "status", "original", "created"], rows, left=4)


def describe(sub: dict[str, Any]) -> str:
    withdrawn = ""
    if sub.get("withdrawn"):
        reason = sub.get("withdrawn_reason")
        withdrawn = ", withdrawn" + (f" ({reason})" if reason else "")
    return (f"submission {sub['id']}: {sub['model_name']} on {sub['benchmark']} - "
            f"{sub['status']}{withdrawn}")


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000  # type: ignore[assignment]
    return ""


class UploadProgress:
    """`upload:  42% (4.2 MB of 10.0 MB)` rewritten in place on stderr, once per percent."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream, self.shown = stream, -1

    def __call__(self, sent: int, total: int) -> None:
        share = 100 * sent // total if total else 100
        if share == self.shown:
            return
        self.shown = share
        end = "\n" if sent >= total else ""
        self.stream.write(f"\rupload: {share:3d}% ({_size(sent)} of {_size(total)}){end}")
        self.stream.flush()
