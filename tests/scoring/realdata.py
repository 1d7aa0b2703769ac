"""Where the real data lives for the scoring tests, and the 30 published CIFAR-10 models."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PREDICTIONS_DIR = DATA_DIR / "cifar10" / "model_predictions"
SUFFIX = "_predictions.json"
MODELS = sorted(p.name[: -len(SUFFIX)]
                for p in (PREDICTIONS_DIR / "original_predictions").glob(f"*{SUFFIX}"))
