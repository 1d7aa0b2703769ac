"""Tests for detect_and_validate: what is refused, with which code, before anything loads."""

from __future__ import annotations

import copy
import pickle
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from tests.workers.inference import builders
from tests.workers.inference.support import CIFAR10, IMAGENET, MNIST
from workers.inference import CheckpointError, architectures, detect_and_validate, run_checkpoint
from workers.inference.errors import CODES
from workers.inference.preprocessing import Preprocessing


def refused(path: Path, name: str | None = None, inputs: Preprocessing = MNIST) -> CheckpointError:
    with pytest.raises(CheckpointError) as caught:
        detect_and_validate(path, inputs=inputs, original_name=name or path.name)
    assert caught.value.code in CODES
    return caught.value


def mnist_state(seed: int = 0) -> dict[str, np.ndarray]:
    torch.manual_seed(seed)
    return {k: v.numpy() for k, v in architectures.build("mnist-cnn").state_dict().items()}


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- pickles are never opened


def test_it_has_a_payload_that_really_acts_when_unpickled(tmp_path: Path) -> None:
    """The hostile pickles below are live: unpickling one does create the file."""
    target = tmp_path / "proof"
    handle = pickle.loads(builders.hostile_pickle(target))["state_dict"]
    handle.close()
    assert target.exists()


@pytest.mark.parametrize("name", ["model.pt", "model.pth", "model.safetensors", "model.onnx",
                                  "model.npy", "model.ckpt", "weights"])
@pytest.mark.parametrize("shell", [False, True], ids=["open", "os.system"])
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_it_refuses_a_pickle_under_any_name_without_unpickling_it(
    tmp_path: Path, name: str, shell: bool, protocol: int
) -> None:
    target = tmp_path / "pwned"
    path = write(tmp_path, name, builders.hostile_pickle(target, shell=shell, protocol=protocol))
    error = refused(path)
    assert error.code == "pickle_refused"
    assert "pickle" in error.message and "arbitrary code" in error.message
    assert not target.exists()


@pytest.mark.parametrize("name", ["model.pt", "model.safetensors", "model.onnx"])
def test_it_refuses_a_torch_save_zip_and_a_real_torch_save_file(tmp_path: Path, name: str) -> None:
    target = tmp_path / "pwned"
    crafted = tmp_path / "crafted.zip"
    with zipfile.ZipFile(crafted, "w") as archive:
        archive.writestr("archive/data.pkl", builders.hostile_pickle(target))
        archive.writestr("archive/version", "3\n")
    real = tmp_path / f"real-{name}"
    torch.save(architectures.build("mnist-cnn").state_dict(), real)
    for path in (crafted, real):
        assert refused(path, name).code == "pickle_refused"
    assert not target.exists()


def test_it_refuses_a_pickle_through_run_checkpoint_too(
    tmp_path: Path, mnist_images: np.ndarray
) -> None:
    target = tmp_path / "pwned"
    path = write(tmp_path, "model.onnx", builders.hostile_pickle(target, shell=True))
    with pytest.raises(CheckpointError) as caught:
        run_checkpoint(path, inputs=MNIST, images=mnist_images[:4])
    assert caught.value.code == "pickle_refused"
    assert not target.exists()


# ---------------------------------------------------------------- names and bytes


@pytest.mark.parametrize("name", ["model.pt", "model.PTH", "model.pt2", "model.pkl",
                                  "model.pickle", "model.ckpt", "pytorch_model.bin", "model.zip",
                                  "model.npy", "model.tar", "model.h5", "model.txt", "model"])
def test_it_refuses_other_file_names_even_with_valid_onnx_bytes(
    tmp_path: Path, name: str
) -> None:
    path = builders.save(builders.linear_model(), tmp_path / "m")
    error = refused(path, name)
    assert error.code == "unsupported_format"
    assert "ONNX" in error.message and "safetensors" in error.message


