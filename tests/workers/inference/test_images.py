"""Tests for load_images and the declared preprocessing: real MNIST, a CIFAR-10 batch and an
ImageNet folder built in the official layouts, each checked against an independent reading."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.workers.inference import builders
from tests.workers.inference.support import CIFAR10, IMAGENET, MNIST
from workers.inference import ImageSource, load_images
from workers.inference.images import read_cifar10_batch
from workers.scoring.datasets import DataError, imagenet_file_name


def cifar(path: Path, size: int = 10000) -> np.ndarray:
    return load_images(ImageSource("cifar-batch", path), inputs=CIFAR10, size=size)


def imagenet(folder: Path, size: int = 50000, **kwargs: Any) -> np.ndarray:
    names = [imagenet_file_name(i) for i in range(size)]
    return load_images(ImageSource("folder", folder), inputs=IMAGENET, size=size, names=names,
                       **kwargs)


def test_it_preprocesses_the_real_mnist_test_images(
    data_dir: Path, mnist_images: np.ndarray
) -> None:
    with gzip.open(data_dir / "mnist/t10k-images-idx3-ubyte.gz", "rb") as handle:
        raw = np.frombuffer(handle.read()[16:], dtype=np.uint8).reshape(10000, 1, 28, 28)
    expected = (raw / 255.0 - 0.1307) / 0.3081
    assert mnist_images.dtype == np.float32
    assert mnist_images.shape == (10000, 1, 28, 28)
    np.testing.assert_allclose(mnist_images, expected, atol=1e-6)
    assert mnist_images.min() == np.float32(np.float32(-0.1307) / np.float32(0.3081))
    idx = ImageSource("idx", data_dir / "mnist/t10k-images-idx3-ubyte.gz")
    assert load_images(idx, inputs=MNIST, size=10000, limit=5).shape == (5, 1, 28, 28)


def test_it_declares_each_benchmarks_preprocessing_in_plain_words() -> None:
    assert MNIST.describe() == (
        "Each image is a 28x28 grayscale image, used at that size. Its pixel values (0-255) are "
        "divided by 255, then normalized per channel as (x - mean) / std with mean (0.1307) and "
        "std (0.3081). The model receives a float32 array of shape [N, 1, 28, 28] (NCHW: batch, "
        "channel, height, width) and must return 10 scores per image (logits or "
        "probabilities; the highest score is the prediction), shape [N, 10]."
    )
    assert CIFAR10.mean == (0.4914, 0.4822, 0.4465) and CIFAR10.std == (0.2470, 0.2435, 0.2616)
    assert IMAGENET.describe().startswith(
        "Each image is converted to RGB, resized so that its shorter side is 256 pixels "
        "(bilinear interpolation, keeping the aspect ratio) and center-cropped to 224x224.")
    data = json.loads(json.dumps(IMAGENET.as_dict()))
    assert data["input_shape"] == [3, 224, 224]
    assert (data["layout"], data["dtype"], data["num_classes"]) == ("NCHW", "float32", 1000)
    assert data["mean"] == [0.485, 0.456, 0.406] and data["std"] == [0.229, 0.224, 0.225]


# ---------------------------------------------------------------- CIFAR-10 test_batch


def write_cifar_batch(path: Path, count: int = 50, protocol: int = 2) -> np.ndarray:
    """A batch in the cifar-10-batches-py layout (protocol 2, as the original files)."""
    data = np.random.default_rng(0).integers(0, 256, (count, 3072), dtype=np.uint8)
    batch = {b"batch_label": b"testing batch 1 of 1", b"labels": [i % 10 for i in range(count)],
             b"data": data, b"filenames": [f"img_{i}.png".encode() for i in range(count)]}
    with open(path, "wb") as handle:
        pickle.dump(batch, handle, protocol=protocol)
    return data


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_it_reads_a_cifar10_batch_in_channel_planes(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "test_batch"
    data = write_cifar_batch(path, protocol=protocol)
    images = cifar(path, size=50)
    assert images.shape == (50, 3, 32, 32)
    # image 3, green channel (values 1024..2047 of its row), row 5, column 7
    green = data[3, 1024 + 5 * 32 + 7]
    assert images[3, 1, 5, 7] == np.float32((np.float32(green) / 255 - np.float32(0.4822))
                                            / np.float32(0.2435))
    assert read_cifar10_batch(path)[1] == [i % 10 for i in range(50)]


def test_it_refuses_a_cifar10_batch_of_the_wrong_size_or_layout(tmp_path: Path) -> None:
    path = tmp_path / "test_batch"
    write_cifar_batch(path)
    with pytest.raises(DataError, match="holds 50 images, expected 10000"):
        cifar(path)
    not_a_batch = tmp_path / "list_batch"
    not_a_batch.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(DataError, match="not a CIFAR-10 python batch"):
        cifar(not_a_batch, size=3)


@pytest.mark.parametrize("shell", [False, True], ids=["open", "os.system"])
def test_it_reads_the_cifar10_pickle_with_a_restricted_unpickler(
    tmp_path: Path, shell: bool
) -> None:
    target = tmp_path / "pwned"
    path = tmp_path / "test_batch"
    path.write_bytes(builders.hostile_pickle(target, shell=shell, protocol=2))
    with pytest.raises(DataError, match="is not allowed"):
        cifar(path, size=50)
    assert not target.exists()


# ---------------------------------------------------------------- ImageNet folder


def save_jpeg(image: Image.Image, folder: Path, index: int) -> None:
    image.save(folder / imagenet_file_name(index), quality=100, subsampling=0)


@pytest.fixture
def imagenet_dir(tmp_path: Path) -> Path:
    """20 validation-named JPEGs: two ramps that need no resizing, a grayscale image, and
    solid colours of different sizes whose colour encodes the file number."""
    folder = tmp_path / "val"
    folder.mkdir()
    ramp = np.zeros((256, 512, 3), np.uint8)
    ramp[..., 0] = np.arange(512) % 256
    ramp[..., 1] = 255 - np.arange(512) % 256
    ramp[..., 2] = np.arange(256)[:, None]
    save_jpeg(Image.fromarray(ramp), folder, 0)
    save_jpeg(Image.fromarray(np.ascontiguousarray(ramp.transpose(1, 0, 2))), folder, 1)
    save_jpeg(Image.new("L", (300, 300), 200), folder, 2)
    for i in range(3, 20):
        size = (320 + 10 * i, 240) if i % 2 else (240, 330)
        save_jpeg(Image.new("RGB", size, (10 * i, 255 - 10 * i, 128)), folder, i)
    return folder


def normalized(rgb: tuple[float, float, float]) -> np.ndarray:
    return ((np.array(rgb) / 255 - np.array(IMAGENET.mean)) / np.array(IMAGENET.std))


def test_it_reads_an_imagenet_folder_in_file_number_order(
    imagenet_dir: Path, tmp_path: Path
) -> None:
    images = imagenet(imagenet_dir, size=20, workers=2)
    assert images.dtype == np.float32
    assert images.shape == (20, 3, 224, 224)
    # 512x256 and 256x512 keep their size (shorter side 256) and are cropped at (144, 16)
    for index, crop in ((0, np.s_[16:240, 144:368]), (1, np.s_[144:368, 16:240])):
        with Image.open(imagenet_dir / imagenet_file_name(index)) as image:
            decoded = np.asarray(image.convert("RGB"), dtype=np.float32)[crop]
        expected = IMAGENET.normalize(decoded.astype(np.uint8).transpose(2, 0, 1)[None])[0]
        np.testing.assert_array_equal(images[index], expected)
    tolerance = 2 / 255 / min(IMAGENET.std)  # JPEG may move a flat colour by a level or two
    np.testing.assert_allclose(images[2], np.broadcast_to(
        normalized((200, 200, 200))[:, None, None], (3, 224, 224)), atol=tolerance)
    for i in range(3, 20):
        colour = normalized((10 * i, 255 - 10 * i, 128))[:, None, None]
        np.testing.assert_allclose(images[i], np.broadcast_to(colour, (3, 224, 224)),
                                   atol=tolerance)
    out = tmp_path / "imagenet.npy"
    mapped = imagenet(imagenet_dir, size=20, limit=4, out=out)
    np.testing.assert_array_equal(np.load(out), images[:4])
    assert mapped.shape == (4, 3, 224, 224)


def test_it_names_the_first_missing_imagenet_file(imagenet_dir: Path) -> None:
    (imagenet_dir / imagenet_file_name(7)).unlink()
    with pytest.raises(DataError) as caught:
        imagenet(imagenet_dir, size=20)
    assert str(caught.value) == (
        f"the image folder {imagenet_dir} lacks 1 of the 20 images, "
        "first ILSVRC2012_val_00000008.JPEG")
    with pytest.raises(DataError, match="lacks 49981 of the 50000 images"):
        imagenet(imagenet_dir)
