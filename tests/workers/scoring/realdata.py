"""Where the real data lives for the scoring tests, and the 30 published CIFAR-10 models."""

from __future__ import annotations

from tests.helpers import PROJECT_ROOT

DATA_DIR = PROJECT_ROOT.parent / "shared" / "data"
PREDICTIONS_DIR = DATA_DIR / "cifar10" / "model_predictions"
SUFFIX = "_predictions.json"
MODELS = sorted(p.name[: -len(SUFFIX)]
                for p in (PREDICTIONS_DIR / "original_predictions").glob(f"*{SUFFIX}"))
# A moved data directory must fail here, not leave every test that loops over MODELS empty.
assert len(MODELS) == 30, f"expected the 30 published CIFAR-10 models in {PREDICTIONS_DIR}"