def test_it_refuses_bytes_that_are_not_what_the_name_claims(tmp_path: Path) -> None:
    npy = tmp_path / "a.npy"
    np.save(npy, np.zeros((2, 10), np.float32))
    plain_zip = tmp_path / "a.zip"
    with zipfile.ZipFile(plain_zip, "w") as archive:
        archive.writestr("model.onnx", builders.linear_model().SerializeToString())
    assert refused(npy, "model.onnx").code == "unsupported_format"
    assert refused(plain_zip, "model.onnx").code == "unsupported_format"
    assert refused(write(tmp_path, "junk", b"\x07not a model" * 10), "m.onnx").code == (
        "onnx_invalid")
    assert refused(write(tmp_path, "empty", b""), "m.onnx").code == "empty_file"
    safetensors = write(tmp_path, "s", builders.safetensors_bytes(mnist_state()))
    assert refused(safetensors, "model.onnx").code == "onnx_invalid"
    onnx_file = builders.save(builders.linear_model(), tmp_path / "o")
    assert refused(onnx_file, "model.safetensors").code.startswith("safetensors_")


def test_it_refuses_a_file_over_the_size_limit(tmp_path: Path) -> None:
    path = builders.save(builders.linear_model(), tmp_path / "m.onnx")
    with pytest.raises(CheckpointError) as caught:
        detect_and_validate(path, inputs=MNIST, original_name="m.onnx", max_bytes=1000)
    assert caught.value.code == "checkpoint_too_large"


# ---------------------------------------------------------------- safetensors


