"""The checkpoint inspectors on hypothesis-generated input (issue 14): `inspect_safetensors` on
random and mutated headers, `detect_and_validate` on random bytes, mutated ONNX graphs,
zips, pickles and safetensors files under any name. Each either accepts the file (and what
it accepted holds together) or refuses it with a CheckpointError whose code is one of
`errors.CODES`; no other exception escapes."""

from __future__ import annotations

import io
import json
import pickle
import struct
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import onnx
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from tests.workers.inference.support import MNIST
from workers.inference.errors import CODES, CheckpointError
from workers.inference.formats import CheckpointInfo, detect_and_validate
from workers.inference.safetensors_format import (
    FLOAT_DTYPES,
    SafetensorsHeader,
    inspect_safetensors,
)
from workers.inference.state_dicts import IGNORED, STATE_DICTS

ARCHITECTURE = "mnist-cnn"
EXPECTED = STATE_DICTS[ARCHITECTURE]
COUNTER = "conv1.num_batches_tracked"  # not an mnist key: refused as unexpected
# mostly the accepted names, in any case; then names refused whatever the bytes
NAMES = ("model.onnx", "model.onnx", "model.safetensors", "model.safetensors", "Model.ONNX",
         "m.SafeTensors", "model.pt", "model.pth", "model.npy", "model.zip", "weights",
         "model.onnx.txt")
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))
ANY_JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=12)


def _valid_header() -> tuple[dict[str, Any], int]:
    """The mnist state dict's header, float32, tensors in order; and its data length."""
    header: dict[str, Any] = {}
    position = 0
    for name, shape in EXPECTED.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [position, position + size]}
        position += size
    return header, position


def _mutation(name: str) -> st.SearchStrategy[tuple[str, str, Any]]:
    """(tensor, what to change, new value) for one tensor entry of the header."""
    return st.tuples(st.just(name), st.sampled_from(["dtype", "shape", "data_offsets", "entry"]),
                     st.one_of(ANY_JSON, st.sampled_from(["F16", "BF16", "I64", "F64", "U8"]),
                               st.lists(st.integers(-1, 2**64), max_size=5)))


@st.composite
def safetensors_files(draw: st.DrawFn) -> tuple[bytes, bool]:
    """(file bytes, whether it is the untouched valid file)."""
    header, data_length = _valid_header()
    mutations = draw(st.lists(st.sampled_from([*EXPECTED, COUNTER, "__metadata__", "extra"])
                              .flatmap(_mutation), max_size=3))
    for name, what, value in mutations:
        if what == "entry" or not isinstance(header.get(name), dict):
            header[name] = value
        else:
            header[name] = {**header[name], what: value}
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.one_of(
            st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3), ANY_JSON))
    removed = draw(st.lists(st.sampled_from(list(EXPECTED)), max_size=2, unique=True))
    for name in removed:
        header.pop(name, None)
    text = json.dumps(header).encode()
    declared = len(text) + draw(st.sampled_from([0, 0, 0, -1, 1, 2**40, -len(text)]))
    extra = draw(st.sampled_from([0, 0, 0, -4, 4]))
    data = bytes(max(0, data_length + extra))
    prefix = struct.pack("<Q", max(0, declared))
    untouched = not (mutations or removed or declared != len(text) or extra
                     or "__metadata__" in header)
    return prefix + text + data, untouched


@st.composite
def raw_headers(draw: st.DrawFn) -> bytes:
    """A length prefix and any header text (often JSON-like), then some data bytes."""
    text = draw(st.one_of(
        st.binary(max_size=60),
        ANY_JSON.map(lambda value: json.dumps(value).encode()),
        st.text(alphabet='{}[]":,0123456789-eE.NaInfity dtypeshap_ofF3216', max_size=60)
        .map(str.encode),
        st.sampled_from([9, 4300, 4301, 5001]).map(
            lambda digits: b'{"a": {"dtype": "F32", "shape": [' + b"9" * digits
            + b'], "data_offsets": [0, 0]}}'),
    ))
    declared = len(text) + draw(st.sampled_from([0, 0, -1, 1, 2**63]))
    return struct.pack("<Q", max(0, min(declared, 2**64 - 1))) + text + draw(st.binary(max_size=8))


def assert_fits_mnist(header: SafetensorsHeader, size: int) -> None:
    """What inspect_safetensors promises of a header it accepts."""
    assert set(EXPECTED) <= set(header.tensors) <= set(EXPECTED) | IGNORED[ARCHITECTURE]
    position = 0
    for entry in sorted(header.tensors.values(), key=lambda e: e.begin):
        assert entry.begin == position and entry.dtype in FLOAT_DTYPES
        assert entry.shape == EXPECTED[entry.name]
        position = entry.end
    assert position == size - 8 - header.header_length
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in header.metadata.items())


def refused_by_code(error: CheckpointError) -> str:
    assert error.code in CODES, error
    assert isinstance(error.message, str) and error.message.strip()
    event(error.code)
    return error.code


@settings(max_examples=300, deadline=None)
@given(file=safetensors_files())
def test_it_accepts_or_refuses_by_code_a_mutated_safetensors_header(
    file: tuple[bytes, bool]
) -> None:
    content, untouched = file
    try:
        header = inspect_safetensors(content, ARCHITECTURE)
    except CheckpointError as error:
        assert refused_by_code(error).startswith("safetensors_")
        assert not untouched, error
        return
    event("accepted")
    assert_fits_mnist(header, len(content))


