"""Rows ticked on a board for a comparison, carried back in the board's URL.

The board's pick form (leaderboard/_board.html, `#compare-pick`) sends the ticked rows to
`/submissions/compare/` with the board it came from; when it holds other than two, that view
sends the visitor back to the same board page with `?picked=<id>&picked=<id>...` (an empty
`picked=` when none was ticked), and the board renders those rows still ticked and says what
to do. With JavaScript (static/leaderboard/board.js) the bar keeps at most two ticked, so only
a visitor without it, or one who sends the form with one row, gets here.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import QueryDict

PICKED_PARAM = "picked"
# More than a page holds is never ticked on one page (views.PAGE_SIZE is 100).
MAX_PICKED = 1000


def submission_id_valid(raw: str) -> bool:
    """A submission id as a URL may give it: ASCII digits, short enough for int() and a
    bigint (a 5,000-digit string is refused by int() itself)."""
    return raw.isascii() and raw.isdigit() and len(raw) <= 18


def board_picks_read(query: QueryDict) -> list[int] | None:
    """The ticked submission ids of `?picked=` (whole numbers; anything else is dropped),
    in order and once each; None when the URL has no `picked` at all."""
    if PICKED_PARAM not in query:
        return None
    return list(dict.fromkeys(int(raw) for raw in query.getlist(PICKED_PARAM)[:MAX_PICKED]
                              if submission_id_valid(raw)))


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def board_pick_message(names: Sequence[str]) -> str | None:
    """What the board says when the pick form sent other than two rows (`names`: the ticked
    rows of this page, in board order); None for exactly two."""
    if len(names) == 2:
        return None
    if not names:
        return ("Pick exactly two rows to compare: none is ticked. Tick the Pick box of two "
                "rows, then Compare.")
    if len(names) == 1:
        return (f"Pick exactly two rows to compare: only {names[0]} is ticked. Tick one more, "
                "then Compare.")
    extra = len(names) - 2
    return (f"Pick exactly two rows to compare: {len(names)} are ticked ({_listed(names)}). "
            f"Untick {'one' if extra == 1 else extra}, then Compare.")
