"""A torch.fx.GraphModule as the node records ctshard._ext.plan_records reads.

A record is ``(name, op, target, args, kwargs, outputs, sym[, submodule])``: ``op`` is the FX
node kind, ``target`` the callee as the FX text reader names it (``aten.mm.default``,
``getitem``, ``higher_order.auto_functionalized``), ``args``/``kwargs`` plain values with node
references as ``{"node": name}``, dicts (flex attention's kernel options) as
``{"dict": [[key, value], ...]}``, sets as lists, and other objects (dtypes, devices, memory
formats, complex numbers, ``...``) as ``{"opaque": text}`` in the text reader's spelling,
``outputs`` one ``(dtype short name, shape)`` per result (dtype ``""`` when unknown), and ``sym``
the expression of a symbolic value (``str(SymInt)``, as the printout's ``"Sym(expr)"``
annotation) or ``""``; a get_attr node of a submodule (a GraphModule: flex attention's score_mod
and mask_mod) adds the submodule's own records, as the text reader reads print_readable's nested
classes. Shapes come from ``node.meta["val"]`` (fake tensors: make_fx, AOT
autograd, torch.export) or ``node.meta["tensor_meta"]`` (ShapeProp); a symbolic size is its
expression string (``str(SymInt)``: ``"s77"``, ``"1024*s77"``, ``"(s1//2)"``), exactly as
``print_readable`` prints it, so a GraphModule and its printout give the same graph.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import torch

_DTYPES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.complex128: "c128", torch.complex64: "c64", torch.complex32: "c32",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "b8",
}
for _name, _short in [("float8_e4m3fn", "f8e4m3fn"), ("float8_e5m2", "f8e5m2"), ("float8_e4m3fnuz", "f8e4m3fnuz"),
                      ("float8_e5m2fnuz", "f8e5m2fnuz"), ("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64")]:
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _short

_UNKNOWN = ("", [])


def dtype_name(dtype: torch.dtype) -> str:
    """The FX annotation name of a dtype (``torch.float32`` -> ``"f32"``); ``""`` if unknown."""
    return _DTYPES.get(dtype, "")


_SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _size(s: Any) -> int | str:
    """A static size as an int, a symbolic one as its expression (``str(SymInt)``)."""
    if isinstance(s, torch.SymInt):
        text = str(s)
        return int(text) if text.isdigit() else text
    return int(s)


def _shape(sizes) -> list[int | str] | None:
    try:
        return [_size(s) for s in sizes]
    except Exception:  # a size that is neither an int nor a SymInt: the type stays unknown
        return None


def _type_of(value: Any) -> tuple[str, list[int]]:
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if not isinstance(dtype, torch.dtype) or shape is None:
        return _UNKNOWN
    sizes = _shape(shape)
    name = dtype_name(dtype)
    return (name, sizes) if sizes is not None and name else _UNKNOWN


def _outputs(node: torch.fx.Node) -> list[tuple[str, list[int | str]]]:
    val = node.meta.get("val", node.meta.get("tensor_meta"))
    if val is None or isinstance(val, _SYM_TYPES):
        return []
    if isinstance(val, (list, tuple)) and not hasattr(val, "dtype"):
        return [_type_of(v) if v is not None else _UNKNOWN for v in val]
    return [_type_of(val)]


def target_name(target: Any) -> str:
    """The callee of a call_function node as the FX text reader names it."""
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return "higher_order." + target.name()
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or ""
    return (module + "." if module else "") + getattr(target, "__name__", repr(target))


def _arg(value: Any) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_arg(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_arg(v) for v in value]
    if isinstance(value, dict):  # flex attention's kernel_options
        return {"dict": [[_arg(k), _arg(v)] for k, v in value.items()]}
    if value is Ellipsis:
        return {"opaque": "..."}
    if isinstance(value, complex):
        return {"opaque": repr(value)}
    if isinstance(value, torch.device):
        return {"opaque": repr(value)}
    if isinstance(value, torch._ops.OpOverload):  # auto_functionalized's first argument
        return {"opaque": str(value).replace("torch.ops.", "")}
    return {"opaque": str(value)}  # a SymInt not bound to a node, dtypes, layouts, ...


def _sym(node: torch.fx.Node) -> str:
    """The expression of a symbolic value (SymInt / SymFloat / SymBool meta["val"]), else ""."""
    val = node.meta.get("val")
    return str(val) if node.op != "output" and isinstance(val, _SYM_TYPES) else ""


def _submodule(gm: torch.fx.GraphModule, node: torch.fx.Node, depth: int) -> list[tuple] | None:
    """The records of the GraphModule a get_attr node names, or None (a tensor, a plain module)."""
    if node.op != "get_attr" or depth >= _MAX_SUBMODULE_DEPTH:
        return None
    try:
        sub = gm.get_submodule(str(node.target))
    except AttributeError:
        return None
    return node_records(sub, depth + 1) if isinstance(sub, torch.fx.GraphModule) else None


_MAX_SUBMODULE_DEPTH = 16  # fx::max_submodule_depth


def node_records(gm: torch.fx.GraphModule, depth: int = 0) -> list[tuple]:
    """The records of every node of ``gm.graph``, in graph order."""
    records = []
    for node in gm.graph.nodes:
        target = node.target if node.op != "call_function" else target_name(node.target)
        record = (
            node.name,
            node.op,
            str(target),
            [_arg(a) for a in node.args],
            {k: _arg(v) for k, v in node.kwargs.items()},
            _outputs(node) if node.op != "output" else [],
            _sym(node),
        )
        sub = _submodule(gm, node, depth)
        records.append(record if sub is None else record + (sub,))
    return records


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _record_symbols(records: list[tuple], found: set[str]) -> None:
    """The identifiers in the records' symbolic sizes and Sym expressions (submodules' too)."""
    for record in records:
        for _dtype, shape in record[5]:
            for s in shape or ():
                if isinstance(s, str):
                    found.update(_IDENT.findall(s))
        if record[6]:
            found.update(_IDENT.findall(record[6]))
        if len(record) > 7:
            _record_symbols(record[7], found)


def symbol_hints(gm: torch.fx.GraphModule, records: list[tuple]) -> dict[str, int]:
    """Symbol name -> its hint in the ShapeEnv of ``gm``'s fake values (the size of the example
    input it was traced from: ``make_fx(..., tracing_mode="symbolic")``, ``torch.export`` with
    ``Dim``), for the symbols that the graph's ``records`` (``node_records(gm)``) use. Symbols
    without a hint (unbacked ones) are left out."""
    env = None
    for node in gm.graph.nodes:
        vals = node.meta.get("val")
        for v in vals if isinstance(vals, (list, tuple)) else (vals,):
            sizes = list(v.shape) if hasattr(v, "shape") else [v]
            env = next((s.node.shape_env for s in sizes if isinstance(s, torch.SymInt)), None)
            if env is not None:
                break
        if env is not None:
            break
    if env is None:
        return {}
    used: set[str] = set()
    _record_symbols(records, used)
    hints = {}
    values = getattr(env, "backed_var_to_val", None)  # torch 2.13's name (var_to_val is deprecated)
    for symbol, value in (values if values is not None else getattr(env, "var_to_val", {})).items():
        name = str(symbol)
        if name in used:
            try:
                hints[name] = int(value)
            except (TypeError, ValueError):
                continue
    return hints


# call_function targets from these modules are PyTorch's Python-level API (torch.relu,
# torch.nn.functional.linear): a graph holding them is not at the aten level
_TORCH_FUNCTION_MODULES = ("torch", "torch.functional", "torch.nn.functional", "torch._C._nn", "torch._C._VariableFunctions",
                           "torch._C._linalg", "torch._C._special", "torch._C._fft", "torch._tensor")


def torch_level_nodes(gm: torch.fx.GraphModule) -> list[str]:
    """The nodes that show ``gm`` is above the aten level (a Dynamo backend's graph,
    ``torch.fx.symbolic_trace``): ``call_module`` and ``call_method`` nodes and calls of torch's
    Python functions (``torch.relu``, ``torch._C._nn.linear``), as ``"call_module up"`` /
    ``"torch.relu"``; empty for an aten-level graph (ops, higher-order ops, ``operator`` and
    torch's private and ``sym_`` helpers)."""
    op_types = (torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch._ops.HigherOrderOperator)
    found = []
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method"):
            found.append(f"{node.op} {node.target}")
        elif node.op == "call_function" and not isinstance(node.target, op_types):
            module = getattr(node.target, "__module__", None) or ""
            name = getattr(node.target, "__name__", "") or ""
            if module in _TORCH_FUNCTION_MODULES and not name.startswith(("_", "sym_")):
                found.append(f"{module.replace('torch._C._nn', 'torch.nn.functional')}.{name}")
    return found


def needs_decomposition(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` (a ``torch.export`` program's graph) calls an aten op outside the core ATen
    IR (``linear``, ``layer_norm``, ``softmax.int``, ...: what ``run_decompositions()`` lowers)."""
    for node in gm.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and target.namespace == "aten" \
                and torch.Tag.core not in target.tags:
            return True
    return False


def to_aten(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
    """``gm`` brought to the core ATen level: ``torch.export.export(gm, example_inputs)`` then
    ``run_decompositions()`` (an ``ExportedProgram``; its signature names the parameters).
    Raises ValueError naming the module when export fails."""
    inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    try:
        return torch.export.export(gm, inputs).run_decompositions()
    except Exception as e:  # export's errors are of many types; the cause is kept
        raise ValueError(f"ctshard.plan: cannot export {type(gm).__name__} with the example inputs to bring it to the aten level: "
                         f"{type(e).__name__}: {str(e)[:500]}") from e
