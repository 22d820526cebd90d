"""Input placements for the global-plan benchmarks: the graph's tensor placeholders (name, shape)
read from the `def forward(...)` signature of an FX printout, and two settings:

- ``replicated``: every input Replicate (``ctshard plan``'s default);
- ``fsdp``: every input whose dim 0 splits over mesh dim 0 (at least one element per device)
  ``S(0)`` on mesh dim 0, Replicate elsewhere: data-parallel activations, ZeRO-3/FSDP-style
  parameters.
"""
from __future__ import annotations

import re
from pathlib import Path

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*:\s*"([a-z0-9]+)\[([^\]]*)\]')


def placeholders(path: str | Path) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor input in the forward signature; symbolic sizes are skipped."""
    text = Path(path).read_text()
    start = text.index("def forward(")
    depth, end = 0, start
    for i in range(start + len("def forward"), len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                end = i
                break
    out = []
    for name, _dtype, dims in _PARAM.findall(text[start:end]):
        try:
            shape = [int(d) for d in dims.split(",") if d.strip()]
        except ValueError:
            continue
        out.append((name, shape))
    return out


def place_args(path: str | Path, mesh: list[int], setting: str) -> list[str]:
    """`--place NAME=SPEC` arguments for a setting."""
    if setting == "replicated":
        return []
    if setting != "fsdp":
        raise ValueError(setting)
    args = []
    for name, shape in placeholders(path):
        if shape and shape[0] >= mesh[0]:
            args += ["--place", f"{name}=S(0)" + "R" * (len(mesh) - 1)]
    return args
