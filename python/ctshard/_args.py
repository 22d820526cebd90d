"""The Python API's arguments in PyTorch's terms, converted in one place: meshes (a ``DeviceMesh``,
sizes, an int, ``"2x4"``), placements (spec text or DTensor placement sequences) and the names
``place`` takes (graph input names, parameter and buffer FQNs of a ``torch.export`` program).

Every function takes ``where`` (the calling function, ``"ctshard.plan"``) and raises ValueError or
TypeError naming it and the argument, in Python terms. None of them imports torch: a PyTorch
object is recognised by its class (torch is loaded when the caller holds one)."""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Union

__all__ = ["MeshLike", "PlacementLike", "mesh_sizes", "spec_text", "spec_list", "place_specs", "GraphNames", "graph_names"]

#: What a ``mesh`` argument may be: a ``torch.distributed.DeviceMesh`` (its shape), a sequence of
#: positive sizes (mesh dim 0 first), one size (a 1-d mesh) or text ``"2x4"`` / ``"8"``.
MeshLike = Union[Any, Sequence[int], int, str]
#: A placement value: spec text (``"S(0)R"``) or DTensor placements, one per mesh dim
#: (``(Shard(0), Replicate())``; a single placement for a 1-d mesh).
PlacementLike = Union[str, Sequence[Any], Any]

_MESH_TEXT = re.compile(r"\s*[0-9]+(\s*[xX×]\s*[0-9]+)*\s*")


def _is_device_mesh(value: Any) -> bool:
    module = sys.modules.get("torch.distributed.device_mesh")
    cls = getattr(module, "DeviceMesh", None) if module is not None else None
    return cls is not None and isinstance(value, cls)


def _is_placement(value: Any) -> bool:
    module = sys.modules.get("torch.distributed.tensor.placement_types")
    cls = getattr(module, "Placement", None) if module is not None else None
    return cls is not None and isinstance(value, cls)


def mesh_sizes(mesh: MeshLike, where: str, argument: str = "mesh") -> list[int]:
    """The mesh sizes of ``mesh`` (mesh dim 0 first): a ``DeviceMesh``'s shape, a sequence of
    positive ints (``[2, 4]``, a ``torch.Size``), one int (``8`` -> ``[8]``) or text with ``x``
    between sizes (``"2x4"``). TypeError for another type (a float, a set, None), ValueError for
    an empty mesh, a size below 1 or unreadable text; both name ``where`` and ``argument``."""
    if _is_device_mesh(mesh):
        return [int(s) for s in mesh.shape]
    if isinstance(mesh, bool):
        raise TypeError(f"{where}: {argument} must be a DeviceMesh, a sequence of sizes, an int or text like '2x4', got bool")
    if isinstance(mesh, (str, bytes)):
        text = mesh.decode() if isinstance(mesh, bytes) else mesh
        if not _MESH_TEXT.fullmatch(text):
            raise ValueError(f"{where}: {argument}={mesh!r} is not mesh sizes like '2x4' or '8'")
        sizes = [int(s) for s in re.split(r"[xX×]", text)]
    elif hasattr(mesh, "__index__"):
        sizes = [operator.index(mesh)]
    elif isinstance(mesh, Sequence) or (hasattr(mesh, "__iter__") and hasattr(mesh, "__len__") and not isinstance(mesh, (set, frozenset, Mapping))):
        sizes = []
        for s in mesh:
            if isinstance(s, bool) or not hasattr(s, "__index__"):
                raise TypeError(f"{where}: {argument} sizes must be ints, got {type(s).__name__} {s!r} in {list(mesh)!r}")
            sizes.append(operator.index(s))
    else:
        raise TypeError(f"{where}: {argument} must be a DeviceMesh, a sequence of sizes, an int or text like '2x4', "
                        f"got {type(mesh).__name__}")
    if not sizes:
        raise ValueError(f"{where}: {argument} has no mesh dims (give at least one size)")
    for d, s in enumerate(sizes):
        if s < 1:
            raise ValueError(f"{where}: {argument} dim {d} has size {s} (sizes must be positive): {sizes}")
    return sizes


