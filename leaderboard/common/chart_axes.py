"""Axis ticks every SVG chart shares (the leaderboard's plots in
leaderboard/presentation/charts/, the audit's AUL histogram in leaderboard/audits/charts.py):
below both domains, so neither imports the other for them."""

from __future__ import annotations

import math


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten)."""
    if not high > low:
        return [low]
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def log_ticks(top: float) -> list[float]:
    """0, 1, 10, 100, ... up to the first power of ten at or above `top`."""
    ticks = [0.0, 1.0]
    while ticks[-1] < top:
        ticks.append(ticks[-1] * 10)
    return ticks
