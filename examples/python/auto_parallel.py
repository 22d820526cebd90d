#!/usr/bin/env python3
"""Plan a model's training step with ``ctshard.torch.auto_parallel`` and train it with DTensor.

    python3 examples/python/auto_parallel.py --world-size 4        # mesh 2x2
    python3 examples/python/auto_parallel.py --world-size 8        # mesh 2x4

For a small GPT (two pre-norm blocks: LayerNorm, fused QKV, causal mask created in forward, GELU
MLP) and a small Llama (two blocks: RMSNorm, GQA with 4 query / 2 key-value heads, rotary
embedding, causal mask created in forward, SwiGLU), on a gloo group of CPU processes: plans with
``auto_parallel`` (the batch pinned data-parallel on mesh dim 0, a memory budget that makes the
planner shard weights, ``hand_plans=True``), applies the plan (``--execute plan``, the default:
``apply`` runs the planned joint graph; ``--execute propagate``: DTensor's own propagation between
the placements ``apply`` enforces), trains 5 steps of
``torch.optim.Adam`` on ``loss = mean(model(x)^2)``, checks every loss against the single-process
run (relative 1e-5) and every parameter's placement against the plan. The planner's hand plans
(DDP, FSDP, Megatron TP + FSDP) are applied and trained the same way (``auto_parallel`` with
every parameter and the batch pinned to their placements).

For every plan it measures step 1 and prints:

- the collectives the plan prices (``ParallelPlan.priced_collectives``: its moves and gradient
  reductions) against those issued under ``apply`` (``ctshard.torch.CollectiveLog`` over
  forward, loss and backward), each difference with the torch function that issued it or the
  graph node whose move was priced; and against those issued when the same plan is executed node
  by node (``ctshard.torch.run_plan`` on the joint graph, then each gradient reduced to its
  parameter's placement); the optimizer step and reading the loss apart (not priced);
- the memory per rank (maximum over the ranks) modelled (``plan.memory_gib``) against measured:
  parameters, gradients, Adam's moments (after the first step) and the activations autograd saves
  (``SavedBytes``: local shards, each storage once; apart, the saved views that hold no storage of
  their own, which the planner counts as activations), and the total against the budget;

then one markdown table of all plans (docs/benchmarks.md, "auto_parallel measured").
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


def _local(t):
    from torch.distributed.tensor import DTensor

    return t._local_tensor if isinstance(t, DTensor) else t


def _nbytes(t) -> int:
    """Local bytes of a tensor (a DTensor's shard on this rank)."""
    loc = _local(t)
    return loc.numel() * loc.element_size()


class SavedBytes:
    """``torch.autograd.graph.saved_tensors_hooks`` that sums what autograd saves for backward on
    this rank: each local tensor's storage counted once (views of one storage are not counted
    twice), parameters' storages left out (they are counted as parameters), a saved view of a
    caller's global input counted at its own size (the global input is the caller's, not the
    step's). ``shared``: the bytes (each at its own local size) of the saved tensors that hold
    no storage of their own, a view of a parameter or of another saved tensor's storage."""

    def __init__(self, parameters, inputs):
        self.params = {id(p) for p in parameters}
        self.skip = {_local(p).untyped_storage().data_ptr() for p in parameters}
        self.inputs = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}
        self.storages: dict[int, int] = {}
        self.shared = 0

    def _pack(self, t):
        if id(t) in self.params:  # a parameter itself: counted as a parameter
            return t
        loc = _local(t)
        ptr = loc.untyped_storage().data_ptr()
        if ptr in self.inputs:
            self.storages[("input", id(loc))] = loc.numel() * loc.element_size()
        elif ptr in self.skip or ptr in self.storages:
            self.shared += loc.numel() * loc.element_size()
        else:
            self.storages[ptr] = loc.untyped_storage().nbytes()
        return t

    def hooks(self):
        """The context manager that records the saved tensors."""
        return torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    @property
    def bytes(self) -> int:
        """Bytes held for backward (unique storages)."""
        return sum(self.storages.values())


