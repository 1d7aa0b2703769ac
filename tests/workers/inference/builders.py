"""Small hand-built checkpoints for the inference tests: ONNX graphs (good, hostile, slow,
greedy, broken) written with onnx.helper, and raw safetensors files written byte by byte so
that a test can break exactly one thing in the header."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], initializers: list[onnx.TensorProto],
           opsets: list[onnx.OperatorSetIdProto] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def image_input(shape: list[int | str] | None = None,
                elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("x", elem, shape or ["N", 1, 28, 28])


def scores_output(name: str = "y", shape: list[int | str] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape or ["N", 10])


def linear_nodes(features: int, classes: int, out: str = "y",
                 seed: int = 0) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """y = flatten(x) @ W + b, with seeded weights."""
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal((features, classes)).astype(np.float32) * 0.01
    bias = rng.standard_normal(classes).astype(np.float32)
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "W"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], [out]),
    ]
    return nodes, [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")]


def linear_model(shape: tuple[int, int, int] = (1, 28, 28), classes: int = 10,
                 batch: int | str = "N") -> onnx.ModelProto:
    """A valid linear classifier for images of `shape`."""
    c, h, w = shape
    nodes, inits = linear_nodes(c * h * w, classes)
    return _model(nodes, [image_input([batch, c, h, w])], [scores_output("y", [batch, classes])],
                  inits)


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def with_external_initializer(location: str) -> onnx.ModelProto:
    """The linear model with W's bytes 'stored' in an external file at `location`."""
    model = linear_model()
    weight = model.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.ClearField("float_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "31360")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return model


def with_external_tensor_in_subgraph(location: str) -> onnx.ModelProto:
    """External data hidden in a Constant inside an If branch, not in the initializers."""
    nodes, inits = linear_nodes(784, 10, out="lin")
    hidden = numpy_helper.from_array(np.zeros(10, np.float32), "hidden")
    hidden.ClearField("raw_data")
    hidden.data_location = TensorProto.EXTERNAL
    entry = hidden.external_data.add()
    entry.key, entry.value = "location", location
    branch_out = helper.make_tensor_value_info("branch", TensorProto.FLOAT, [10])
    then_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["branch"], value=hidden)], "then", [], [branch_out])
    else_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["branch"],
                          value=numpy_helper.from_array(np.zeros(10, np.float32)))],
        "else", [], [branch_out])
    nodes += [
        helper.make_node("Constant", [], ["flag"], value=helper.make_tensor("f", TensorProto.BOOL,
                                                                            [], [True])),
        helper.make_node("If", ["flag"], ["offset"], then_branch=then_graph,
                         else_branch=else_graph),
        helper.make_node("Add", ["lin", "offset"], ["y"]),
    ]
    return _model(nodes, [image_input()], [scores_output()], inits)


def with_custom_op(import_domain: bool = True) -> onnx.ModelProto:
    nodes, inits = linear_nodes(784, 10, out="lin")
    nodes.append(helper.make_node("Evil", ["lin"], ["y"], domain="com.example.evil"))
    opsets = [helper.make_opsetid("", OPSET)]
    if import_domain:
        opsets.append(helper.make_opsetid("com.example.evil", 1))
    return _model(nodes, [image_input()], [scores_output()], inits, opsets)


def greedy_model(extra: int = 1 << 22) -> onnx.ModelProto:
    """Correct output shape [N, 10], but builds an [N, 10, extra] float tensor on the way:
    160 MB per image for the default `extra`."""
    nodes, inits = linear_nodes(784, 10, out="lin")
    inits += [
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([10, extra], np.int64), "tail"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
    ]
    nodes += [
        helper.make_node("Shape", ["x"], ["xshape"]),
        helper.make_node("Slice", ["xshape", "zero", "one"], ["n"]),
        helper.make_node("Concat", ["n", "tail"], ["big_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["big_shape"], ["big"],
                         value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("ReduceSum", ["big", "axis2"], ["total"], keepdims=0),
        helper.make_node("Add", ["lin", "total"], ["y"]),
    ]
    return _model(nodes, [image_input()], [scores_output()], inits)


def endless_model() -> onnx.ModelProto:
    """A Loop of 10**15 iterations of Sin over the [N, 10] scores: it never returns."""
    nodes, inits = linear_nodes(784, 10, out="lin")
    inits += [numpy_helper.from_array(np.array(10**15, np.int64), "trips"),
              numpy_helper.from_array(np.array(True), "go")]
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Sin", ["v_in"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)],
    )
    nodes.append(helper.make_node("Loop", ["trips", "go", "lin"], ["y"], body=body))
    return _model(nodes, [image_input()], [scores_output()], inits)


def nan_model() -> onnx.ModelProto:
    """Scores sqrt(-1 - |y|): NaN everywhere."""
    nodes, inits = linear_nodes(784, 10, out="lin")
    inits.append(numpy_helper.from_array(np.array(-1.0, np.float32), "minus_one"))
    nodes += [
        helper.make_node("Abs", ["lin"], ["a"]),
        helper.make_node("Sub", ["minus_one", "a"], ["neg"]),
        helper.make_node("Sqrt", ["neg"], ["y"]),
    ]
    return _model(nodes, [image_input()], [scores_output()], inits)


def lying_model() -> onnx.ModelProto:
    """Declares [N, 10] but returns [N, 5]."""
    nodes, inits = linear_nodes(784, 5)
    return _model(nodes, [image_input()], [scores_output()], inits)


def failing_model() -> onnx.ModelProto:
    """Reshapes the [N, 10] scores to [3, 7] at run time: an error inside the runtime."""
    nodes, inits = linear_nodes(784, 10, out="lin")
    inits.append(numpy_helper.from_array(np.array([3, 7], np.int64), "bad_shape"))
    nodes.append(helper.make_node("Reshape", ["lin", "bad_shape"], ["y"]))
    return _model(nodes, [image_input()], [scores_output()], inits)


# -- safetensors, byte by byte ------------------------------------------------------------

def safetensors_bytes(tensors: dict[str, np.ndarray],
                      header_edit: Any = None, metadata: Any = None) -> bytes:
    """A safetensors file of `tensors` (float32/float16/int64 arrays, in order); header_edit
    may change the header dict before it is written."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.int64): "I64", np.dtype(np.int32): "I32"}
    header: dict[str, Any] = {}
    data = b""
    for key, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[key] = {"dtype": names[array.dtype], "shape": list(array.shape),
                       "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    if header_edit is not None:
        header_edit(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


# -- pickles whose loading would act ------------------------------------------------------

class Touch:
    """Unpickling this creates (opens for writing) `target`."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.target), "w"))


class Shell:
    """Unpickling this runs `touch target` in a shell."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (f"touch {self.target}",))


def hostile_pickle(target: Path, *, shell: bool = False, protocol: int = 4) -> bytes:
    payload = Shell(target) if shell else Touch(target)
    return pickle.dumps({"state_dict": payload}, protocol=protocol)
