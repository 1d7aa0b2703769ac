"""Which array of several (an .npz archive, a JSON object) holds the predictions."""

from __future__ import annotations

from .arrays import PredictionProblem

SCORE_KEYS = ("scores", "logits", "probabilities")
ID_KEYS = ("topk", "ids", "predictions")


def choose_key(keys: list[str], where: str) -> str:
    """One array of any name, else the first recognised name (scores before ids)."""
    if len(keys) == 1:
        return keys[0]
    for key in SCORE_KEYS + ID_KEYS:
        if key in keys:
            return key
    shown = ", ".join(repr(k) for k in sorted(keys)[:20]) + (", ..." if len(keys) > 20 else "")
    raise PredictionProblem(
        "unknown_keys",
        f"{where} holds {len(keys)} entries ({shown}); expected a single array, or one named "
        f"{', '.join(SCORE_KEYS)} (scores) or {', '.join(ID_KEYS)} (class ids)")
