#!/usr/bin/env python3
"""Plan a model's training step with ``ctshard.torch.auto_parallel`` and train it with DTensor.

    python3 examples/python/auto_parallel.py --world-size 4        # mesh 2x2
    python3 examples/python/auto_parallel.py --world-size 8        # mesh 2x4

For a small GPT (two pre-norm blocks: LayerNorm, fused QKV, causal mask created in forward, GELU
MLP) and a small Llama (two blocks: RMSNorm, GQA with 4 query / 2 key-value heads, rotary
embedding, causal mask created in forward, SwiGLU), on a gloo group of CPU processes: plans with
``auto_parallel`` (the batch pinned data-parallel on mesh dim 0, a memory budget that makes the
planner shard weights), applies the plan, trains 5 steps of ``torch.optim.Adam`` on
``loss = mean(model(x)^2)``, checks every loss against the single-process run (relative 1e-5)
and every parameter's placement against the plan, and prints the placements, the planned step
time and memory, and the collectives DTensor issued (CommDebugMode) in the first step.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from run_with_dtensor import RMSNorm, rotate_half, run_group  # its gloo process group and Llama parts

BATCH, SEQ, HIDDEN, HEADS = 8, 8, 32, 4
TOLERANCE = 1e-5


class GPTBlock(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, -1)
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.ones(t, t, dtype=torch.bool).tril()  # created in forward
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, layers=2, d=HIDDEN):
        super().__init__()
        self.blocks = nn.ModuleList(GPTBlock(d) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, d, bias=False)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class LlamaBlock(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, kv=2, ff=2 * HIDDEN):
        super().__init__()
        self.h, self.kv, self.hd = h, kv, d // h
        self.attention_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq, self.wo = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.wk, self.wv = nn.Linear(d, kv * self.hd, bias=False), nn.Linear(d, kv * self.hd, bias=False)
        self.w1, self.w3, self.w2 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        y = self.attention_norm(x)
        q = self.wq(y).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.wk(y).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.wv(y).view(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = (z.repeat_interleave(self.h // self.kv, dim=1) for z in (k, v))  # GQA
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(b, t, d))
        y = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class Llama(nn.Module):
    def __init__(self, layers=2, d=HIDDEN):
        super().__init__()
        self.layers = nn.ModuleList(LlamaBlock(d) for _ in range(layers))
        self.norm, self.output = RMSNorm(d), nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))


class MLP(nn.Module):
    """Two linear layers with a GELU (the test's small model)."""

    def __init__(self, d=HIDDEN, ff=4 * HIDDEN):
        super().__init__()
        self.up, self.down = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def build(name: str, seed: int = 0):
    """(model, inputs): the same on every process."""
    torch.manual_seed(seed)
    model = {"gpt": GPT, "llama": Llama, "mlp": MLP, "gpt_block": GPTBlock}[name]()
    x = torch.randn(BATCH, SEQ, HIDDEN)
    if name != "llama":
        return model, (x,)
    hd = HIDDEN // HEADS
    freqs = 1.0 / 10000 ** (torch.arange(0, hd, 2).float() / hd)
    angles = torch.outer(torch.arange(SEQ).float(), freqs).repeat(1, 2)
    return model, (x, angles.cos(), angles.sin())


def loss_of(out):
    return out.pow(2).mean()


def reference_losses(name: str, steps: int) -> list[float]:
    model, inputs = build(name)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = loss_of(model(*inputs))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def train(name: str, mesh, steps: int, budget_gib: float | None = None, time_limit_s: float = 5.0) -> dict:
    """Plan, apply and train ``name`` on ``mesh`` (every rank); the result on every rank."""
    import ctshard.torch as ct
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.debug import CommDebugMode

    model, inputs = build(name)
    plan = ct.auto_parallel(model, inputs, mesh, memory_budget_gib=budget_gib, place={"inputs[0]": "S(0)" + "R" * (mesh.ndim - 1)},
                            time_limit_s=time_limit_s)
    par = plan.apply(copy.deepcopy(model))
    opt = torch.optim.Adam(par.parameters(), lr=1e-2)
    losses, comms = [], None
    for i in range(steps):
        log = CommDebugMode()
        with log:
            out = par(*inputs)
            loss = loss_of(out)
            loss.backward()
        if i == 0:
            comms = {str(k): v for k, v in log.get_comm_counts().items()}
            full = out.full_tensor()
        opt.step()
        opt.zero_grad()
        losses.append(loss.full_tensor().item())
    placements = {n: ct.to_spec(p) for n, p in par.named_parameters()}
    placements.update({n: ct.to_spec(b) for n, b in par.named_buffers() if isinstance(b, DTensor)})
    return {"model": name, "mesh": list(mesh.shape), "losses": losses, "placements": placements,
            "planned": plan.parameter_placements, "step_time_us": plan.step_time_us, "memory_gib": plan.memory_gib,
            "proven_optimal": plan.proven_optimal, "gap": plan.optimality_gap, "summary": plan.summary(),
            "collectives": comms, "output_is_dtensor": isinstance(out, DTensor), "output_shape": list(full.shape)}


class _Case:
    """A picklable case: ``train(name, mesh, steps, budget)``."""

    def __init__(self, name, steps, budget):
        self.name, self.steps, self.budget = name, steps, budget

    def __call__(self, mesh):
        return train(self.name, mesh, self.steps, self.budget)


STEPS = 5
BUDGET_GIB = {"gpt": 2e-4, "llama": 1.5e-4}  # below the all-Replicate plan's need: weights get sharded


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-size", type=int, default=4, choices=(4, 8))
    args = ap.parse_args(argv)
    mesh = (2, args.world_size // 2)
    names = ("gpt", "llama")
    results = run_group(mesh, [_Case(n, STEPS, BUDGET_GIB[n]) for n in names])
    ok = True
    for name, r in zip(names, results):
        if "error" in r:
            print(f"{name}: {r['error']}\n{r['traceback']}")
            ok = False
            continue
        ref = reference_losses(name, STEPS)
        err = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref))
        same = r["placements"] == r["planned"]
        print(f"== {name} on {'x'.join(map(str, mesh))} ({args.world_size} processes)")
        print(r["summary"])
        print(f"losses {['%.6f' % v for v in r['losses']]}, single process {['%.6f' % v for v in ref]}: "
              f"max relative error {err:.1e} ({'ok' if err <= TOLERANCE else 'FAIL'})")
        print(f"parameter placements equal the plan's: {same}")
        print(f"collectives in step 1 (CommDebugMode): {r['collectives']}")
        ok = ok and err <= TOLERANCE and same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
