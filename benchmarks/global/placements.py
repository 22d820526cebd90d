"""Input placements for the global-plan benchmarks: the graph's tensor placeholders (name, shape)
read from the `def forward(...)` signature of an FX printout, and two settings:

- ``replicated``: every input Replicate (``ctshard plan``'s default);
- ``fsdp``: every input whose dim 0 splits over mesh dim 0 (at least one element per device)
  ``S(0)`` on mesh dim 0, Replicate elsewhere: data-parallel activations, ZeRO-3/FSDP-style
  parameters;
- ``dp``: the integer inputs (token ids, targets) ``S(0)`` on mesh dim 0, everything else
  Replicate: plain data parallelism of a language model (gpt2.py's ``dp``).
"""
from __future__ import annotations

import re
from pathlib import Path

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*:\s*"([a-z0-9]+)\[([^\]]*)\]')


def _signature(path: str | Path) -> str:
    """The inputs' annotations: from `def forward(` to the first op call (annotated arguments, or
    flattened inputs annotated on the lines after the signature, as make_fx prints them)."""
    text = Path(path).read_text()
    start = text.index("def forward(")
    end = text.find(" = torch.", start)
    end = text.rfind("\n", start, end) if end >= 0 else len(text)
    return text[start:end]


def placeholders(path: str | Path) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor input in the forward signature; symbolic sizes are skipped."""
    out = []
    for name, _dtype, dims in _PARAM.findall(_signature(path)):
        try:
            shape = [int(d) for d in dims.split(",") if d.strip()]
        except ValueError:
            continue
        out.append((name, shape))
    return out


def integer_inputs(path: str | Path) -> list[str]:
    """Names of the integer-typed tensor inputs (i64 / i32) in the forward signature."""
    return [name for name, dtype, _ in _PARAM.findall(_signature(path)) if dtype in ("i64", "i32")]


def place_args(path: str | Path, mesh: list[int], setting: str) -> list[str]:
    """`--place NAME=SPEC` arguments for a setting."""
    if setting == "replicated":
        return []
    if setting == "dp":
        return [a for name in integer_inputs(path) for a in ("--place", f"{name}=S(0)" + "R" * (len(mesh) - 1))]
    if setting != "fsdp":
        raise ValueError(setting)
    args = []
    for name, shape in placeholders(path):
        if shape and shape[0] >= mesh[0]:
            args += ["--place", f"{name}=S(0)" + "R" * (len(mesh) - 1)]
    return args