@settings(max_examples=300, deadline=None)
@given(content=raw_headers())
def test_it_refuses_by_code_any_random_safetensors_header(content: bytes) -> None:
    try:
        header = inspect_safetensors(content, ARCHITECTURE)
    except CheckpointError as error:
        assert refused_by_code(error).startswith("safetensors_")
        return
    assert_fits_mnist(header, len(content))  # a random header that fits: not expected


def _tiny_onnx(elem_in: int, elem_out: int, dims_in: list[Any], dims_out: list[Any],
               opset: int, ir_version: int) -> bytes:
    """y = the first 10 pixels of flatten(x): a valid mnist model at the defaults."""
    x = helper.make_tensor_value_info("x", elem_in, dims_in)
    y = helper.make_tensor_value_info("y", elem_out, dims_out)
    nodes = [helper.make_node("Flatten", ["x"], ["flat"], axis=1),
             helper.make_node("Slice", ["flat", "starts", "ends", "axes"], ["y"])]
    bounds = [helper.make_tensor(name, TensorProto.INT64, [1], [value])
              for name, value in (("starts", 0), ("ends", 10), ("axes", 1))]
    model = helper.make_model(helper.make_graph(nodes, "tiny", [x], [y], bounds),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model.SerializeToString()


DIMS = st.one_of(st.integers(-2, 30), st.sampled_from(["N", "", "batch"]))
ONNX_MODELS = st.builds(
    _tiny_onnx,
    elem_in=st.one_of(st.just(TensorProto.FLOAT), st.integers(0, 40), st.integers(0, 2**31 - 1)),
    elem_out=st.one_of(st.just(TensorProto.FLOAT), st.integers(0, 40), st.integers(0, 2**31 - 1)),
    dims_in=st.one_of(st.just(["N", 1, 28, 28]), st.lists(DIMS, max_size=5)),
    dims_out=st.one_of(st.just(["N", 10]), st.lists(DIMS, max_size=3)),
    opset=st.one_of(st.just(17), st.integers(0, 30)),
    ir_version=st.one_of(st.just(8), st.integers(0, 12)),
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """Some bytes replaced, inserted or cut off."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(data)))
        change = draw(st.sampled_from(["replace", "insert", "cut"]))
        if change == "cut":
            del data[position:]
        elif change == "insert" or position == len(data):
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        else:
            data[position] = draw(st.integers(0, 255))
    return bytes(data)


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in dict(members).items():  # one member per name
            # zipfile cuts a name at a NUL and fails on the empty rest: this is the test's
            # writer, not the upload under test, so such a name is written as "x"
            archive.writestr(name.split("\x00")[0] or "x", data)
    return buffer.getvalue()


CHECKPOINTS = st.one_of(
    st.binary(max_size=200),
    ONNX_MODELS,
    mutated(ONNX_MODELS),
    safetensors_files().map(lambda file: file[0]),
    mutated(raw_headers()),
    st.lists(st.tuples(st.sampled_from(["archive/data.pkl", "model.onnx", "a/version", ""]),
                       st.binary(max_size=20)), max_size=3).map(_zip),
    mutated(st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=20)), max_size=2)
            .map(_zip)),
    st.builds(pickle.dumps, ANY_JSON, protocol=st.integers(0, 5)),
    st.just(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"),
)


@settings(max_examples=400, deadline=None)
@given(content=CHECKPOINTS, name=st.sampled_from(NAMES), parse_onnx=st.booleans())
def test_it_accepts_or_refuses_by_code_any_uploaded_checkpoint(
    content: bytes, name: str, parse_onnx: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "upload"
        path.write_bytes(content)
        try:
            info = detect_and_validate(path, inputs=MNIST, original_name=name,
                                       max_bytes=1 << 20, parse_onnx=parse_onnx)
        except CheckpointError as error:
            refused_by_code(error)
            return
    event(f"accepted {info.format}")
    assert isinstance(info, CheckpointInfo)
    assert name.lower().endswith(f".{info.format}")
    assert info.size_bytes == len(content) and info.original_name == name
    if info.format == "onnx" and parse_onnx:  # the graph was checked: it parses
        assert onnx.load_model_from_string(content).graph.output[0].name == "y"


@pytest.mark.parametrize(("elem_in", "elem_out", "code", "message"), [
    (29, TensorProto.FLOAT, "onnx_input_type",
     "input 'x' has element type 29 (not an ONNX type); it must be FLOAT"),
    (TensorProto.FLOAT, 999, "onnx_output_shape",
     "output 'y' has element type 999 (not an ONNX type); it must be a floating-point type"),
])
def test_it_refuses_an_onnx_element_type_that_names_no_type(
    tmp_path: Path, elem_in: int, elem_out: int, code: str, message: str
) -> None:
    """Found by the fuzz above: DataType.Name(29) raised ValueError out of check_signature."""
    path = tmp_path / "model.onnx"
    path.write_bytes(_tiny_onnx(elem_in, elem_out, ["N", 1, 28, 28], ["N", 10], 17, 8))

    with pytest.raises(CheckpointError) as caught:
        detect_and_validate(path, inputs=MNIST, original_name=path.name)

    assert (caught.value.code, caught.value.message) == (code, message)
