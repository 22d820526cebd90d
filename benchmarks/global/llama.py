"""A Llama-3-8B-shaped decoder (hidden 4096, 32 query / 8 key-value heads (GQA), FFN 14336 with
SwiGLU, RMSNorm, rotary embeddings, vocab 128256) of a few layers, in plain PyTorch, and one
bf16 training step traced to an aten FX graph (training_step.py).

    python benchmarks/global/llama.py OUT.fx.txt [--layers 4] [--batch 8] [--seq 2048]
"""
from __future__ import annotations

import sys

import torch
from torch import nn

import training_step


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    """Rotary embedding on the last dim (the two halves rotated), x: [b, heads, t, head_dim]."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int, ffn: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.attention_norm = RMSNorm(d)
        self.wq = nn.Linear(d, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, d, bias=False)
        self.ffn_norm = RMSNorm(d)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.attention_norm(x)
        q = self.wq(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, d))
        h = self.ffn_norm(x)
        return x + self.w2(torch.nn.functional.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, layers=4, d=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, theta=500000.0):
        super().__init__()
        self.d, self.heads, self.theta = d, heads, theta
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Block(d, heads, kv_heads, ffn) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.output = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, targets):
        b, t = tokens.shape
        head_dim = self.d // self.heads
        inv = 1.0 / self.theta ** (torch.arange(0, head_dim, 2, device=tokens.device).float() / head_dim)
        ang = torch.outer(torch.arange(t, device=tokens.device).float(), inv)
        ang = torch.cat((ang, ang), dim=-1)
        x = self.tok_embeddings(tokens)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        for block in self.layers:
            x = block(x, cos, sin)
        logits = self.output(self.norm(x))
        return torch.nn.functional.cross_entropy(logits.view(b * t, -1).float(), targets.view(-1))


def trace(layers=4, batch=8, seq=2048) -> torch.fx.GraphModule:
    """One bf16 training step: (parameters..., tokens, targets) -> (loss, grads...)."""
    tokens = torch.zeros(batch, seq, dtype=torch.long)
    targets = torch.zeros(batch, seq, dtype=torch.long)
    return training_step.trace(lambda: Llama(layers=layers), (tokens, targets), dtype=torch.bfloat16)


def main(argv=None) -> int:
    return training_step.main(__doc__, trace, layers=4, batch=8, seq=2048, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
