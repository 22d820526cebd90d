"""``rule_set=`` on ctshard.table / choose / plan: "ctshard" (the default) and "dtensor" (exactly
DTensor 2.13's rows; docs/semantics.md, "Two rule sets"), R16's eval batch norm, bad values.

The rule set against DTensor's own tables, op by op, is tests/python/conformance
(test_dtensor_rule_set.py)."""

from __future__ import annotations

import pytest

import ctshard

R16 = dict(op="aten._native_batch_norm_legit_no_training.default", shapes=[[8, 16, 32, 32], [16], [16], [16], [16]],
           mesh=[2, 2], inputs=["S(0)R", "RR", "RR", "RR", "RR"], args=["$0", "$1", "$2", "$3", "$4", 0.1, 1e-5])


def _rows(t: dict) -> set[tuple]:
    return {(tuple(s["out"]) if isinstance(s["out"], list) else s["out"], tuple(s["in"])) for s in t["strategies"]}


def test_r16_eval_batch_norm_rows():
    ours = ctshard.table(**R16)
    dt = ctshard.table(**R16, rule_set="dtensor")
    assert ours["rule_set"] == "ctshard" and dt["rule_set"] == "dtensor"
    # DTensor 2.13 (batch_norm_strategy): channels only
    assert dt["rules_raw"] == [["S?(1)", "S?(0)", "S?(0)", "S?(1)", "S?(0)", "S?(0)", "S?(0)", "S?(0)"]]
    assert all("S(0)" not in s["in"][0] for s in dt["strategies"])  # the input never stays batch-sharded
    chosen = dt["strategies"][dt["choice"]["index"]]
    assert chosen["in"][0] == "RS(1)" and chosen["total"] > 0
    # ctshard's rules keep the batch shard at no cost, and have every DTensor row too
    mine = ours["strategies"][ours["choice"]["index"]]
    assert mine["in"][0] == "S(0)R" and mine["total"] == 0.0
    assert _rows(dt) <= _rows(ours)
    # choose gives the same answers
    assert ctshard.choose(**R16, rule_set="dtensor")["in"] == chosen["in"]
    assert ctshard.choose(**R16)["in"] == mine["in"]


def test_follow_rows_and_errors():
    # sum of P(max)S(1): DTensor's linear_reduction_strategy replicates everything
    t = ctshard.table("aten.sum.default", [[12, 12]], [2, 2], ["P(max)S(1)"], rule_set="dtensor")
    assert [(s["out"], s["in"]) for s in t["strategies"]] == [("RR", ["RR"])]
    assert t["uneven_inputs"] == "unchecked"
    # a strict view DTensor refuses: ValueError with DTensor's message
    with pytest.raises(ValueError, match="DTensor 2.13 raises: Cannot flatten unevenly sharded tensor"):
        ctshard.table("aten.view.default", [[3, 4]], [2], ["S(0)"], args=[[12]], rule_set="dtensor")
    # ctshard's rules answer it
    assert ctshard.table("aten.view.default", [[3, 4]], [2], ["S(0)"], args=[[12]])["strategies"]


def test_rule_set_implies_dtensor_linearity_and_passthrough():
    # clone of a Partial: ctshard passes it through, the dtensor rule set reduces first whatever
    # partial_passthrough says
    t = ctshard.table("aten.clone.default", [[8]], [2], ["P(sum)"], partial_passthrough="ctshard", rule_set="dtensor")
    assert all("P(" not in s["in"][0] for s in t["strategies"])
    assert any("P(" in s["in"][0] for s in ctshard.table("aten.clone.default", [[8]], [2], ["P(sum)"])["strategies"])


def test_plan_with_the_dtensor_rule_set():
    ours = ctshard.plan(mesh=[2, 2])
    dt = ctshard.plan(mesh=[2, 2], rule_set="dtensor")
    assert ours["rule_set"] == "ctshard" and dt["rule_set"] == "dtensor"
    assert dt["nodes_fallback"] == 0
    # The greedy totals are not ordered (fewer rows at one node can lead later nodes to cheaper
    # ones: here 42.8 us with DTensor's rows, 46.5 us with ctshard's), so compare a node: the fused
    # QKV split of the S(0)S(2) view. DTensor's split_strategy follows the current input with the
    # split dim unsharded (S(0)R, an all-gather); ctshard's rules move it to S(0)S(0) (cheaper).
    split = {p["rule_set"]: next(n for n in p["nodes"] if n["name"] == "split") for p in (ours, dt)}
    assert split["dtensor"]["inputs"] == ["S(0)R"] and split["dtensor"]["outputs"] == ["S(0)R"] * 3
    assert split["ctshard"]["inputs"] == ["S(0)S(0)"]
    assert split["ctshard"]["cost_us"] < split["dtensor"]["cost_us"]
    for p in (ours, dt):
        assert sum(n["cost_us"] for n in p["nodes"]) == pytest.approx(p["total_cost_us"], rel=1e-9)
    # the whole-graph planner takes the rows DTensor runs unchanged
    g = ctshard.plan(mesh=[2, 2], rule_set="dtensor", algo="global", time_limit_ms=5000)
    assert g["rule_set"] == "dtensor" and g["total_cost_us"] <= dt["total_cost_us"] + 1e-6


@pytest.mark.parametrize("call", [
    lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], rule_set="pytorch"),
    lambda: ctshard.choose("mm", [[4, 4], [4, 4]], [2], ["R", "R"], rule_set="DTensor"),
    lambda: ctshard.plan(mesh=[2], rule_set=""),
])
def test_unknown_rule_set_is_a_value_error(call):
    with pytest.raises(ValueError, match="rule.set must be 'ctshard' or 'dtensor'"):
        call()