def test_it_accepts_a_state_dict_saved_by_safetensors_and_describes_it(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    save_file(architectures.build("mnist-cnn").state_dict(), path, metadata={"epochs": "1"})
    info = detect_and_validate(path, inputs=MNIST, original_name="My Model.SafeTensors")
    assert info.format == "safetensors"
    assert info.size_bytes == path.stat().st_size
    assert len(info.sha256) == 64
    assert info.details == {"tensors": 8, "dtypes": ["F32"], "metadata": {"epochs": "1"}}


def test_it_accepts_resnet_state_dicts_with_or_without_batchnorm_counters(tmp_path: Path) -> None:
    state = architectures.build("cifar-resnet20").state_dict()
    with_counters, without = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    save_file(state, with_counters)
    save_file({k: v for k, v in state.items() if "num_batches" not in k}, without)
    assert detect_and_validate(with_counters, inputs=CIFAR10,
                               original_name="a.safetensors").details["tensors"] == 128
    assert detect_and_validate(without, inputs=CIFAR10,
                               original_name="b.safetensors").details["tensors"] == 107


def _header_edits() -> dict[str, tuple[Callable[[dict[str, Any]], None], str]]:
    def past_end(h: dict[str, Any]) -> None:
        h["fc2.bias"]["data_offsets"][1] += 4

    def overlap(h: dict[str, Any]) -> None:
        h["fc2.bias"]["data_offsets"] = list(h["fc2.weight"]["data_offsets"][:1]) + [
            h["fc2.weight"]["data_offsets"][0] + 40]

    def bad_dtype(h: dict[str, Any]) -> None:
        h["fc2.bias"]["dtype"] = "I32"

    def bool_shape(h: dict[str, Any]) -> None:
        h["fc2.bias"]["shape"] = [True] * 10

    def extra_field(h: dict[str, Any]) -> None:
        h["fc2.bias"]["note"] = "x"

    def bad_metadata(h: dict[str, Any]) -> None:
        h["__metadata__"] = {"epochs": 3}

    return {
        "past_end": (past_end, "safetensors_offsets_out_of_range"),
        "overlap": (overlap, "safetensors_offsets_invalid"),
        "bad_dtype": (bad_dtype, "safetensors_dtype"),
        "bool_shape": (bool_shape, "safetensors_header_invalid"),
        "extra_field": (extra_field, "safetensors_header_invalid"),
        "bad_metadata": (bad_metadata, "safetensors_header_invalid"),
    }


@pytest.mark.parametrize("case", sorted(_header_edits()))
def test_it_refuses_a_malformed_safetensors_header(tmp_path: Path, case: str) -> None:
    edit, code = _header_edits()[case]
    path = write(tmp_path, "m.safetensors", builders.safetensors_bytes(mnist_state(), edit))
    assert refused(path).code == code


def test_it_refuses_a_huge_or_truncated_header_length(tmp_path: Path) -> None:
    huge = write(tmp_path, "a.safetensors", struct.pack("<Q", 2**62) + b"{}" + b"\0" * 64)
    over_cap = write(tmp_path, "b.safetensors", struct.pack("<Q", 2 * 2**20) + b"{" + b" " * 99)
    past_file = write(tmp_path, "c.safetensors", struct.pack("<Q", 500) + b"{}")
    short = write(tmp_path, "d.safetensors", b"\x02\x00")
    for path in (huge, over_cap, past_file):
        assert refused(path).code == "safetensors_header_too_large"
    assert "4,611,686,018,427,387,904" in refused(huge).message
    assert refused(short).code == "safetensors_header_invalid"


def test_it_refuses_duplicate_keys_and_trailing_bytes(tmp_path: Path) -> None:
    good = builders.safetensors_bytes(mnist_state())
    length = struct.unpack("<Q", good[:8])[0]
    text = good[8 : 8 + length].decode()
    first = text[1 : text.index("}") + 2]  # '"conv1.weight": {...},'
    duplicated = ("{" + first + text[1:]).encode()
    dup = write(tmp_path, "a.safetensors",
                struct.pack("<Q", len(duplicated)) + duplicated + good[8 + length:])
    trailing = write(tmp_path, "b.safetensors", good + b"\0\0\0\0")
    assert refused(dup).code == "safetensors_header_invalid"
    assert "twice" in refused(dup).message
    assert refused(trailing).code == "safetensors_offsets_invalid"


def test_it_refuses_a_state_dict_of_the_wrong_shape_keys_or_network(tmp_path: Path) -> None:
    state = mnist_state()
    wide = dict(state, **{"fc2.weight": np.zeros((5, 64), np.float32)})
    extra = dict(state, **{"fc3.weight": np.zeros((10, 10), np.float32)})
    missing = {k: v for k, v in state.items() if k != "fc1.bias"}
    cases = {"wide": (wide, "safetensors_shape_mismatch"),
             "extra": (extra, "safetensors_unexpected_key"),
             "missing": (missing, "safetensors_missing_key")}
    for name, (tensors, code) in cases.items():
        path = write(tmp_path, f"{name}.safetensors", builders.safetensors_bytes(tensors))
        assert refused(path).code == code, name
    assert "'fc3.weight'" in refused(tmp_path / "extra.safetensors").message
    assert "'fc1.bias'" in refused(tmp_path / "missing.safetensors").message
    assert "[5, 64]" in refused(tmp_path / "wide.safetensors").message
    resnet = tmp_path / "resnet.safetensors"
    save_file(architectures.build("cifar-resnet20").state_dict(), resnet)
    assert refused(resnet, inputs=MNIST).code == "safetensors_missing_key"
    assert refused(resnet, inputs=IMAGENET).code == "unsupported_format"


# ---------------------------------------------------------------- ONNX


def test_it_accepts_an_onnx_model_and_reports_its_signature(tmp_path: Path) -> None:
    path = builders.save(builders.linear_model(), tmp_path / "m.onnx")
    info = detect_and_validate(path, inputs=MNIST, original_name="m.onnx")
    assert (info.format, info.fixed_batch) == ("onnx", None)
    assert info.details == {"opset": 17, "input": "x", "output": "y", "output_dtype": "float32",
                            "nodes": 3, "producer": ""}
    fixed = builders.save(builders.linear_model(batch=1), tmp_path / "fixed.onnx")
    assert detect_and_validate(fixed, inputs=MNIST, original_name="f.onnx").fixed_batch == 1


@pytest.mark.parametrize("location", ["../../etc/passwd", "/etc/passwd", "weights.bin"])
def test_it_refuses_onnx_external_data_anywhere(tmp_path: Path, location: str) -> None:
    top = builders.save(builders.with_external_initializer(location), tmp_path / "a.onnx")
    nested = builders.save(builders.with_external_tensor_in_subgraph(location),
                           tmp_path / "b.onnx")
    for path in (top, nested):
        error = refused(path)
        assert error.code == "onnx_external_data"
        assert repr(location) in error.message


def test_it_refuses_onnx_operators_outside_the_standard_domain(tmp_path: Path) -> None:
    imported = builders.save(builders.with_custom_op(), tmp_path / "a.onnx")
    unimported = builders.save(builders.with_custom_op(import_domain=False), tmp_path / "b.onnx")
    assert refused(imported).code == "onnx_custom_domain"
    assert "'com.example.evil'" in refused(imported).message
    assert refused(unimported).code == "onnx_custom_domain"


def test_it_refuses_an_onnx_input_or_output_the_benchmark_cannot_feed(tmp_path: Path) -> None:
    rgb = builders.save(builders.linear_model(shape=(3, 28, 28)), tmp_path / "rgb.onnx")
    small = builders.save(builders.linear_model(shape=(1, 14, 14)), tmp_path / "small.onnx")
    five = builders.save(builders.linear_model(classes=5), tmp_path / "five.onnx")
    double = builders.linear_model()
    double.graph.input[0].type.tensor_type.elem_type = 11  # DOUBLE
    two_inputs = builders.linear_model()
    two_inputs.graph.input.append(builders.image_input(["N", 1, 28, 28]))
    two_inputs.graph.input[1].name = "x2"
    assert refused(rgb).code == "onnx_input_shape"
    assert "[N, 1, 28, 28]" in refused(rgb).message
    assert refused(small).code == "onnx_input_shape"
    assert refused(five).code == "onnx_output_shape"
    assert refused(builders.save(double, tmp_path / "d.onnx")).code == "onnx_input_type"
    assert refused(builders.save(two_inputs, tmp_path / "t.onnx")).code == "onnx_input_shape"
    assert refused(rgb, inputs=CIFAR10).code == "onnx_input_shape"


def test_it_refuses_an_onnx_graph_the_checker_rejects(tmp_path: Path) -> None:
    model = builders.linear_model()
    model.graph.node[1].input[1] = "nowhere"  # MatMul reads an undefined tensor
    assert refused(builders.save(model, tmp_path / "m.onnx")).code == "onnx_invalid"


def test_it_keeps_code_and_message_through_pickling_and_copying() -> None:
    error = CheckpointError("model_timeout", "the model did not finish in time")
    for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert (clone.code, clone.message) == ("model_timeout", "the model did not finish in time")
        assert str(clone) == "model_timeout: the model did not finish in time"
    with pytest.raises(ValueError, match="unknown CheckpointError code 'timeout'"):
        CheckpointError("timeout", "x")


def test_it_refuses_a_header_dimension_of_thousands_of_digits(tmp_path: Path) -> None:
    """A 5,001-digit integer passes JSON's grammar but not Python's int-string limit: a
    named refusal, not a ValueError escaping to a 500."""
    body = ('{"w": {"dtype": "F32", "shape": [' + "9" * 5001
            + '], "data_offsets": [0, 4]}}').encode()
    path = write(tmp_path, "big.safetensors", struct.pack("<Q", len(body)) + body + b"\0" * 4)
    error = refused(path)
    assert error.code == "safetensors_header_invalid"
    assert error.message == "the header holds a number with thousands of digits"
