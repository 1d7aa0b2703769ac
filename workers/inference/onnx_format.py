"""Checking an ONNX model before any runtime sees it.

An ONNX file is a protobuf, not code, but three features would let an upload reach beyond
itself, so they are refused wherever they occur (main graph, subgraphs of If/Loop/Scan,
attribute tensors):
- external data: a tensor whose bytes live in another file, named by a path that could be
  "../../etc/passwd" or a file of another submission;
- operators outside the standard "" / "ai.onnx" domain, which a runtime resolves to custom
  kernels or model-local functions;
- training information (a second set of graphs the runtime could execute).
Then the model must have one float32 [N, C, H, W] input and one [N, num_classes] output, so
that a wrong preprocessing guess is caught at upload rather than as a useless score.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto

from workers.inference.errors import CheckpointError

STANDARD_DOMAINS = frozenset({"", "ai.onnx"})
OUTPUT_ELEM_TYPES = {
    TensorProto.FLOAT: "float32",
    TensorProto.FLOAT16: "float16",
    TensorProto.DOUBLE: "float64",
    TensorProto.BFLOAT16: "bfloat16",
}


@dataclass(frozen=True)
class OnnxSummary:
    input_name: str
    output_name: str
    fixed_batch: int | None  # the model accepts only this batch size (None: any)
    opset: int
    output_dtype: str
    num_nodes: int
    producer: str


def parse_model(data: bytes) -> ModelProto:
    """Bytes -> ModelProto without resolving external data; anything unparseable is refused."""
    if not data:
        raise CheckpointError("empty_file", "the file is empty")
    try:
        model = onnx.load_model_from_string(data, format="protobuf")
    except Exception as exc:  # protobuf raises DecodeError, or RuntimeError for some input
        raise CheckpointError(
            "onnx_invalid", f"the file is not an ONNX model (protobuf parse failed: {exc})"
        ) from None
    if not model.HasField("graph") or model.ir_version <= 0 or not model.opset_import:
        raise CheckpointError(
            "onnx_invalid", "the file is not an ONNX model (no graph, IR version or opset)"
        )
    return model


def _subgraphs(node: NodeProto) -> Iterator[GraphProto]:
    for attribute in node.attribute:
        if attribute.type == AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == AttributeProto.GRAPHS:
            yield from attribute.graphs


def _all_graphs(graph: GraphProto) -> Iterator[GraphProto]:
    """The graph and, recursively, every subgraph held by a node attribute."""
    yield graph
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _all_graphs(sub)


def _graph_tensors(graph: GraphProto) -> Iterator[tuple[str, TensorProto]]:
    """(where, tensor) for every tensor stored in one graph (not its subgraphs)."""
    for tensor in graph.initializer:
        yield f"initializer {tensor.name!r}", tensor
    for sparse in graph.sparse_initializer:
        yield f"sparse initializer {sparse.values.name!r}", sparse.values
        yield f"sparse initializer {sparse.values.name!r}", sparse.indices
    for node in graph.node:
        where = f"attribute of node {node.name or node.op_type!r}"
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield where, attribute.t
            for tensor in attribute.tensors:
                yield where, tensor
            if attribute.HasField("sparse_tensor"):
                yield where, attribute.sparse_tensor.values
                yield where, attribute.sparse_tensor.indices
            for sparse in attribute.sparse_tensors:
                yield where, sparse.values
                yield where, sparse.indices


def check_structure(model: ModelProto) -> None:
    """External data, domains, functions and training info: the reach-beyond features."""
    for opset in model.opset_import:
        if opset.domain not in STANDARD_DOMAINS:
            raise CheckpointError(
                "onnx_custom_domain",
                f"the model imports operator domain {opset.domain!r}; only the standard ONNX "
                "operators (domain '' / 'ai.onnx') are accepted",
            )
    if model.functions:
        raise CheckpointError(
            "onnx_custom_domain",
            f"the model defines {len(model.functions)} local function(s); only the standard "
            "ONNX operators are accepted (export with functions inlined)",
        )
    if model.training_info:
        raise CheckpointError("onnx_invalid", "the model carries training information")
    for graph in _all_graphs(model.graph):
        for node in graph.node:
            if node.domain not in STANDARD_DOMAINS:
                raise CheckpointError(
                    "onnx_custom_domain",
                    f"node {node.name or node.op_type!r} uses operator {node.op_type!r} of "
                    f"domain {node.domain!r}; only the standard ONNX operators are accepted",
                )
        for where, tensor in _graph_tensors(graph):
            if tensor.data_location == TensorProto.EXTERNAL or len(tensor.external_data) > 0:
                location = next((e.value for e in tensor.external_data if e.key == "location"), "")
                raise CheckpointError(
                    "onnx_external_data",
                    f"the {where} keeps its data in an external file ({location!r}); upload a "
                    "single self-contained .onnx file (torch.onnx.export with "
                    "external_data=False, models under 2 GB)",
                )


def _dims(value: onnx.ValueInfoProto) -> list[int | str | None]:
    """Each dimension as an int (fixed), a str (symbolic) or None (unknown)."""
    dims: list[int | str | None] = []
    for dim in value.type.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return dims


def check_signature(
    model: ModelProto, *, input_shape: tuple[int, int, int], num_classes: int
) -> tuple[str, str, int | None, str]:
    """(input name, output name, fixed batch or None, output dtype) of a conforming model."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}  # IR < 4 lists them among the inputs
    inputs = [v for v in graph.input if v.name not in initializers]
    c, h, w = input_shape
    want = f"[N, {c}, {h}, {w}]"
    if len(inputs) != 1:
        raise CheckpointError(
            "onnx_input_shape",
            f"the model has {len(inputs)} inputs; it must have exactly one, of shape {want}",
        )
    image = inputs[0]
    if not image.type.HasField("tensor_type"):
        raise CheckpointError("onnx_input_type", f"input {image.name!r} is not a tensor")
    if image.type.tensor_type.elem_type != TensorProto.FLOAT:
        found = _type_name(image.type.tensor_type.elem_type)
        raise CheckpointError(
            "onnx_input_type", f"input {image.name!r} has element type {found}; it must be FLOAT"
        )
    dims = _dims(image) if image.type.tensor_type.HasField("shape") else []
    if len(dims) != 4 or dims[1:] != [c, h, w] or (isinstance(dims[0], int) and dims[0] < 1):
        raise CheckpointError(
            "onnx_input_shape",
            f"input {image.name!r} has shape {_show(dims)}; this benchmark feeds {want} "
            "(N may be symbolic)",
        )
    fixed_batch = dims[0] if isinstance(dims[0], int) else None

    if len(graph.output) != 1:
        raise CheckpointError(
            "onnx_output_shape",
            f"the model has {len(graph.output)} outputs; it must have exactly one, of shape "
            f"[N, {num_classes}]",
        )
    scores = graph.output[0]
    if not scores.type.HasField("tensor_type"):
        raise CheckpointError("onnx_output_shape", f"output {scores.name!r} is not a tensor")
    elem = scores.type.tensor_type.elem_type
    if elem not in OUTPUT_ELEM_TYPES:
        raise CheckpointError(
            "onnx_output_shape",
            f"output {scores.name!r} has element type {_type_name(elem)}; "
            "it must be a floating-point type",
        )
    out = _dims(scores) if scores.type.tensor_type.HasField("shape") else []
    batch_ok = out[:1] != [] and (not isinstance(out[0], int) or out[0] == fixed_batch)
    if len(out) != 2 or out[1] != num_classes or not batch_ok:
        raise CheckpointError(
            "onnx_output_shape",
            f"output {scores.name!r} has shape {_show(out)}; it must be [N, {num_classes}] "
            "with the same N as the input (export with dynamic_axes for both)",
        )
    return image.name, scores.name, fixed_batch, OUTPUT_ELEM_TYPES[elem]


