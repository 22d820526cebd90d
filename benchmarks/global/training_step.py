"""One training step of a module (forward, loss, backward) as an aten FX graph, traced with make_fx
on fake tensors: inputs ``(parameters..., batch...)``, outputs ``(loss, gradients...)`` with the
i-th gradient that of the i-th parameter input (the layout ``ctshard plan --global --training``
reads; docs/global_plan.md, "Training step").

Used by gpt2.py and llama.py; ``write(gm, path)`` writes the printout.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call


def trace(make_model, batch: Sequence[torch.Tensor], dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    """``make_model()`` is built on the meta device (no memory), its parameters become fake inputs
    of ``dtype``; ``batch`` are the model's inputs (the model returns the loss). The result has
    ``param_names`` (FQN of parameter input i)."""
    with torch.device("meta"):
        model = make_model()
    params = {k: torch.empty(v.shape, dtype=dtype) for k, v in model.named_parameters()}
    names = list(params)

    def step(flat, *inputs):
        loss = functional_call(model, dict(zip(names, flat)), tuple(inputs))
        return (loss, *torch.autograd.grad(loss, flat))

    flat = [params[n].requires_grad_() for n in names]
    gm = make_fx(step, tracing_mode="fake")(flat, *batch)
    gm.param_names = names  # placeholder i (of the parameters) is parameter names[i]
    return gm


def write(gm: torch.fx.GraphModule, out: Path) -> None:
    """Writes the printout of ``gm`` to ``out`` and a one-line summary to stderr."""
    out.write_text(gm.print_readable(print_output=False))
    ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    print(f"{out}: {ops} op nodes, {len(gm.param_names)} parameters", file=sys.stderr)


def main(doc: str, trace_step: Callable[[int, int, int], torch.fx.GraphModule], layers: int, batch: int, seq: int,
         argv=None) -> int:
    """The command line of gpt2.py / llama.py: ``OUT.fx.txt [--layers L] [--batch B] [--seq S]``
    (defaults given), writes ``trace_step(layers, batch, seq)``'s printout to OUT."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--layers", type=int, default=layers)
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--seq", type=int, default=seq)
    a = ap.parse_args(argv)
    write(trace_step(a.layers, a.batch, a.seq), a.out)
    return 0