def _rank_max(values: list[float]) -> list[float]:
    """Each value's maximum over the ranks (the per-device figure is the worst rank's)."""
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64)
    if dist.is_initialized():
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def executed_step(plan, model, inputs, mesh) -> dict:
    """Execute one training step of ``plan`` node by node with ``ctshard.torch.run_plan`` (mode
    ``"local"``: every op on its local shards at the planned placements, every planned move a
    DTensor ``redistribute``) on the joint graph, with the output gradient of ``loss_of``, then
    reduce each gradient to its parameter's placement: the collectives this issues (forward +
    backward moves and gradient reductions, ``CollectiveLog``) and the nodes whose output
    placements equal the plan's."""
    import ctshard.torch as ct
    from torch.distributed.tensor import DTensor

    cap = plan._capture
    named = dict(model.named_parameters())
    named.update(dict(model.named_buffers()))
    out = model(*inputs)
    tangent = (2 * out / out.numel()).detach()  # d mean(out^2) / d out
    args = [named[f].detach() for f in cap.params] + [named[f].detach() for f in cap.buffers] + list(inputs) + [tangent]
    merged = dict(plan.plan)
    merged["placements"] = {**plan.plan.get("placements", {}), **plan.plan.get("input_placements", {})}
    run = ct.run_plan(cap.gm, merged, mesh, args, mode="local", devices_per_host=int(plan.plan.get("devices_per_host", 8)))
    issued = run.collectives()
    out_args = list(next(n for n in cap.gm.graph.nodes if n.op == "output").args[0])
    values = {a.name: v for a, v in zip(out_args, run.outputs) if a is not None}
    with ct.CollectiveLog(mesh) as log:
        for fqn, grad in cap.grads.items():
            g = values.get(grad)
            want = plan.dtensor_placements()[fqn]
            if isinstance(g, DTensor) and tuple(g.placements) != tuple(want):
                g.redistribute(mesh, want)
    return {"issued": issued + [dict(c, phase="gradient") for c in log.log], "agree": list(run.agreement())}


