"""What the server's own architectures look like, without torch: their names, a description
for the submit page, and every key and shape their state dicts hold. Checking a safetensors
upload reads this (the web process never imports torch); `architectures` builds the networks,
and a test checks that these tables are exactly what the networks' `state_dict()` holds.
A benchmark names the one it takes in its bundle (`[inputs] architecture`, docs/bundles.md
§2.1), by the key of ARCHITECTURES.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    key: str  # as a bundle names it
    name: str
    description: str
    num_classes: int  # the scores it returns: a benchmark with another class count cannot use it


ARCHITECTURES: dict[str, Architecture] = {
    "mnist-cnn": Architecture(
        "mnist-cnn",
        "MnistCNN",
        "conv3x3(1->16)+ReLU+maxpool2, conv3x3(16->32)+ReLU+maxpool2, linear(1568->64)+ReLU, "
        "linear(64->10); convolutions with padding 1 and biases",
        10,
    ),
    "cifar-resnet20": Architecture(
        "cifar-resnet20",
        "ResNet-20",
        "CIFAR ResNet-20 (He et al. 2016): conv3x3(3->16)+BN+ReLU, three stages of three basic "
        "blocks (16, 32, 64 channels; stride 2 at the start of stages 2 and 3, with a "
        "1x1 conv + BN projection shortcut there), global average pooling, linear(64->10); "
        "convolutions without biases",
        10,
    ),
}

# Keys whose tensors PyTorch writes into every state dict but that inference never reads:
# BatchNorm's step counter (an int64 scalar). They may be present or absent.
IGNORED_SUFFIX = ".num_batches_tracked"


# Every floating-point tensor each state dict holds (parameters and BatchNorm statistics), in
# module order, by key; the optional IGNORED_SUFFIX counters are listed apart.
STATE_DICTS: dict[str, dict[str, tuple[int, ...]]] = {
    "mnist-cnn": {
        "conv1.weight": (16, 1, 3, 3),
        "conv1.bias": (16,),
        "conv2.weight": (32, 16, 3, 3),
        "conv2.bias": (32,),
        "fc1.weight": (64, 1568),
        "fc1.bias": (64,),
        "fc2.weight": (10, 64),
        "fc2.bias": (10,),
    },
    "cifar-resnet20": {
        "conv1.weight": (16, 3, 3, 3),
        "bn1.weight": (16,),
        "bn1.bias": (16,),
        "bn1.running_mean": (16,),
        "bn1.running_var": (16,),
        "layer1.0.conv1.weight": (16, 16, 3, 3),
        "layer1.0.bn1.weight": (16,),
        "layer1.0.bn1.bias": (16,),
        "layer1.0.bn1.running_mean": (16,),
        "layer1.0.bn1.running_var": (16,),
        "layer1.0.conv2.weight": (16, 16, 3, 3),
        "layer1.0.bn2.weight": (16,),
        "layer1.0.bn2.bias": (16,),
        "layer1.0.bn2.running_mean": (16,),
        "layer1.0.bn2.running_var": (16,),
        "layer1.1.conv1.weight": (16, 16, 3, 3),
        "layer1.1.bn1.weight": (16,),
        "layer1.1.bn1.bias": (16,),
        "layer1.1.bn1.running_mean": (16,),
        "layer1.1.bn1.running_var": (16,),
        "layer1.1.conv2.weight": (16, 16, 3, 3),
        "layer1.1.bn2.weight": (16,),
        "layer1.1.bn2.bias": (16,),
        "layer1.1.bn2.running_mean": (16,),
        "layer1.1.bn2.running_var": (16,),
        "layer1.2.conv1.weight": (16, 16, 3, 3),
        "layer1.2.bn1.weight": (16,),
        "layer1.2.bn1.bias": (16,),
        "layer1.2.bn1.running_mean": (16,),
        "layer1.2.bn1.running_var": (16,),
        "layer1.2.conv2.weight": (16, 16, 3, 3),
        "layer1.2.bn2.weight": (16,),
        "layer1.2.bn2.bias": (16,),
        "layer1.2.bn2.running_mean": (16,),
        "layer1.2.bn2.running_var": (16,),
        "layer2.0.conv1.weight": (32, 16, 3, 3),
        "layer2.0.bn1.weight": (32,),
        "layer2.0.bn1.bias": (32,),
        "layer2.0.bn1.running_mean": (32,),
        "layer2.0.bn1.running_var": (32,),
        "layer2.0.conv2.weight": (32, 32, 3, 3),
        "layer2.0.bn2.weight": (32,),
        "layer2.0.bn2.bias": (32,),
        "layer2.0.bn2.running_mean": (32,),
        "layer2.0.bn2.running_var": (32,),
        "layer2.0.downsample.0.weight": (32, 16, 1, 1),
        "layer2.0.downsample.1.weight": (32,),
        "layer2.0.downsample.1.bias": (32,),
        "layer2.0.downsample.1.running_mean": (32,),
        "layer2.0.downsample.1.running_var": (32,),
        "layer2.1.conv1.weight": (32, 32, 3, 3),
        "layer2.1.bn1.weight": (32,),
        "layer2.1.bn1.bias": (32,),
        "layer2.1.bn1.running_mean": (32,),
        "layer2.1.bn1.running_var": (32,),
        "layer2.1.conv2.weight": (32, 32, 3, 3),
        "layer2.1.bn2.weight": (32,),
        "layer2.1.bn2.bias": (32,),
        "layer2.1.bn2.running_mean": (32,),
        "layer2.1.bn2.running_var": (32,),
        "layer2.2.conv1.weight": (32, 32, 3, 3),
        "layer2.2.bn1.weight": (32,),
        "layer2.2.bn1.bias": (32,),
        "layer2.2.bn1.running_mean": (32,),
        "layer2.2.bn1.running_var": (32,),
        "layer2.2.conv2.weight": (32, 32, 3, 3),
        "layer2.2.bn2.weight": (32,),
        "layer2.2.bn2.bias": (32,),
        "layer2.2.bn2.running_mean": (32,),
        "layer2.2.bn2.running_var": (32,),
        "layer3.0.conv1.weight": (64, 32, 3, 3),
        "layer3.0.bn1.weight": (64,),
        "layer3.0.bn1.bias": (64,),
        "layer3.0.bn1.running_mean": (64,),
        "layer3.0.bn1.running_var": (64,),
        "layer3.0.conv2.weight": (64, 64, 3, 3),
        "layer3.0.bn2.weight": (64,),
        "layer3.0.bn2.bias": (64,),
        "layer3.0.bn2.running_mean": (64,),
        "layer3.0.bn2.running_var": (64,),
        "layer3.0.downsample.0.weight": (64, 32, 1, 1),
        "layer3.0.downsample.1.weight": (64,),
        "layer3.0.downsample.1.bias": (64,),
        "layer3.0.downsample.1.running_mean": (64,),
        "layer3.0.downsample.1.running_var": (64,),
        "layer3.1.conv1.weight": (64, 64, 3, 3),
        "layer3.1.bn1.weight": (64,),
        "layer3.1.bn1.bias": (64,),
        "layer3.1.bn1.running_mean": (64,),
        "layer3.1.bn1.running_var": (64,),
        "layer3.1.conv2.weight": (64, 64, 3, 3),
        "layer3.1.bn2.weight": (64,),
        "layer3.1.bn2.bias": (64,),
        "layer3.1.bn2.running_mean": (64,),
        "layer3.1.bn2.running_var": (64,),
        "layer3.2.conv1.weight": (64, 64, 3, 3),
        "layer3.2.bn1.weight": (64,),
        "layer3.2.bn1.bias": (64,),
        "layer3.2.bn1.running_mean": (64,),
        "layer3.2.bn1.running_var": (64,),
        "layer3.2.conv2.weight": (64, 64, 3, 3),
        "layer3.2.bn2.weight": (64,),
        "layer3.2.bn2.bias": (64,),
        "layer3.2.bn2.running_mean": (64,),
        "layer3.2.bn2.running_var": (64,),
        "fc.weight": (10, 64),
        "fc.bias": (10,),
    },
}
IGNORED: dict[str, frozenset[str]] = {
    "mnist-cnn": frozenset(),
    "cifar-resnet20": frozenset({
        "bn1.num_batches_tracked",
        "layer1.0.bn1.num_batches_tracked",
        "layer1.0.bn2.num_batches_tracked",
        "layer1.1.bn1.num_batches_tracked",
        "layer1.1.bn2.num_batches_tracked",
        "layer1.2.bn1.num_batches_tracked",
        "layer1.2.bn2.num_batches_tracked",
        "layer2.0.bn1.num_batches_tracked",
        "layer2.0.bn2.num_batches_tracked",
        "layer2.0.downsample.1.num_batches_tracked",
        "layer2.1.bn1.num_batches_tracked",
        "layer2.1.bn2.num_batches_tracked",
        "layer2.2.bn1.num_batches_tracked",
        "layer2.2.bn2.num_batches_tracked",
        "layer3.0.bn1.num_batches_tracked",
        "layer3.0.bn2.num_batches_tracked",
        "layer3.0.downsample.1.num_batches_tracked",
        "layer3.1.bn1.num_batches_tracked",
        "layer3.1.bn2.num_batches_tracked",
        "layer3.2.bn1.num_batches_tracked",
        "layer3.2.bn2.num_batches_tracked",
    }),
}


def architecture_check(key: str, *, num_classes: int) -> Architecture:
    """The architecture a bundle names, for a benchmark of `num_classes` classes; a ValueError
    names the known ones or the class count that does not fit."""
    architecture = ARCHITECTURES.get(key)
    if architecture is None:
        raise ValueError(f"the server defines no architecture {key!r} (it does: "
                         f"{', '.join(sorted(ARCHITECTURES))})")
    if architecture.num_classes != num_classes:
        raise ValueError(f"architecture {key!r} returns {architecture.num_classes} scores, "
                         f"not the benchmark's {num_classes}")
    return architecture
