"""Tests for the package boundary: no Django anywhere, and nothing heavy imported early."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import PROJECT_ROOT

PROBE = """
import json, sys
import workers.inference as inference
light = sorted(m for m in ("torch", "onnx", "onnxruntime", "PIL") if m in sys.modules)
inference.images.ImageSource("idx", "t10k.gz")
inference.detect_and_validate, inference.run_checkpoint, inference.architectures.build
for name in ("child", "formats", "onnx_format", "safetensors_format", "sandbox"):
    getattr(inference, name)
print(json.dumps({"at_import": light, "django": sorted(m for m in sys.modules
                                                    if m.split(".")[0] == "django")}))
"""


def test_it_imports_without_django_and_loads_heavy_libraries_only_on_use() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT)}  # no DJANGO_SETTINGS_MODULE
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=PROJECT_ROOT,
                         capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen == {"at_import": [], "django": []}