def train_plan(plan, name: str, mesh, steps: int, execute: str = "plan") -> dict:
    """Apply ``plan`` to a fresh ``name`` model (``plan.apply(model, execute=execute)``), train
    ``steps`` Adam steps on every rank and measure step 1: the collectives DTensor issued per phase (``ctshard.torch.CollectiveLog``:
    forward, loss, backward with the gradient hooks, optimizer step, reading the loss) and the
    memory per rank (maximum over the ranks, bytes): parameters and gradients (local shards),
    optimizer states (Adam's ``exp_avg`` / ``exp_avg_sq``; its ``step`` counters apart), the
    activations saved for backward (``SavedBytes`` around the model's forward)."""
    import ctshard.torch as ct
    from torch.distributed.tensor import DTensor

    import warnings

    # CommDebugMode's module tracker registers full backward hooks, which warn when the inputs
    # need no gradient (the batch): noise for this measurement
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    model, inputs = build(name)
    par = plan.apply(copy.deepcopy(model), execute=execute)
    params = [p for p in par.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    losses, issued, measured = [], {}, {}
    for i in range(steps):
        if i == 0:
            saved = SavedBytes(params, inputs)
            with ct.CollectiveLog(mesh) as fwd, saved.hooks():
                out = par(*inputs)
            with ct.CollectiveLog(mesh) as lss:
                loss = loss_of(out)
            with ct.CollectiveLog(mesh) as bwd:
                loss.backward()
            grads = sum(_nbytes(p.grad) for p in params if p.grad is not None)
            with ct.CollectiveLog(mesh) as stp:
                opt.step()
            states = [st for p in params for st in [opt.state[p]]]
            moments = sum(_nbytes(st[k]) for st in states for k in ("exp_avg", "exp_avg_sq") if k in st)
            counters = sum(_nbytes(st["step"]) for st in states if "step" in st)
            opt.zero_grad()
            with ct.CollectiveLog(mesh) as val:
                losses.append(loss.full_tensor().item())
            full = out.full_tensor()
            p_bytes = sum(_nbytes(p) for p in params)
            keys = ("parameters", "gradients", "optimizer", "activations", "adam_step_counters", "activations_shared")
            measured = dict(zip(keys, _rank_max([p_bytes, grads, moments, saved.bytes, counters, saved.shared])))
            measured["total"] = sum(measured[k] for k in ("parameters", "gradients", "optimizer", "activations"))
            issued = {"forward": fwd.log, "loss": lss.log, "backward": bwd.log, "optimizer_step": stp.log,
                      "loss_value": val.log}
            comms = {str(k): v for k, v in fwd.get_comm_counts().items()}
            for log in (lss, bwd):
                for k, v in log.get_comm_counts().items():
                    comms[str(k)] = comms.get(str(k), 0) + v
            continue
        loss = loss_of(par(*inputs))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.full_tensor().item())
    placements = {n: ct.to_spec(p) for n, p in par.named_parameters()}
    placements.update({n: ct.to_spec(b) for n, b in par.named_buffers() if isinstance(b, DTensor)})
    return {"model": name, "mesh": list(mesh.shape), "losses": losses, "placements": placements,
            "planned": plan.parameter_placements, "step_time_us": plan.step_time_us, "memory_gib": plan.memory_gib,
            "proven_optimal": plan.proven_optimal, "gap": plan.optimality_gap, "summary": plan.summary(),
            "collectives": comms, "output_is_dtensor": isinstance(out, DTensor), "output_shape": list(full.shape),
            "priced": plan.priced_collectives(), "issued": issued, "measured_bytes": measured,
            "executed": executed_step(plan, model, inputs, mesh),
            "communication_us": plan.communication_us, "execute": execute,
            "gradient_reduction_us": float(plan.plan.get("gradient_reduction_us", 0.0))}


def train(name: str, mesh, steps: int, budget_gib: float | None = None, time_limit_s: float = 5.0,
          hand_plans: bool = False, execute: str = "plan") -> dict:
    """Plan ``name`` with ``auto_parallel`` (batch pinned ``S(0)`` on mesh dim 0, the budget),
    apply (``execute``: ``"plan"`` or ``"propagate"``, ``ParallelPlan.apply``) and train it
    (``train_plan``) on ``mesh`` (every rank); the result on every rank. With
    ``hand_plans``, also ``"hand"``: the planner's DDP, FSDP and Megatron TP + FSDP, each applied
    as a plan with every parameter and the batch pinned to its placements, trained and measured
    the same way (name -> result, with ``hand_step_time_us`` and ``hand_status`` as the hand plan
    reports them)."""
    import ctshard.torch as ct

    model, inputs = build(name)
    plan = ct.auto_parallel(model, inputs, mesh, memory_budget_gib=budget_gib,
                            place={"inputs[0]": "S(0)" + "R" * (mesh.ndim - 1)}, time_limit_s=time_limit_s,
                            hand_plans=hand_plans)
    result = train_plan(plan, name, mesh, steps, execute=execute)
    result["budget_gib"] = budget_gib
    if hand_plans:
        result["hand"] = {}
        for hname, hp in plan.hand_plans.items():
            pinned = ct.auto_parallel(model, inputs, mesh, place=hp["place"], time_limit_s=time_limit_s)
            try:
                r = train_plan(pinned, name, mesh, steps, execute=execute)
            except RuntimeError as e:  # DTensor cannot run it (every rank raises the same)
                result["hand"][hname] = {"model": name, "mesh": list(mesh.shape), "error": f"{type(e).__name__}: {e}",
                                         "step_time_us": pinned.step_time_us, "hand_step_time_us": hp["step_time_us"],
                                         "planned": pinned.parameter_placements, "priced": pinned.priced_collectives(),
                                         "executed": executed_step(pinned, model, inputs, mesh)}
                continue
            r.update(budget_gib=budget_gib, hand_step_time_us=hp["step_time_us"], hand_status=hp["status"],
                     hand_memory_gib=hp["memory_gib"])
            result["hand"][hname] = r
    return result


