"""Regression cases R13 / R14 / R18 (../shared/cases/regressions_3.json) through the Python package:
a torch.fx.GraphModule with a dict argument (flex attention's kernel options) and submodule
arguments plans exactly like its printout; collectives take Replicate as they take a Shard."""

from __future__ import annotations

import pytest
import torch

import ctshard
from conftest import shared_path
from ctshard import _graph

pytestmark = pytest.mark.torch_bound


def _flex_module(score: str) -> torch.fx.GraphModule:
    """torch.export of flex attention with a causal block mask; `score` "plain" (s * 2 + (q - kv))
    or "alibi" (s + h: reads the head index)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    bm = create_block_mask(lambda b, h, q, kv: q >= kv, 2, 4, 128, 128, device="cpu")
    mod = (lambda s, b, h, q, kv: s + h) if score == "alibi" else (lambda s, b, h, q, kv: s * 2.0 + (q - kv))

    class M(torch.nn.Module):
        def forward(self, q, k, v):
            return flex_attention(q, k, v, block_mask=bm, score_mod=mod) * 2.0

    x = [torch.randn(2, 4, 128, 64) for _ in range(3)]
    return torch.export.export(M(), tuple(x)).graph_module


def _node(plan: dict, op: str) -> dict:
    (n,) = [n for n in plan["nodes"] if n["op"] == op]
    return n


def test_graph_module_dict_argument_converts():
    assert _graph._arg({"BACKEND": "AUTO", "N": 3}) == {"dict": [["BACKEND", "AUTO"], ["N", 3]]}
    assert _graph._arg({1, 2}) in ([1, 2], [2, 1])
    assert _graph._arg(Ellipsis) == {"opaque": "..."}
    assert _graph._arg(1 + 2j) == {"opaque": "(1+2j)"}


@pytest.mark.parametrize("score", ["plain", "alibi"])
def test_flex_attention_graph_module_plans_as_its_printout(score):
    gm = _flex_module(score)
    flex_nodes = [n for n in gm.graph.nodes if n.op == "call_function" and "flex_attention" in str(n.target)]
    assert flex_nodes and any(isinstance(a, dict) for a in flex_nodes[0].args)  # the kernel options dict
    text = gm.print_readable(print_output=False)
    for place, heads_whole in ((("q", "S(0)"),), False), ((("q", "S(1)"),), score == "alibi"):
        place = dict(place)
        from_gm = ctshard.plan(gm, mesh=[2], place=place)
        from_text = ctshard.plan(text, mesh=[2], place=place)
        for key in ("nodes", "total_cost_us", "nodes_fallback"):
            assert from_gm[key] == from_text[key], key
        flex = _node(from_gm, "higher_order.flex_attention")
        assert not flex["fallback"]
        if place["q"] == "S(0)" or not heads_whole:
            assert flex["outputs"][0] == place["q"] and flex["cost_us"] == 0.0
        else:  # the score_mod reads h: heads stay whole
            assert flex["outputs"][0] == "R" and flex["cost_us"] > 0.0


def test_r14_case_file_plans():
    path = shared_path("cases", "graphs", "flex_attention_dict_arg.fx.txt")
    p = ctshard.plan(str(path), mesh=[2], place={"q": "S(0)"})
    flex = _node(p, "higher_order.flex_attention")
    assert p["nodes_fallback"] == 0 and p["total_cost_us"] == 0.0
    assert flex["outputs"][:2] == ["S(0)", "S(0)"] and flex["inputs"] == ["S(0)"] * 5


def test_unreadable_argument_falls_back_for_that_node_only():
    text = """class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 4]"):
        a: "f32[8, 4]" = torch.ops.aten.relu.default(x)
        b: "f32[8, 4]" = torch.ops.my.op.default(a, frobnicate(3))
        c: "f32[8, 4]" = torch.ops.aten.neg.default(b)
        return (c,)
"""
    p = ctshard.plan(text, mesh=[2], place={"x": "S(0)"})
    assert p["nodes_fallback"] == 1
    b = [n for n in p["nodes"] if n["name"] == "b"][0]
    assert b["fallback"] and "cannot read the arguments" in b["reason"] and "frobnicate" in b["reason"]


def test_r13_collectives_take_replicate():
    t = ctshard.table("_c10d_functional.all_reduce.default", [[8, 4]], [2], ["R"], args=["$0", "sum", "0"])
    chosen = t["strategies"][t["choice"]["index"]]
    assert chosen["out"] == "R" and chosen["in"] == ["R"] and chosen["total"] == 0.0
    g = ctshard.table("_c10d_functional.all_gather_into_tensor.default", [[4, 6]], [2], ["S(0)"], args=["$0", 2, "0"])
    chosen = g["strategies"][g["choice"]["index"]]
    assert chosen["out"] == "_S(0, 2)" and chosen["in"] == ["S(0)"] and chosen["total"] == 0.0
    b = ctshard.table("_c10d_functional.broadcast.default", [[4, 6]], [2], ["P(max)"], args=["$0", 0, "0"])
    assert b["strategies"][b["choice"]["index"]]["out"] == "P(max)"
