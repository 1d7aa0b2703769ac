"""The small architectures the server defines itself, for safetensors state-dict submissions.

A safetensors file holds only tensors, never code, so the server must supply the network.
It does so for small images only: an MNIST CNN and a CIFAR-10 ResNet-20 (He et al.,
2016, section 4.2: 3 stages of 3 basic blocks, 16/32/64 channels, 1x1 convolution + batch
norm on the shortcut where the shape changes). Anything else is submitted as ONNX.

The module and parameter names are part of the public contract (they are the keys a
submitter's `state_dict()` must have), so they must not change once published; the submit
page shows them from the torch-free tables of `state_dicts`.
"""

from __future__ import annotations

from functools import cache

import torch
from torch import nn

from workers.inference.state_dicts import ARCHITECTURES, IGNORED_SUFFIX, Architecture

__all__ = ["ARCHITECTURES", "IGNORED_SUFFIX", "Architecture", "build", "expected_tensors",
           "ignored_tensors"]


class MnistCNN(nn.Module):
    """Two 3x3 conv layers (16, 32 channels, each followed by ReLU and 2x2 max-pooling), then
    a 64-unit hidden layer: about 0.1 M parameters, ~99% on MNIST after a few epochs."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv2(x)), 2)
        x = nn.functional.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, plus the (projected where needed) shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample: nn.Module | None = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = nn.functional.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return nn.functional.relu(out + shortcut)


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images; n=3 is ResNet-20 (0.27 M parameters).

    Names follow torchvision's ResNet (conv1, bn1, layer1..layer3, fc, downsample.0/1), so a
    state dict reads e.g. `layer2.0.downsample.1.running_var`.
    """

    def __init__(self, blocks_per_stage: int = 3, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, blocks_per_stage, stride=1)
        self.layer2 = self._stage(16, 32, blocks_per_stage, stride=2)
        self.layer3 = self._stage(32, 64, blocks_per_stage, stride=2)
        self.fc = nn.Linear(64, num_classes)

    @staticmethod
    def _stage(in_planes: int, planes: int, blocks: int, stride: int) -> nn.Sequential:
        layers = [BasicBlock(in_planes, planes, stride)]
        layers += [BasicBlock(planes, planes) for _ in range(blocks - 1)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


# The networks, by the key a bundle names them with (state_dicts.ARCHITECTURES).
NETWORKS: dict[str, type[nn.Module]] = {"mnist-cnn": MnistCNN, "cifar-resnet20": CifarResNet}


def build(architecture: str) -> nn.Module:
    """A freshly initialised network of the named architecture, in eval mode."""
    network = NETWORKS.get(architecture)
    if network is None:
        raise KeyError(
            f"the server defines no architecture {architecture!r} (it does: "
            f"{', '.join(sorted(ARCHITECTURES))}); submit an ONNX model instead"
        )
    return network().eval()


@cache
def expected_tensors(architecture: str) -> dict[str, tuple[int, ...]]:
    """Shape of every floating-point tensor the architecture's state dict must hold
    (parameters and BatchNorm running statistics), by key; the ignored counters excluded."""
    state = build(architecture).state_dict()
    return {k: tuple(v.shape) for k, v in state.items() if not k.endswith(IGNORED_SUFFIX)}


@cache
def ignored_tensors(architecture: str) -> frozenset[str]:
    """The optional int64-scalar keys (BatchNorm counters) of the architecture's network."""
    return frozenset(k for k in build(architecture).state_dict() if k.endswith(IGNORED_SUFFIX))