class _Case:
    """A picklable case: ``train(name, mesh, steps, budget, hand_plans=True, execute="plan")``."""

    def __init__(self, name, steps, budget, hand_plans=True, time_limit_s=5.0, execute="plan"):
        self.name, self.steps, self.budget, self.hand_plans, self.time_limit_s = name, steps, budget, hand_plans, time_limit_s
        self.execute = execute

    def __call__(self, mesh):
        return train(self.name, mesh, self.steps, self.budget, time_limit_s=self.time_limit_s, hand_plans=self.hand_plans,
                     execute=self.execute)


STEPS = 5
BUDGET_GIB = {"gpt": 2e-4, "llama": 2.5e-4}  # below the all-Replicate plan's need: weights get sharded
PRICED_PHASES = ("forward", "loss", "backward")  # what one step of the planner's model covers
MEMORY_KEYS = ("parameters", "gradients", "optimizer", "activations", "total")


def _key(c, mesh):
    """(collective, mesh dim, bytes per rank): a priced all-to-all counted as what DTensor runs
    for it on gloo (an all-gather of mesh-dim size times the bytes, then a chunk)."""
    kind, dim, size = c["collective"], c["mesh_dim"], float(c["bytes"])
    if kind == "all_to_all":
        kind, size = "all_gather", size * mesh[dim]
    return kind, dim, size


def compare_collectives(result: dict) -> dict:
    """Priced (the plan's moves and gradient reductions) against issued (CommDebugMode over the
    step's forward, loss and backward) as multisets of (collective, mesh dim, bytes per rank):
    counts, bytes, whether they are equal, and each difference with its cause (the DTensor op or
    explicit redistribution that issued it; the graph node whose move was priced)."""
    from collections import Counter

    mesh = result["mesh"]
    issued = [c for ph in PRICED_PHASES for c in result["issued"][ph]]
    priced = result["priced"]
    qi, qp = Counter(_key(c, mesh) for c in issued), Counter(_key(c, mesh) for c in priced)
    extra, missing = qi - qp, qp - qi
    # the excess of each key, attributed to its last issuers (its first ones count as the
    # priced ones; which instance of an equal key "is" the priced one is a convention)
    seen, extra_by = Counter(), Counter()
    for c in issued:
        k = _key(c, mesh)
        seen[k] += 1
        if seen[k] > qp[k]:
            extra_by[(c["by"] or "redistribute (input, module output or model output hook)", *k)] += 1
    seen, missing_by = Counter(), Counter()
    for c in priced:
        k = _key(c, mesh)
        seen[k] += 1
        if seen[k] > qi[k]:
            missing_by[(c["phase"], c["node"], *k)] += 1
    qe = Counter(_key(c, mesh) for c in result["executed"]["issued"])
    return {"priced_count": len(priced), "issued_count": len(issued),
            "executed_count": len(result["executed"]["issued"]), "executed_equal": qe == qp,
            "executed_bytes": sum(k[2] * n for k, n in qe.items()),
            "executed_not_priced": dict(qe - qp), "priced_not_executed": dict(qp - qe),
            "priced_bytes": sum(k[2] * n for k, n in qp.items()), "issued_bytes": sum(k[2] * n for k, n in qi.items()),
            "equal": qi == qp, "issued_not_priced": dict(extra), "priced_not_issued": dict(missing),
            "issued_not_priced_by": dict(extra_by), "priced_not_issued_at": dict(missing_by),
            "unpriced_phases": {ph: len(result["issued"][ph]) for ph in ("optimizer_step", "loss_value")}}


def _kinds(items) -> str:
    from collections import Counter

    short = {"all_gather": "AG", "reduce_scatter": "RS", "all_reduce": "AR", "all_to_all": "A2A"}
    c = Counter(short.get(x["collective"], x["collective"]) for x in items)
    return " ".join(f"{n} {k}" for k, n in sorted(c.items())) or "none"