def spec_text(value: PlacementLike, where: str, argument: str) -> str:
    """Spec text of a placement value: text as given (the extension checks it), DTensor placements
    (a sequence, a single one, a DTensor or DTensorSpec) as ``ctshard.torch.to_spec`` writes them.
    TypeError for anything else, ValueError for a placement ctshard cannot express."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{where}: {argument} is not valid text (it has no UTF-8 form, e.g. a lone surrogate): {ascii(value)}") from None
        return value
    if hasattr(value, "placements") and not isinstance(value, (str, bytes)):
        value = value.placements
    if _is_placement(value):
        value = (value,)
    if isinstance(value, Sequence) and value and all(_is_placement(p) for p in value):
        from ._placements import to_spec

        try:
            return to_spec(value)
        except ValueError as e:
            raise ValueError(f"{where}: {argument}: {e}") from None
    raise TypeError(f"{where}: {argument} must be a spec string ('S(0)R') or DTensor placements "
                    f"((Shard(0), Replicate())), got {type(value).__name__} {value!r}"[:400])


def spec_list(values: Sequence[PlacementLike], where: str, argument: str) -> list[str]:
    """Spec text of each value of a sequence (``spec_text``); TypeError when ``values`` is a string
    or not a sequence."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{where}: {argument} must be a list with one placement per tensor input, got {type(values).__name__} {values!r}"[:400])
    return [spec_text(v, where, f"{argument}[{i}]") for i, v in enumerate(values)]


class GraphNames:
    """The names ``place`` may use for a graph's inputs: ``inputs`` the tensor placeholders' names
    in order, ``aliases`` a parameter / buffer / constant FQN -> its placeholder (a ``torch.export``
    program's graph signature)."""

    def __init__(self, inputs: Sequence[str], aliases: Mapping[str, str] | None = None):
        self.inputs = list(inputs)
        self.aliases = dict(aliases or {})

    def valid(self) -> list[str]:
        """Every accepted name: the FQNs first (as a user knows them), then the placeholders."""
        return list(self.aliases) + [n for n in self.inputs if n not in self.aliases]


def graph_names(gm: Any, signature: Any = None) -> GraphNames:
    """The place names of an FX GraphModule (its placeholders: a symbolic integer input is
    refused by the planner, which says so) and, with a ``torch.export`` graph signature, the FQNs
    of its lifted parameters, buffers and constants."""
    inputs = [node.name for node in gm.graph.nodes if node.op == "placeholder"]
    aliases: dict[str, str] = {}
    for spec in getattr(signature, "input_specs", None) or ():
        target = getattr(spec, "target", None)
        name = getattr(getattr(spec, "arg", None), "name", None)
        if isinstance(target, str) and isinstance(name, str):
            aliases[target] = name
    return GraphNames(inputs, aliases)


def _names_list(names: Sequence[str], limit: int = 40) -> str:
    shown = ", ".join(map(repr, names[:limit]))
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def place_specs(place: Mapping[str, PlacementLike] | None, where: str, names: GraphNames | None = None,
                ndim: int | None = None) -> dict[str, str]:
    """``place`` as ``{placeholder name: spec text}``: keys are input names or (with ``names``) FQNs,
    values spec text or DTensor placements. Without ``names`` (graph text, the default graph) the
    keys pass as given and the planner checks them. With ``ndim`` (the mesh's dims) each spec is
    parsed here. TypeError when ``place`` is not a mapping or a key not a string; ValueError for a
    name the graph does not have (listing the valid ones), two keys for one input, unreadable spec
    text or a spec with another number of placements than ``ndim`` (naming ``place[key]``)."""
    if place is None:
        return {}
    if not isinstance(place, Mapping):
        raise TypeError(f"{where}: place must map input names to placements ({{'x': 'S(0)R'}}), got {type(place).__name__}")
    out: dict[str, str] = {}
    given: dict[str, str] = {}
    for key, value in place.items():
        if not isinstance(key, str):
            raise TypeError(f"{where}: place keys must be input names (str), got {type(key).__name__} {key!r}")
        name = key
        if names is not None:
            if key in names.aliases:
                name = names.aliases[key]
            elif key not in names.inputs:
                raise ValueError(f"{where}: place names {key!r}, which is not an input of the graph; "
                                 f"valid names: {_names_list(names.valid())}")
        if name in given:
            raise ValueError(f"{where}: place gives input {name!r} twice (as {given[name]!r} and {key!r})")
        given[name] = key
        spec = spec_text(value, where, f"place[{key!r}]")
        if ndim is not None:
            from . import _ext

            try:
                count = len(_ext.spec_placements(spec))
            except ValueError as e:
                raise ValueError(f"{where}: place[{key!r}]: {e}") from None
            if count != ndim:
                raise ValueError(f"{where}: place[{key!r}] = {spec!r} has {count} placements for a {ndim}-dim mesh (one per mesh dim)")
        out[name] = spec
    return out
