"""End to end: real models exported the way submitters export them, run through the sandbox,
give the scores of the same module computed directly in the test."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from tests.helpers import PROJECT_ROOT
from tests.workers.inference.conftest import TRAIN_IMAGES
from tests.workers.inference.support import CIFAR10, MNIST
from workers.inference import architectures, detect_and_validate, run_checkpoint


def export_onnx(model: torch.nn.Module, shape: tuple[int, ...], path: Path) -> Path:
    """As a submitter exports (the TorchScript exporter: onnxscript is not installed here)."""
    with warnings.catch_warnings():  # its deprecation notice is not about this project
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model, (torch.zeros(1, *shape),), str(path), dynamo=False,
            input_names=["image"], output_names=["logits"],
            dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        )  # fmt: skip
    return path


def direct(model: torch.nn.Module, images: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return np.concatenate(
            [model(torch.from_numpy(images[s : s + 1000])).numpy()
             for s in range(0, len(images), 1000)]
        )  # fmt: skip


def test_it_defines_the_published_architectures() -> None:
    mnist, resnet = architectures.build("mnist-cnn"), architectures.build("cifar-resnet20")
    assert sum(p.numel() for p in mnist.parameters()) == 105_866
    assert sum(p.numel() for p in resnet.parameters()) == 272_474
    assert not mnist.training and not resnet.training
    assert list(architectures.expected_tensors("mnist-cnn").items()) == [
        ("conv1.weight", (16, 1, 3, 3)), ("conv1.bias", (16,)),
        ("conv2.weight", (32, 16, 3, 3)), ("conv2.bias", (32,)),
        ("fc1.weight", (64, 1568)), ("fc1.bias", (64,)),
        ("fc2.weight", (10, 64)), ("fc2.bias", (10,)),
    ]
    resnet20 = architectures.expected_tensors("cifar-resnet20")
    assert resnet20["layer3.0.downsample.1.running_var"] == (64,)
    assert len(architectures.ignored_tensors("cifar-resnet20")) == 21
    with torch.inference_mode():
        assert resnet(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    with pytest.raises(KeyError, match="submit an ONNX model"):
        architectures.build("imagenet-resnet50")


def test_it_publishes_tables_equal_to_the_networks_state_dicts() -> None:
    from workers.inference import state_dicts

    for key in ("mnist-cnn", "cifar-resnet20"):
        state = architectures.build(key).state_dict()
        assert state_dicts.STATE_DICTS[key] == {
            k: tuple(v.shape) for k, v in state.items()
            if not k.endswith(state_dicts.IGNORED_SUFFIX)}
        assert list(state_dicts.STATE_DICTS[key]) == [
            k for k in state if not k.endswith(state_dicts.IGNORED_SUFFIX)]
        assert state_dicts.IGNORED[key] == {
            k for k in state if k.endswith(state_dicts.IGNORED_SUFFIX)}


def test_it_checks_safetensors_uploads_without_importing_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    weights = tmp_path / "w.safetensors"
    save_file(architectures.build("mnist-cnn").state_dict(), str(weights))
    code = ("import sys; from workers.inference import detect_and_validate; "
            "from tests.workers.inference.support import MNIST; "
            f"print(detect_and_validate({str(weights)!r}, inputs=MNIST, "
            "original_name='w.safetensors').format, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PROJECT_ROOT).stdout
    assert out.split() == ["safetensors", "False"]


def test_it_scores_a_trained_mnist_cnn_identically_as_onnx_and_as_safetensors(
    tmp_path: Path, trained_mnist: torch.nn.Module, mnist_images: np.ndarray,
    mnist_labels: np.ndarray,
) -> None:
    expected = direct(trained_mnist, mnist_images)
    held_out = (expected[TRAIN_IMAGES:].argmax(1) == mnist_labels[TRAIN_IMAGES:]).mean()
    assert held_out > 0.85  # it did learn: the comparison is between meaningful predictions
    onnx_path = export_onnx(trained_mnist, (1, 28, 28), tmp_path / "cnn.onnx")
    st_path = tmp_path / "cnn.safetensors"
    save_file(trained_mnist.state_dict(), st_path)
    for path in (onnx_path, st_path):
        info = detect_and_validate(path, inputs=MNIST, original_name=path.name)
        scores = run_checkpoint(path, inputs=MNIST, images=mnist_images,
                                checkpoint_format=info.format, threads=2)
        assert scores.shape == (10_000, 10)
        assert np.array_equal(scores.argmax(1), expected.argmax(1)), path.name
        np.testing.assert_allclose(scores, expected, atol=1e-4)


def test_it_runs_a_cifar10_resnet_from_half_precision_safetensors_and_from_onnx(
    tmp_path: Path,
) -> None:
    torch.manual_seed(1)
    model = architectures.build("cifar-resnet20")
    with torch.no_grad():  # non-trivial batch-norm statistics, so that they matter
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 2.0)
        for value in model.state_dict().values():  # what the file will hold: float16 values
            if value.is_floating_point():
                value.copy_(value.half().float())
    images = np.random.default_rng(0).standard_normal((300, 3, 32, 32)).astype(np.float32)
    expected = direct(model, images)
    half = tmp_path / "resnet20.safetensors"
    save_file({k: v.half() if v.is_floating_point() else v
               for k, v in model.state_dict().items()}, half)
    onnx_path = export_onnx(model, (3, 32, 32), tmp_path / "resnet20.onnx")
    for path in (half, onnx_path):
        scores = run_checkpoint(path, inputs=CIFAR10, images=images, batch_size=128)
        assert np.array_equal(scores.argmax(1), expected.argmax(1)), path.name
        np.testing.assert_allclose(scores, expected, atol=1e-4)
