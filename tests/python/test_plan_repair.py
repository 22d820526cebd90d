"""ctshard.plan and dead ends (R12) and data-parallel inputs: the same C++ as `ctshard plan`."""

from __future__ import annotations

import math

import pytest

import ctshard
from conftest import shared_path

NO_FINITE_PLAN = """class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[1]"):
        all_reduce: "f32[1]" = torch.ops.vllm.all_reduce.default(x, "tp:0")
        return (all_reduce,)
"""


def test_r12_plan_is_finite_and_repaired():
    p = ctshard.plan(str(shared_path("cases", "graphs", "greedy_dead_end_pmax.fx.txt")), mesh=[2], place={"x": "S(1)"})
    assert math.isfinite(p["total_cost_us"])
    assert all(n.get("repaired", True) is True for n in p["nodes"])  # present (True) on repaired nodes only
    assert p["nodes_repaired"] == sum(n.get("repaired", False) for n in p["nodes"])
    g = ctshard.plan(str(shared_path("cases", "graphs", "greedy_dead_end_pmax.fx.txt")), mesh=[2], place={"x": "S(1)"}, algo="global")
    assert g["proven_optimal"]
    assert p["total_cost_us"] >= g["total_cost_us"] - 1e-9
    if p["nodes_repaired"]:  # the sum all-reduce refuses Replicate: repaired to the optimum, 7.2 us
        assert p["nodes"][1]["repaired"] and "costs inf" in p["nodes"][1]["repair"]
        assert p["total_cost_us"] == pytest.approx(g["total_cost_us"])
        assert g["greedy_nodes_repaired"] == 1
        assert not any("repaired" in n for n in g["nodes"])  # the global plan's nodes are its own


def test_partial_max_into_a_sum_all_reduce_is_finite():
    """The graph that had no finite plan before R13: a P(max) into vllm.all_reduce (a sum). Every
    collective now takes Replicate (docs/semantics.md, "Collectives in graphs"), so no built-in op
    is left without an all-Replicate row and the plan is finite, through a reduction first; the
    no-finite-plan error itself needs a rule without one (tests/cli/test_plan_repair.cpp builds such
    a registry in C++)."""
    t = ctshard.table("vllm.all_reduce.default", [[1]], [2], ["P(max)"], args=["tp:0"])
    assert any(s["in"] == ["R"] for s in t["strategies"])
    for algo in ("search", "global"):
        p = ctshard.plan(NO_FINITE_PLAN, mesh=[2], place={"x": "P(max)"}, algo=algo)
        assert math.isfinite(p["total_cost_us"]) and p["total_cost_us"] > 0, algo
        assert p["nodes"][0]["inputs"] in (["R"], ["S(0)"]), p["nodes"][0]
    assert ctshard.plan(NO_FINITE_PLAN, mesh=[2], place={"x": "P(max)"})["nodes_repaired"] == 0  # finite without a repair


def test_data_parallel_inputs():
    g = str(shared_path("graphs", "more", "vit_b16_bw.fx.txt"))
    p = ctshard.plan(g, mesh=[2, 4], data_parallel=True)
    dp = p["data_parallel"]
    assert (dp["batch_size"], dp["inferred"], len(dp["inputs"])) == (8, True, 113)
    assert p["placements"]["tangents_1"] == "S(0)R" and len(p["placements"]) == 113
    cli_like = ctshard.plan(g, mesh=[2, 4], place={n: "S(0)R" for n in dp["inputs"]})
    assert p["total_cost_us"] == cli_like["total_cost_us"]  # data_parallel is exactly those placements
    b = ctshard.plan(g, mesh=[2, 4], data_parallel=True, batch_size=1576)
    assert (b["data_parallel"]["inferred"], len(b["data_parallel"]["inputs"])) == (False, 60)
    assert "data_parallel" not in ctshard.plan(g, mesh=[2, 4])
    with pytest.raises(ValueError, match="batch_size needs data_parallel=True"):
        ctshard.plan(g, mesh=[2, 4], batch_size=8)
    with pytest.raises(ValueError, match="a batch size must be at least 1"):
        ctshard.plan(g, mesh=[2, 4], data_parallel=True, batch_size=0)
    with pytest.raises(ValueError, match="batch_size must be an integer"):
        ctshard.plan(g, mesh=[2, 4], data_parallel=True, batch_size=8.5)
    with pytest.raises(ValueError, match="repair_time_limit_ms must be a finite number >= 0"):
        ctshard.plan(g, mesh=[2, 4], repair_time_limit_ms=-1)
