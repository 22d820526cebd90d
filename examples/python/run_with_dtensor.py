#!/usr/bin/env python3
"""Run ctshard's plans with PyTorch DTensor on a CPU process group, and check them.

    python3 examples/python/run_with_dtensor.py --model block --mesh 2x2 --mode dtensor

1. Builds a small model in plain PyTorch: ``block`` (pre-norm attention + GELU MLP, like
   ``examples/default_graph.fx.txt``), ``gpt2`` (GPT-2 causal block: fused c_attn, tril mask,
   tanh GELU), ``llama`` (RMSNorm, rotary embedding, ``F.scaled_dot_product_attention``, SwiGLU)
   or ``cnn`` (an eval-mode CNN: two conv + batch norm (running statistics) + ReLU + max pool
   stages, then a linear classifier).
2. Captures its aten-level forward and backward graphs with AOT autograd (``aot_function`` with
   compilers that keep the fw / bw GraphModules; no extra decompositions, as the AOT dumps
   ctshard plans). SDPA is traced with the math backend: the CPU flash kernel
   (``_scaled_dot_product_flash_attention_for_cpu``) has a sharding rule neither in DTensor 2.13
   nor in ctshard.
3. Plans the forward with ``ctshard.plan`` (in "dtensor" mode with ``rule_set="dtensor"``:
   exactly DTensor 2.13's rows, since DTensor's own dispatch executes the ops; in "local" mode with
   ctshard's rules, which then execute): data-parallel input (batch on mesh dim 0) and
   Megatron-style tensor-parallel weights on the last mesh dim (QKV / MLP-up weights ``S(0)``,
   attention-out / MLP-down weights ``S(1)``, as ctshard's embedded default; the CNN's classifier
   weight ``S(0)``, its convolutions replicated); plans the backward
   with every saved tensor where the forward plan leaves it and the output gradient laid out like
   the output. ``--algo global`` plans both graphs with ``algo="global"`` (the whole graph's
   proven optimum of the same cost model) instead of node by node; ``--algo both`` runs both and
   prints their comparison (modelled µs, priced vs issued collectives and bytes) as markdown rows.
4. Spawns a gloo process group (4 processes for 2x2, 8 for 2x4; CPU), runs forward + backward
   with ``ctshard.torch.run_plan`` in the chosen mode, and on rank 0 prints the per-node agreement
   (ctshard's predicted vs DTensor's actual output placements), the collectives DTensor issued
   (CommDebugMode) against the steps ctshard priced in its plan, and the numeric check against the
   single-process run (outputs and gradients, fp32, max |error| / max |reference| <= 1e-5).

``run_group(mesh, cases)`` runs several (model, mode) cases in one spawned group and returns
their results to the caller (``tests/python/test_run_plan.py`` uses it).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import logging
import math
import os
import pickle
import sys
import tempfile
import time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = ("block", "gpt2", "llama", "cnn")
MODES = ("dtensor", "local")
ALGOS = {"greedy": "search", "global": "global"}  # --algo -> ctshard.plan's algo
TOLERANCE = 1e-5  # max |distributed - single process| / max |single process|, per tensor

# --------------------------------------------------------------------------------------------
# models (small: batch 4, 8 tokens, hidden 32, 4 heads)

BATCH, SEQ, HIDDEN, HEADS = 4, 8, 32, 4
IMAGE = 8  # the CNN's input: BATCH x 3 x IMAGE x IMAGE


class Block(nn.Module):
    """Pre-norm transformer block: LayerNorm, fused QKV, softmax attention, out projection,
    residual; LayerNorm, GELU MLP, residual (the shape of ctshard's embedded default graph)."""

    colwise = ("qkv.weight", "up.weight")
    rowwise = ("proj.weight", "down.weight")

    def __init__(self, d=HIDDEN, h=HEADS, ff=2 * HIDDEN):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in (q, k, v))
        a = ((q @ k.transpose(-1, -2)) * (1 / math.sqrt(d // self.h))).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class GPT2Block(nn.Module):
    """GPT-2 block: fused c_attn, causal mask built from ``torch.ones(T, T).tril()``, tanh GELU."""

    colwise = ("attn.c_attn.weight", "mlp.c_fc.weight")
    rowwise = ("attn.c_proj.weight", "mlp.c_proj.weight")

    def __init__(self, d=HIDDEN, h=HEADS):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.ModuleDict({"c_attn": nn.Linear(d, 3 * d), "c_proj": nn.Linear(d, d)})
        self.mlp = nn.ModuleDict({"c_fc": nn.Linear(d, 4 * d), "c_proj": nn.Linear(4 * d, d)})

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn["c_attn"](self.ln_1(x)).split(d, -1)
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.attn["c_proj"]((att @ v).transpose(1, 2).contiguous().view(b, t, d))
        return x + self.mlp["c_proj"](F.gelu(self.mlp["c_fc"](self.ln_2(x)), approximate="tanh"))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class LlamaBlock(nn.Module):
    """Llama block: RMSNorm, q/k/v projections with rotary embedding (cos / sin are inputs),
    ``F.scaled_dot_product_attention(is_causal=True)``, SwiGLU MLP ``w2(silu(w1 x) * w3 x)``."""

    colwise = ("wq.weight", "wk.weight", "wv.weight", "w1.weight", "w3.weight")
    rowwise = ("wo.weight", "w2.weight")

    def __init__(self, d=HIDDEN, h=HEADS, ff=2 * HIDDEN):
        super().__init__()
        self.h = h
        self.attention_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3, self.w2 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        y = self.attention_norm(x)
        q, k, v = (w(y).view(b, t, self.h, -1).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, t, d))
        y = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class CNN(nn.Module):
    """Eval-mode CNN: two stages of convolution (3x3, padding 1), batch norm with running
    statistics (``_native_batch_norm_legit_no_training``; ``model.eval()``), ReLU and 2x2 max
    pooling, then a linear classifier on the flattened features."""

    colwise = ("fc.weight",)
    rowwise = ()

    def __init__(self, c_in=3, c=8, classes=10, size=IMAGE):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c_in, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.fc = nn.Linear(c * (size // 4) ** 2, classes)
        with torch.no_grad():  # running statistics that are not the identity
            for bn in (self.bn1, self.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


def build(name: str, seed: int = 0):
    """(model, global inputs, which inputs need a gradient): the same on every process."""
    torch.manual_seed(seed)
    model = {"block": Block, "gpt2": GPT2Block, "llama": LlamaBlock, "cnn": CNN}[name]()
    if name == "cnn":
        return model.eval(), [torch.randn(BATCH, 3, IMAGE, IMAGE)], [True]
    x = torch.randn(BATCH, SEQ, HIDDEN)
    if name != "llama":
        return model, [x], [True]
    head = HIDDEN // HEADS
    freqs = 1.0 / 10000 ** (torch.arange(0, head, 2).float() / head)
    angles = torch.outer(torch.arange(SEQ).float(), freqs).repeat(1, 2)  # [SEQ, head]
    return model, [x, angles.cos(), angles.sin()], [True, False, False]


# --------------------------------------------------------------------------------------------
# capture (AOT autograd) and plans


def capture(model: nn.Module, inputs, needs_grad):
    """Forward and backward aten GraphModules of ``model(*inputs)`` with AOT autograd; the graphs'
    inputs are the model inputs followed by the parameters (``named_parameters`` order), then the
    buffers (``named_buffers`` order: batch norm's running statistics, without gradients)."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_function
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = [n for n, _ in model.named_parameters()]
    buffers = [n for n, _ in model.named_buffers()]
    n_in = len(inputs)

    def f(*args):
        state = dict(zip(names + buffers, args[n_in:]))
        return torch.func.functional_call(model, state, tuple(args[:n_in]))

    graphs = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind] = gm
            return make_boxed_func(gm.forward)
        return compiler

    compiled = aot_function(f, fw_compiler=keep("fw"), bw_compiler=keep("bw"))
    args = [t.clone().requires_grad_(g) for t, g in zip(inputs, needs_grad)]
    args += [p.detach().clone().requires_grad_() for p in model.parameters()]
    args += [b.detach().clone() for b in model.buffers()]
    with sdpa_kernel([SDPBackend.MATH]):
        out = compiled(*args)
        out.backward(torch.ones_like(out))
    return graphs["fw"], graphs["bw"], names


def forward_placements(model: nn.Module, fw: torch.fx.GraphModule, names, n_inputs: int, ndim: int) -> dict:
    """Data parallel x (batch on mesh dim 0), Megatron-style TP weights on the last mesh dim."""
    placeholders = [n.name for n in fw.graph.nodes if n.op == "placeholder"]

    def spec(first: str, last: str) -> str:
        p = ["R"] * ndim
        p[0] = first
        if ndim > 1:
            p[-1] = last
        return "".join(p)

    place = {placeholders[0]: spec("S(0)", "R")}
    if ndim > 1:
        for name, ph in zip(names, placeholders[n_inputs:]):
            if name in model.colwise:
                place[ph] = spec("R", "S(0)")
            elif name in model.rowwise:
                place[ph] = spec("R", "S(1)")
    return place


def backward_placements(fw, fw_plan, bw) -> dict:
    """Every saved tensor where the forward plan leaves it; each ``tangents_i`` like forward
    output i, with Partial turned into Replicate (a gradient arrives whole)."""
    import ctshard.torch

    specs = ctshard.torch.planned_specs(fw, fw_plan)
    outputs = list(next(n for n in fw.graph.nodes if n.op == "output").args[0])
    place = {}
    tangent = 0
    for node in bw.graph.nodes:
        if node.op != "placeholder":
            continue
        if node.name.startswith("tangents_"):
            out = outputs[tangent]
            tangent += 1
            spec = specs[out.name][0]
            place[node.name] = "".join("R" if p.startswith("P") else p for p in _split_spec(spec))
        elif node.name in specs:
            place[node.name] = specs[node.name][0]
    return place


def _split_spec(spec: str):
    import ctshard.torch

    return [ctshard.torch.to_spec([p]) for p in ctshard.torch.to_placements(spec)]


# --------------------------------------------------------------------------------------------
# one case on every rank


def reference(model: nn.Module, inputs, needs_grad):
    """Single-process eager run: output and the gradients (inputs that need one, then parameters)
    for the output gradient ``tangent``."""
    args = [t.clone().requires_grad_(g) for t, g in zip(inputs, needs_grad)]
    out = model(*args)
    tangent = torch.randn(out.shape, generator=torch.Generator().manual_seed(1234))
    model.zero_grad()
    out.backward(tangent)
    grads = [a.grad for a, g in zip(args, needs_grad) if g] + [p.grad for p in model.parameters()]
    return out.detach(), tangent, grads


def rel_error(got: torch.Tensor, want: torch.Tensor) -> float:
    scale = want.abs().max().item()
    return (got - want).abs().max().item() / (scale if scale > 0 else 1.0)


@functools.lru_cache(maxsize=None)
def prepare(model_name: str):
    """Model, inputs, captured fw / bw graphs and the single-process reference, once per process
    (the modes and meshes of one process share them)."""
    model, inputs, needs_grad = build(model_name)
    fw, bw, names = capture(model, inputs, needs_grad)
    return model, inputs, needs_grad, fw, bw, names, reference(model, inputs, needs_grad)


def run_case(model_name: str, mesh, mode: str, devices_per_host: int = 1, algo: str = "greedy") -> dict:
    """Plan, run forward + backward with ``run_plan`` and check against the single-process run.
    Every rank calls it (collectives); every rank returns the same summary. ``algo`` "greedy"
    plans node by node (``ctshard.plan``'s default, as DTensor), "global" the whole graph jointly
    (each plan with its ``optimality_gap``; the backward starts from the global forward plan's
    placements)."""
    import ctshard
    import ctshard.torch

    t0 = time.perf_counter()
    model, inputs, needs_grad, fw, bw, names, (out_ref, tangent, grads_ref) = prepare(model_name)
    ndim = mesh.ndim
    # "dtensor" mode: DTensor's own op dispatch executes the plan, so plan with exactly DTensor
    # 2.13's rows (the dtensor rule set: no row of ctshard's that DTensor lacks, e.g. eval batch
    # norm's batch rows, no Partial passed where DTensor reduces first); "local" mode executes
    # ctshard's own rules.
    rule_set = "dtensor" if mode == "dtensor" else "ctshard"
    options = dict(mesh=list(mesh.shape), devices_per_host=devices_per_host, rule_set=rule_set, algo=ALGOS[algo])
    fw_plan = ctshard.plan(fw, place=forward_placements(model, fw, names, len(inputs), ndim), **options)
    bw_plan = ctshard.plan(bw, place=backward_placements(fw, fw_plan, bw), **options)
    t_setup = time.perf_counter() - t0

    params = [p.detach() for p in model.parameters()] + [b.detach() for b in model.buffers()]
    fw_run = ctshard.torch.run_plan(fw, fw_plan, mesh, inputs + params, mode=mode, devices_per_host=devices_per_host)
    fw_outputs = list(next(n for n in fw.graph.nodes if n.op == "output").args[0])
    by_name = {n.name: v for n, v in zip(fw_outputs, fw_run.outputs)}
    bw_inputs = []
    for node in bw.graph.nodes:
        if node.op == "placeholder":
            bw_inputs.append(tangent if node.name.startswith("tangents_") else by_name[node.name])
    bw_run = ctshard.torch.run_plan(bw, bw_plan, mesh, bw_inputs, mode=mode, devices_per_host=devices_per_host)
    t_run = time.perf_counter() - t0 - t_setup

    # numeric check: output and every gradient against the single-process run
    checks = {"output": rel_error(fw_run.outputs[0].full_tensor(), out_ref)}
    grad_names = [f"input{i}" for i, g in enumerate(needs_grad) if g] + names
    got = [g for g, (i, need) in zip(bw_run.outputs, enumerate(needs_grad + [True] * len(names))) if need]
    for name, g, want in zip(grad_names, got, grads_ref):
        checks["grad " + name] = rel_error(g.full_tensor(), want)

    def summary(run, plan, phase):
        return {
            "phase": phase,
            "nodes": run.nodes,
            "inputs": run.inputs,
            "agree": run.agreement()[0],
            "total": run.agreement()[1],
            "total_cost_us": plan["total_cost_us"],
            "fallback_ops": plan["fallback_ops"],
            # global plans: 0 = proven optimal; the greedy plan's cost from the same inputs
            **{k: plan[k] for k in ("optimality_gap", "greedy_total_cost_us", "nodes_changed") if k in plan},
        }

    return {
        "model": model_name, "mesh": list(mesh.shape), "mode": mode, "algo": algo, "rule_set": rule_set,
        "graphs": [summary(fw_run, fw_plan, "fw"), summary(bw_run, bw_plan, "bw")],
        "checks": checks, "tolerance": TOLERANCE,
        "seconds": {"setup": t_setup, "run": t_run},
    }


# --------------------------------------------------------------------------------------------
# process group


def _worker(rank: int, world: int, mesh_shape, cases, init_file: str, out_file: str) -> None:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    torch.set_num_threads(1)
    # DTensor warns (per rank) about nested all-gathers on a 2-D mesh; the report lists collectives.
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    # ... and that gloo has no all-to-all (Shard(i) -> Shard(j) becomes all-gather + chunk on CPU)
    logging.getLogger("torch.distributed.tensor._collective_utils").setLevel(logging.ERROR)
    # a timeout, so that a rank stuck in a collective fails the run instead of hanging it
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=180))
    try:
        mesh = init_device_mesh("cpu", tuple(mesh_shape))
        results = []
        for case in cases:
            model, mode, algo = (None, None, None) if callable(case) else (*case, "greedy")[:3]
            try:
                results.append(case(mesh) if callable(case) else run_case(model, mesh, mode, algo=algo))
            except Exception as e:  # keep the group alive for the other cases; report the error
                import traceback

                name = getattr(case, "__name__", None) or model
                results.append({"model": name, "mesh": list(mesh_shape), "mode": mode, "algo": algo,
                                "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()})
                dist.barrier()
        if rank == 0:
            with open(out_file, "wb") as f:
                pickle.dump(results, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_group(mesh_shape, cases) -> list[dict]:
    """Spawn one gloo group of prod(mesh_shape) CPU processes, run every case in it, and return
    rank 0's results (one per case; a dict with ``error`` and ``traceback`` if it failed). A case
    is a (model, mode) pair or a (model, mode, algo) triple (``run_case``; algo "greedy" if left
    out) or a picklable function ``f(mesh)`` (module level, in a module the children can import)
    that every rank calls."""
    import torch.multiprocessing as mp

    world = math.prod(mesh_shape)
    with tempfile.TemporaryDirectory(prefix="ctshard_run_plan_") as tmp:
        init_file, out_file = os.path.join(tmp, "store"), os.path.join(tmp, "results.pkl")
        mp.spawn(_worker, args=(world, list(mesh_shape), list(cases), init_file, out_file), nprocs=world, join=True)
        with open(out_file, "rb") as f:
            return pickle.load(f)


# --------------------------------------------------------------------------------------------
# report


def on_cpu(kind: str) -> str:
    """The collective DTensor issues on a CPU (gloo) mesh for a step ctshard prices: gloo has no
    all-to-all, so DTensor's ``shard_dim_alltoall`` (Shard(i) -> Shard(j)) all-gathers and chunks."""
    return "all_gather" if kind == "all_to_all" else kind


def step_multiset(items, mesh) -> Counter:
    """(collective, mesh dim, bytes per rank) multiset of priced steps or issued collectives, a
    priced all-to-all counted as what DTensor runs for it on a CPU mesh (an all-gather of mesh-dim
    size times the local bytes, then a chunk)."""
    out = Counter()
    for c in items:
        kind, dim, size = c["collective"], c["mesh_dim"], c["bytes"]
        if kind == "all_to_all":
            kind, size = on_cpu(kind), size * mesh[dim]
        out[(kind, dim, float(size))] += 1
    return out


def graph_comparison(graph: dict, mesh) -> tuple[Counter, Counter]:
    """(issued, priced) of one graph: every collective DTensor issued (CommDebugMode:
    redistributions and inside ops) and every step ctshard priced in its plan (from the planned
    source specs), as step_multiset."""
    issued = [c for n in graph["nodes"] for r in n["redistributions"] for c in r["collectives"]] + \
             [c for n in graph["nodes"] for c in n["op_collectives"]]
    priced = [s for n in graph["nodes"] for p in n["planned_steps"] for s in p["steps"]]
    return step_multiset(issued, mesh), step_multiset(priced, mesh)


def collectives_match(record: dict) -> bool:
    """Every redistribution of a node issued exactly the (collective, mesh dim) steps ctshard
    prices for the same move (an all-to-all as the all-gather DTensor runs on CPU)."""
    return all(
        Counter((c["collective"], c["mesh_dim"]) for c in r["collectives"])
        == Counter((on_cpu(s["collective"]), s["mesh_dim"]) for s in r["priced"])
        for r in record["redistributions"])


def report(result: dict, out=sys.stdout) -> None:
    p = lambda *a: print(*a, file=out)  # noqa: E731
    head = f"{result['model']} on {'x'.join(map(str, result['mesh']))}, mode {result['mode']}"
    if "rule_set" in result:
        head += f", rule set {result['rule_set']}"
    if result.get("algo", "greedy") != "greedy":
        head += f", algo {result['algo']}"
    if "error" in result:
        p(f"{head}: FAILED\n{result['traceback']}")
        return
    p(f"== {head} (trace + plan {result['seconds']['setup']:.1f} s, run {result['seconds']['run']:.1f} s) ==")
    for g in result["graphs"]:
        issued = [c for n in g["nodes"] for r in n["redistributions"] for c in r["collectives"]]
        op_coll = [c for n in g["nodes"] for c in n["op_collectives"]]
        mismatched = [n["name"] for n in g["nodes"] if not collectives_match(n)]
        a2a = sum(s["collective"] == "all_to_all" for n in g["nodes"] for r in n["redistributions"] for s in r["priced"])
        p(f"{g['phase']}: {g['agree']}/{g['total']} nodes: DTensor's output placements == ctshard's prediction"
          f" ({100.0 * g['agree'] / max(g['total'], 1):.1f} %); fallback ops {g['fallback_ops'] or 'none'}")
        if "optimality_gap" in g:
            p(f"    global plan: optimality gap {g['optimality_gap']:g} ({'proven optimal' if g['optimality_gap'] == 0 else 'NOT proven'});"
              f" {g['nodes_changed']} nodes changed from the greedy plan of the same inputs ({g['greedy_total_cost_us']:.1f} us)")
        p(f"    collectives: {len(issued)} in redistributions ({sum(c['bytes'] for c in issued):.0f} B per rank),"
          f" {len(op_coll)} inside ops; ctshard priced {g['total_cost_us']:.1f} us;"
          f" nodes whose collectives differ from ctshard's priced steps: {mismatched or 'none'}"
          + (f" ({a2a} all-to-all priced, run as all-gather + chunk: gloo has no all-to-all)" if a2a else ""))
        issued_m, priced_m = graph_comparison(g, result["mesh"])
        same = issued_m == priced_m
        p(f"    DTensor issued (CommDebugMode) {sum(issued_m.values())} collectives, {sum(k[2] * v for k, v in issued_m.items()):.0f} B"
          f" per rank; ctshard priced {sum(priced_m.values())} steps, {sum(k[2] * v for k, v in priced_m.items()):.0f} B per rank:"
          f" {'the same collectives (kind, mesh dim, bytes)' if same else 'DIFFERENT'}")
        if not same:
            p(f"      issued but not priced: {dict(issued_m - priced_m)}; priced but not issued: {dict(priced_m - issued_m)}")
        for n in g["nodes"]:
            if not n["agree"]:
                p(f"    differs: {n['name']:<28} {n['op']:<40} in ({', '.join(n['inputs'])})"
                  f" ctshard -> {', '.join(n['predicted'])}  DTensor -> {', '.join(str(a) for a in n['actual'])}")
    worst = max(result["checks"].values())
    p(f"numeric check vs single process: {len(result['checks'])} tensors (output + gradients), "
      f"max relative error {worst:.2e} ({'OK' if worst <= result['tolerance'] else 'FAIL'}, tolerance {result['tolerance']:.0e})")


def _kinds(collectives) -> str:
    short = {"all_gather": "AG", "reduce_scatter": "RS", "all_reduce": "AR", "all_to_all": "A2A"}
    c = Counter(short.get(x["collective"], x["collective"]) for x in collectives)
    return ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "none"


def priced_steps(result: dict) -> list:
    """The steps of the plans' moves (``ctshard.cost`` from the planned source specs), fw + bw."""
    return [s for g in result["graphs"] for n in g["nodes"] for p in n["planned_steps"] for s in p["steps"]]


def issued_collectives(result: dict) -> list:
    """Every collective DTensor issued (CommDebugMode), in redistributions and inside ops, fw + bw."""
    nodes = [n for g in result["graphs"] for n in g["nodes"]]
    return [c for n in nodes for r in n["redistributions"] for c in r["collectives"]] + \
           [c for n in nodes for c in n["op_collectives"]]


def communication_row(by_mode: dict) -> str:
    """One markdown row: ctshard's predicted communication (plan costs, priced steps) against what
    DTensor moved (CommDebugMode) for one model and mesh, from the results of both modes."""
    dt, local = by_mode["dtensor"], by_mode["local"]
    nodes = [n for g in dt["graphs"] for n in g["nodes"]]
    planned, issued, local_issued = priced_steps(dt), issued_collectives(dt), issued_collectives(local)
    predicted_us = sum(g["total_cost_us"] for g in dt["graphs"])
    wall_ms = 1e3 * sum(n["redistribute_s"] for g in local["graphs"] for n in g["nodes"])
    return (f"| {dt['model']} | {'x'.join(map(str, dt['mesh']))} | {len(nodes)} | {len(planned)} ({_kinds(planned)}) | "
            f"{predicted_us:.1f} | {sum(s['bytes'] for s in planned):,.0f} | {len(issued)} ({_kinds(issued)}) | "
            f"{sum(c['bytes'] for c in issued):,.0f} | {len(local_issued)} / {sum(c['bytes'] for c in local_issued):,.0f} | "
            f"{wall_ms:.1f} |")


COMMUNICATION_HEADER = (
    "| model | mesh | op nodes (fw + bw) | ctshard: priced collectives | ctshard: predicted µs (fw + bw) "
    "| ctshard: priced bytes / rank | DTensor (`dtensor` mode): collectives issued | DTensor: bytes / rank moved "
    "| `local` mode: collectives / bytes | measured redistribution wall time, `local` mode, rank 0 (ms) |\n"
    "|---|---|---:|---|---:|---:|---|---:|---:|---:|")


ALGO_HEADER = (
    "| model | mesh | mode | algo | modelled µs (fw + bw) | optimality gap (fw, bw) | priced collectives "
    "| priced bytes / rank | DTensor: collectives issued | DTensor: bytes / rank moved | max rel error |\n"
    "|---|---|---|---|---:|---|---|---:|---|---:|---:|")


def algo_row(result: dict) -> str:
    """One markdown row of the greedy vs global comparison: a case's modelled cost, priced steps,
    the collectives DTensor issued and the numeric check."""
    planned, issued = priced_steps(result), issued_collectives(result)
    gaps = ", ".join(f"{g['optimality_gap']:g}" for g in result["graphs"] if "optimality_gap" in g) or "–"
    return (f"| {result['model']} | {'x'.join(map(str, result['mesh']))} | {result['mode']} | {result['algo']} | "
            f"{sum(g['total_cost_us'] for g in result['graphs']):.1f} | {gaps} | {len(planned)} ({_kinds(planned)}) | "
            f"{sum(s['bytes'] for s in planned):,.0f} | {len(issued)} ({_kinds(issued)}) | "
            f"{sum(c['bytes'] for c in issued):,.0f} | {max(result['checks'].values()):.1e} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=MODELS + ("all",), default="block")
    ap.add_argument("--mesh", choices=("2x2", "2x4"), default="2x2")
    ap.add_argument("--mode", choices=MODES + ("both",), default="dtensor")
    ap.add_argument("--markdown", action="store_true",
                    help="also print the communication table (needs --mode both) as markdown rows")
    ap.add_argument("--algo", choices=tuple(ALGOS) + ("both",), default="greedy",
                    help="greedy: node-by-node plans (ctshard.plan's default); global: whole-graph plans, which"
                         " must be proven optimal; both: run both and print their comparison as markdown rows")
    args = ap.parse_args(argv)
    mesh = [int(s) for s in args.mesh.split("x")]
    modes = MODES if args.mode == "both" else (args.mode,)
    models = MODELS if args.model == "all" else (args.model,)
    algos = tuple(ALGOS) if args.algo == "both" else (args.algo,)
    results = run_group(mesh, [(m, mode, a) for m in models for mode in modes for a in algos])
    ok = True
    for r in results:
        report(r)
        ok &= "error" not in r and max(r["checks"].values()) <= r["tolerance"] and \
            all(g.get("optimality_gap", 0) == 0 for g in r["graphs"])
    if args.markdown and ok and args.mode == "both":
        for a in algos:
            if len(algos) > 1:
                print(f"\nalgo {a}:")
            print(COMMUNICATION_HEADER)
            for m in models:
                print(communication_row({r["mode"]: r for r in results if r["model"] == m and r["algo"] == a}))
    if ok and args.algo == "both":
        print("\n" + ALGO_HEADER)
        for r in results:
            print(algo_row(r))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
