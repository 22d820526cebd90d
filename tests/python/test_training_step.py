"""The training-step model through ``ctshard.plan(..., algo="global", free_inputs=True)``: the
joint MLP of tests/data (gradients from the AOT joint format or given as a mapping), memory by
category in GiB per device, an impossible budget, the hand plans and an unknown optimizer."""

from __future__ import annotations

import pathlib
import re

import pytest

import ctshard

GRAPH = pathlib.Path(__file__).resolve().parents[1] / "data" / "joint_mlp.fx.txt"
GIB = 1024.0**3
WEIGHTS = (32 * 16 + 16 * 32) * 4  # bytes of both weights, f32


def _plan(**kw):
    return ctshard.plan(GRAPH, mesh=[2, 2], algo="global", free_inputs=True, time_limit_ms=20000, **kw)


def test_memory_by_category_for_the_ddp_plan():
    place = {"primals_1": "RR", "primals_2": "RR", "primals_3": "S(0)S(0)", "tangents_1": "S(0)S(0)"}
    r = _plan(place=place, optimizer="adam")
    assert r["training"] is True and r["optimizer"] == "adam"
    assert r["gradients"] == {"mm_4": "primals_1", "mm_2": "primals_2"}
    m = r["memory"]
    assert m["parameters"] * GIB == WEIGHTS
    assert m["gradients"] * GIB == WEIGHTS
    assert m["optimizer"] * GIB == 2 * WEIGHTS
    relu = next(n for n in r["nodes"] if n["name"] == "relu")["outputs"][0]
    shards = 4 if relu.count("S(") == 2 else (2 if "S(" in relu else 1)
    assert m["activations"] * GIB == 64 * 16 * 4 / 4 + 64 * 32 * 4 / shards
    assert m["total"] == pytest.approx(m["parameters"] + m["gradients"] + m["optimizer"] + m["activations"])
    # the all-reduce of both P(sum) gradients to the replicated weights
    cost = sum(ctshard.cost(shape, [2, 2], "P(sum)P(sum)", "RR")["cost_us"] for shape in ([32, 16], [16, 32]))
    assert r["gradient_reduction_us"] == pytest.approx(cost, rel=1e-9)
    assert set(r["greedy_memory"]) == {"parameters", "gradients", "optimizer", "activations", "total"}


def test_explicit_gradients_and_sgd():
    r = _plan(optimizer="sgd", gradients={"mm_4": "primals_1"})
    assert r["gradients"] == {"mm_4": "primals_1"}
    assert r["memory"]["optimizer"] == 0
    assert r["memory"]["parameters"] * GIB <= 32 * 16 * 4


def test_impossible_budget_reports_the_smallest_footprint():
    r = _plan(memory_budget_gib=1024 / GIB)
    assert r["status"] == "infeasible"
    assert r["min_memory_gib"] * GIB == 1024 + 1024 + 2048 + 1024 + 2048


def test_hand_plans_never_beat_the_proven_optimum_within_the_budget():
    budget = 12000 / GIB
    r = _plan(memory_budget_gib=budget, hand_plans=True, global_options=None)
    assert r["proven_optimal"]
    assert [h["name"] for h in r["hand_plans"]] == ["ddp", "fsdp", "megatron_tp_fsdp"]
    within = [h for h in r["hand_plans"] if h["memory"]["total"] <= budget]
    assert within
    for h in within:
        assert r["objective_us"] <= h["step_time_us"]
    assert r["hand_plans"][0]["input_placements"]["primals_1"] == "RR"
    assert r["hand_plans"][1]["input_placements"]["primals_1"] == "S(0)S(0)"


def test_unknown_optimizer_is_named():
    with pytest.raises(ValueError, match="ctshard.plan: unknown optimizer 'lamb'"):
        _plan(optimizer="lamb")


def test_global_options_carry_the_training_fields():
    o = ctshard.GlobalOptions(free_inputs=True, optimizer="sgd_momentum", time_limit_ms=20000)
    r = ctshard.plan(GRAPH, mesh=[2, 2], algo="global", global_options=o)
    assert r["memory"]["optimizer"] == pytest.approx(r["memory"]["parameters"])


def test_training_false_plans_the_joint_graph_as_one_forward_graph():
    off = _plan(training=False)
    assert "memory" not in off and "training" not in off
    on = _plan()
    # the training step adds the gradient reductions to the objective: never cheaper
    assert on["objective_us"] >= off["objective_us"]
    with pytest.raises(ValueError, match="names no gradient"):
        ctshard.plan(mesh=[2, 2], algo="global", free_inputs=True, training=True)


def test_a_cost_graph_over_the_planners_memory_is_solved_over_restricted_candidates():
    full = ctshard.plan(GRAPH, mesh=[2, 2, 2, 2], algo="global", free_inputs=True, time_limit_ms=20000)
    assert full["status"] == "optimal" and full["solver"]["restricted_candidates"] is None
    r = ctshard.plan(GRAPH, mesh=[2, 2, 2, 2], algo="global", free_inputs=True, time_limit_ms=20000, max_memory_mib=2)
    info = r["solver"]["restricted_candidates"]
    assert info["why"] == "memory" and info["tied_mesh_dims"] == 2
    assert info["full_candidates"] == full["solver"]["candidates"] > r["solver"]["candidates"]
    assert info["full_mib"] > 2 * 0.3
    # a plan of the full problem (no cheaper than its optimum) against the full problem's bound
    assert r["lower_bound_us"] <= full["objective_us"] <= r["objective_us"]
    assert r["status"] == ("optimal" if r["objective_us"] <= r["lower_bound_us"] else "restricted")
    assert r["optimality_gap"] == pytest.approx((r["objective_us"] - r["lower_bound_us"]) / r["objective_us"])
    for spec in r["input_placements"].values():  # one placement on mesh dims 2 and 3
        dims = re.findall(r"R|_?S\([^)]*\)|P\([^)]*\)", spec)
        assert len(dims) == 4 and dims[2] == dims[3], spec
    # no restricted plan within a 1 KiB budget: not "infeasible" (the full problem was not solved)
    none = ctshard.plan(GRAPH, mesh=[2, 2, 2, 2], algo="global", free_inputs=True, time_limit_ms=20000, max_memory_mib=2,
                        memory_budget_gib=1024 / GIB)
    assert none["status"] == "restricted_infeasible" and none["proven_optimal"] is False
    assert "min_memory_gib" not in none