def table_row(label: str, r: dict) -> str:
    """One markdown row: plan, modelled step, collectives and bytes priced vs issued, memory per
    category modelled vs measured (KiB), total measured vs budget."""
    cmp = compare_collectives(r)
    issued = [c for ph in PRICED_PHASES for c in r["issued"][ph]]
    mem = " / ".join(f"{r['memory_gib'][k] * 2**20:.1f} : {r['measured_bytes'][k] / 1024:.1f}" for k in MEMORY_KEYS)
    budget = r.get("budget_gib")
    within = "–" if budget is None else ("yes" if r["measured_bytes"]["total"] <= budget * 2**30 else "NO")
    step = f"{r['step_time_us']:.1f}" + (f" ({r['hand_step_time_us']:.1f})" if "hand_step_time_us" in r else "")
    return (f"| {r['model']} | {'x'.join(map(str, r['mesh']))} | {label} | {step} | "
            f"{cmp['priced_count']} ({_kinds(r['priced'])}) : {cmp['issued_count']} ({_kinds(issued)}) | "
            f"{cmp['priced_bytes']:,.0f} : {cmp['issued_bytes']:,.0f} | {'yes' if cmp['equal'] else 'no'} | "
            f"{cmp['executed_count']}, {cmp['executed_bytes']:,.0f} B: {'yes' if cmp['executed_equal'] else 'no'} | {mem} | "
            f"{r['measured_bytes']['activations_shared'] / 1024:.1f} | "
            f"{'–' if budget is None else f'{budget * 2**20:.1f}'} | {within} |")


TABLE_HEADER = ("| model | mesh | plan | step µs modelled (hand plan's own price) | collectives priced : issued | bytes / rank priced : issued "
                "| equal | plan executed by run_plan: collectives, bytes, equal to priced | memory KiB modelled : measured (params / grads / Adam / saved activations / total) "
                "| saved views KiB | budget KiB | measured ≤ budget |\n|---|---|---|---:|---|---:|---|---|---|---:|---:|---|")


