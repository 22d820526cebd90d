"""GPT-2 small (12 layers, d=768, 12 heads, vocab 50257) in plain PyTorch, and one training step
(forward, loss, backward) traced to an aten FX graph with make_fx on fake tensors.

    python benchmarks/global/gpt2.py OUT.fx.txt [--layers 12] [--batch 8] [--seq 1024]

writes the graph printout (several MB for 12 layers; kept out of git) and prints the placements
used by the benchmark (`placements(...)`). The loss is written the way a language model's loss
often is — log-softmax, then `index` picks each target's log-probability — which is where a
greedy per-node choice goes wrong: the matmul before it picks a layout the loss cannot use.
"""
from __future__ import annotations

import math
import sys

import torch
from torch import nn

import training_step


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, layers=12, d=768, heads=12, vocab=50257, max_seq=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_seq, d)
        self.h = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, tokens, targets):
        b, t = tokens.shape
        pos = torch.arange(t, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        mask = torch.ones(t, t, dtype=torch.bool, device=tokens.device).triu(1)
        for block in self.h:
            x = block(x, mask)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        logp = torch.log_softmax(logits.view(b * t, -1), dim=-1)
        picked = logp[torch.arange(b * t, device=tokens.device), targets.view(-1)]
        return -picked.mean()


def trace(layers=12, batch=8, seq=1024) -> torch.fx.GraphModule:
    """One training step as an aten graph: (parameters..., tokens, targets) -> (loss, grads...)."""
    tokens = torch.zeros(batch, seq, dtype=torch.long)
    targets = torch.zeros(batch, seq, dtype=torch.long)
    return training_step.trace(lambda: GPT2(layers=layers), (tokens, targets))


def placements(gm: torch.fx.GraphModule, setting: str) -> dict[str, str]:
    """Input placements on a 2-D mesh (data parallel on mesh dim 0, tensor parallel on mesh dim 1):

    - ``dp``: tokens and targets ``S(0)R``, parameters replicated;
    - ``megatron``: ``dp`` plus Megatron-style tensor parallelism: QKV and MLP-up weights split by
      output rows (``RS(0)``) with their biases, attention-out and MLP-down weights by input
      columns (``RS(1)``), the (tied) token embedding by vocabulary rows (``RS(0)``);
    - ``fsdp``: every input whose dim 0 splits over mesh dim 0 is ``S(0)R``.
    """
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = gm.param_names
    params, tokens, targets = inputs[: len(names)], inputs[-2], inputs[-1]
    out = {tokens.name: "S(0)R", targets.name: "S(0)R"}
    if setting == "dp":
        return out
    if setting == "fsdp":
        for node in inputs:
            shape = node.meta["val"].shape
            if len(shape) and shape[0] >= 2:
                out[node.name] = "S(0)R"
        return out
    if setting != "megatron":
        raise ValueError(setting)
    for node, name in zip(params, names):
        if name.endswith(("c_attn.weight", "c_fc.weight", "c_attn.bias", "c_fc.bias")) or name == "wte.weight":
            out[node.name] = "RS(0)"
        elif name.endswith(("c_proj.weight", "mlp_proj.weight")):
            out[node.name] = "RS(1)"
    return out


def main(argv=None) -> int:
    return training_step.main(__doc__, trace, layers=12, batch=8, seq=1024, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