def _type_name(elem: int) -> str:
    """FLOAT, INT64, ...; elem_type is a plain int32 in the protobuf, so a file may hold a
    number that names no type (DataType.Name would raise ValueError)."""
    try:
        return str(TensorProto.DataType.Name(elem))
    except ValueError:
        return f"{elem} (not an ONNX type)"


def _show(dims: list[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]" if dims else "unknown"


def inspect_onnx(
    data: bytes, *, input_shape: tuple[int, int, int], num_classes: int
) -> tuple[ModelProto, OnnxSummary]:
    """The full pre-load check of ONNX bytes; returns the parsed model and its summary."""
    model = parse_model(data)
    check_structure(model)  # before check_model, so that the reason is precise
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # ValidationError, or C++ errors surfaced as other types
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else type(exc).__name__
        raise CheckpointError(
            "onnx_invalid", f"the ONNX checker refused it: {first_line[:300]}"
        ) from None
    input_name, output_name, fixed_batch, output_dtype = check_signature(
        model, input_shape=input_shape, num_classes=num_classes
    )
    opset = next(o.version for o in model.opset_import if o.domain in STANDARD_DOMAINS)
    summary = OnnxSummary(
        input_name=input_name,
        output_name=output_name,
        fixed_batch=fixed_batch,
        opset=int(opset),
        output_dtype=output_dtype,
        num_nodes=len(model.graph.node),
        producer=f"{model.producer_name} {model.producer_version}".strip(),
    )
    return model, summary