def report(label: str, r: dict, ref: list[float]) -> bool:
    """Print one plan's checks; True when losses and placements hold."""
    from collections import Counter

    err = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref))
    same = r["placements"] == r["planned"]
    cmp = compare_collectives(r)
    print(f"-- {r['model']} {label}: step {r['step_time_us']:.1f} us modelled"
          + (f" (the hand plan's own pricing: {r['hand_step_time_us']:.1f} us, {r['hand_status']})" if "hand_step_time_us" in r else ""))
    print(f"   losses max relative error {err:.1e} vs single process ({'ok' if err <= TOLERANCE else 'FAIL'}); "
          f"parameter placements equal the plan's: {same}")
    print(f"   collectives of one step: priced {cmp['priced_count']} ({_kinds(r['priced'])}), {cmp['priced_bytes']:,.0f} B/rank;"
          f" issued (forward + loss + backward) {cmp['issued_count']}, {cmp['issued_bytes']:,.0f} B/rank:"
          f" {'EQUAL (kind, mesh dim, bytes)' if cmp['equal'] else 'DIFFERENT'}")
    causes = Counter()
    for (by, *_), n in cmp["issued_not_priced_by"].items():
        causes[by.replace("torch::autograd::AccumulateGrad", "AccumulateGrad (the gradient hooks)")] += n
    if causes:
        print("   issued, not priced, by cause: " + ", ".join(f"{by} {n}" for by, n in causes.most_common()))
    for (by, kind, dim, size), n in sorted(cmp["issued_not_priced_by"].items(), key=str):
        print(f"     issued, not priced: {n} x {kind} mesh dim {dim} {size:.0f} B  by {by}")
    for (phase, node, kind, dim, size), n in sorted(cmp["priced_not_issued_at"].items(), key=str):
        print(f"     priced, not issued: {n} x {kind} mesh dim {dim} {size:.0f} B  at {phase} node {node}")
    ex = r["executed"]
    print(f"   the plan executed node by node (run_plan, local mode; {ex['agree'][0]}/{ex['agree'][1]} nodes at the planned"
          f" placements): {cmp['executed_count']} collectives, {cmp['executed_bytes']:,.0f} B/rank:"
          f" {'EQUAL to the priced ones' if cmp['executed_equal'] else 'DIFFERENT'}"
          + ("" if cmp["executed_equal"] else f" (executed, not priced {cmp['executed_not_priced']}; priced, not executed"
                                              f" {cmp['priced_not_executed']})"))
    print(f"   outside the planned step (not priced): optimizer step {cmp['unpriced_phases']['optimizer_step']} collectives,"
          f" reading the loss (full_tensor) {cmp['unpriced_phases']['loss_value']}")
    m, b = r["memory_gib"], r["measured_bytes"]
    print("   memory per rank, KiB, modelled : measured: " + ", ".join(
        f"{k} {m[k] * 2**20:.2f} : {b[k] / 1024:.2f}" for k in MEMORY_KEYS)
        + f"; not modelled: Adam step counters {b['adam_step_counters']:.0f} B")
    print(f"   saved tensors holding no storage of their own (views of a parameter or of another saved tensor):"
          f" {b['activations_shared'] / 1024:.2f} KiB, which the modelled activations count")
    if r.get("budget_gib") is not None:
        print(f"   budget {r['budget_gib'] * 2**20:.2f} KiB: measured total {'within' if b['total'] <= r['budget_gib'] * 2**30 else 'OVER'}")
    return err <= TOLERANCE and same


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-size", type=int, default=4, choices=(4, 8))
    ap.add_argument("--no-hand-plans", action="store_true", help="train the auto plan only")
    ap.add_argument("--execute", default="plan", choices=("plan", "propagate"),
                    help="ParallelPlan.apply's execute: the planned graph (default) or DTensor's propagation")
    args = ap.parse_args(argv)
    mesh = (2, args.world_size // 2)
    names = ("gpt", "llama")
    results = run_group(mesh, [_Case(n, STEPS, BUDGET_GIB[n], hand_plans=not args.no_hand_plans, execute=args.execute)
                               for n in names])
    ok = True
    rows = []
    for name, r in zip(names, results):
        if "error" in r:
            print(f"{name}: {r['error']}\n{r['traceback']}")
            ok = False
            continue
        ref = reference_losses(name, STEPS)
        print(f"== {name} on {'x'.join(map(str, mesh))} ({args.world_size} processes)")
        print(r["summary"])
        ok = report("auto_parallel", r, ref) and ok
        rows.append(table_row("auto_parallel", r))
        for hname, h in r.get("hand", {}).items():
            if "error" in h:
                first = h["error"].splitlines()[0]
                from collections import Counter

                same = Counter(_key(c, mesh) for c in h["executed"]["issued"]) == Counter(_key(c, mesh) for c in h["priced"])
                ex = f"{len(h['executed']['issued'])}, {sum(c['bytes'] for c in h['executed']['issued']):,.0f} B: {'yes' if same else 'no'}"
                print(f"-- {name} {hname}: step {h['step_time_us']:.1f} us modelled; DTensor's eager sharding propagation"
                      f" FAILED to run it with apply(): {first}\n   the plan executed node by node (run_plan):"
                      f" {ex.replace(': ', ' per rank, equal to the priced ones: ')}")
                rows.append(f"| {name} | {'x'.join(map(str, mesh))} | {hname} | {h['step_time_us']:.1f} ({h['hand_step_time_us']:.1f})"
                            f" | {len(h['priced'])} ({_kinds(h['priced'])}) :"
                            f" apply() failed in DTensor: {first[:60]} | | | {ex} | | | | |")
                continue
            ok = report(hname, h, ref) and ok
            rows.append(table_row(hname, h))
    print("\n" + TABLE_HEADER)
    print("\n".join(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
