"""``examples/python/auto_parallel.py`` measured on a real 2x2 gloo group (4 CPU processes): the
collectives a ``ParallelPlan`` prices against the ones issued, and the memory per rank it models
against the bytes held, for the auto plan and the planner's DDP / FSDP / Megatron TP + FSDP
hand plans of a GPT block (3 Adam steps each; one spawned group, 20-30 s).

What is asserted (docs/auto_parallel.md, "Measured: collectives and memory"):

- the plan executed node by node (``run_plan``, local mode, then each gradient reduced to its
  parameter's placement) issues exactly the priced collectives: the same multiset of (kind, mesh
  dim, bytes per rank), for the auto plan and every hand plan;
- the priced steps' ``cost_us`` sum to the plan's ``communication_us`` (forward + backward) and
  ``gradient_reduction_us`` (gradients);
- under ``apply`` (its default ``execute="plan"``: the joint graph run with the plan's
  placements) forward, loss and backward issue exactly the priced collectives too, for every
  plan, and every plan trains like the single process;
- parameters, gradients and Adam's two moments hold exactly the modelled bytes per rank; the
  optimizer step issues no collective;
- the saved activations measure the modelled bytes less the saved views the planner counts as
  activations of their own (a weight's transpose ``t``, a view of a parameter; a ``detach`` of
  another saved value).
"""

from __future__ import annotations

import pathlib
import sys
from collections import Counter

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "examples" / "python") not in sys.path:  # spawned children inherit sys.path
    sys.path.insert(0, str(ROOT / "examples" / "python"))

import auto_parallel as ap  # noqa: E402

pytestmark = pytest.mark.torch_bound

STEPS = 3
BUDGET_GIB = 1.5e-4
GIB = 2**30


@pytest.fixture(autouse=True, scope="module")
def _no_process_group_in_this_process():
    """The group is spawned; a default group left by an earlier module is destroyed first."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    yield


@pytest.fixture(scope="module")
def result():
    (r,) = ap.run_group((2, 2), [ap._Case("gpt_block", STEPS, BUDGET_GIB, hand_plans=True, time_limit_s=2.0)])
    if "error" in r:
        pytest.fail(f"the group failed: {r['error']}\n{r['traceback']}")
    return r


def _plans(r):
    return [("auto_parallel", r)] + sorted(r["hand"].items())


def test_hand_plans_are_all_there(result):
    assert sorted(result["hand"]) == ["ddp", "fsdp", "megatron_tp_fsdp"]
    for name, h in result["hand"].items():
        assert "error" not in h, (name, h.get("error"))


def test_executed_plan_issues_exactly_the_priced_collectives(result):
    for name, r in _plans(result):
        key = lambda c: ap._key(c, r["mesh"])  # noqa: E731
        assert Counter(map(key, r["executed"]["issued"])) == Counter(map(key, r["priced"])), name
        agree, total = r["executed"]["agree"]
        assert agree == total, (name, agree, total)
    assert len(result["priced"]) > 0  # the budget makes the auto plan move data


def test_priced_collectives_sum_to_the_plans_communication(result):
    for name, r in _plans(result):
        fwbw = sum(c["cost_us"] for c in r["priced"] if c["phase"] != "gradient")
        grad = sum(c["cost_us"] for c in r["priced"] if c["phase"] == "gradient")
        assert fwbw == pytest.approx(r["communication_us"], rel=1e-9, abs=1e-9), name
        assert grad == pytest.approx(r["gradient_reduction_us"], rel=1e-9, abs=1e-9), name


def test_measured_state_memory_is_the_modelled(result):
    for name, r in _plans(result):
        m, b = r["memory_gib"], r["measured_bytes"]
        for k in ("parameters", "gradients", "optimizer"):
            assert b[k] == pytest.approx(m[k] * GIB, rel=1e-6), (name, k, b[k], m[k] * GIB)
        assert b["adam_step_counters"] == 4 * len(r["placements"])  # one fp32 scalar per parameter, not modelled


def test_auto_plan_within_budget_measured(result):
    r = result
    assert r["memory_gib"]["total"] <= BUDGET_GIB * (1 + 1e-9)
    b = r["measured_bytes"]
    state = sum(b[k] for k in ("parameters", "gradients", "optimizer"))
    assert state + r["memory_gib"]["activations"] * GIB <= BUDGET_GIB * GIB * (1 + 1e-9)
    assert b["activations"] > 0 and b["total"] == pytest.approx(state + b["activations"])
    assert b["total"] <= BUDGET_GIB * GIB


def test_saved_activations_are_the_modelled_less_views(result):
    """What the planned forward saves is the modelled set of values; the planner also counts the
    saved views that hold no storage of their own (a weight's transpose, a view of a parameter;
    a ``detach`` or ``view`` of another saved value): measured + those views = modelled."""
    for name, r in _plans(result):
        modelled, measured = r["memory_gib"]["activations"] * GIB, r["measured_bytes"]["activations"]
        views = r["measured_bytes"]["activations_shared"]
        assert views > 0, name
        assert measured + views == pytest.approx(modelled, rel=1e-6), (name, measured, views, modelled)


def test_training_under_apply_matches_single_process(result):
    ref = ap.reference_losses("gpt_block", STEPS)
    for name, r in _plans(result):
        for got, want in zip(r["losses"], ref):
            assert abs(got - want) <= 1e-5 * abs(want), (name, r["losses"], ref)
        assert r["placements"] == r["planned"], name
        # the step outside the planned graph: Adam's update runs where each parameter lives
        assert r["issued"]["optimizer_step"] == [], name
        cmp = ap.compare_collectives(r)
        assert cmp["executed_equal"] and cmp["issued_count"] > 0
        # under apply the plan's own collectives, each once: nothing issued unpriced or priced unissued
        assert cmp["equal"], (name, cmp["issued_not_priced_by"], cmp["priced_not_issued_at"])
        assert cmp["issued_not_priced_by"] == {} and cmp["priced_not_issued_at"] == {}, name


# ---------------------------------------------------------------------------------------------
# without a process group


def test_hand_plans_and_priced_collectives_without_group():
    import ctshard.torch as ct

    model, inputs = ap.build("mlp")
    plan = ct.auto_parallel(model, inputs, [2, 2], place={"inputs[0]": "S(0)R"}, time_limit_s=2.0, hand_plans=True)
    assert sorted(plan.hand_plans) == ["ddp", "fsdp", "megatron_tp_fsdp"]
    ddp = plan.hand_plans["ddp"]
    assert set(ddp["place"]) == {"up.weight", "up.bias", "down.weight", "down.bias", "inputs[0]"}
    assert all(ddp["place"][f] == "RR" for f in ("up.weight", "down.weight"))
    assert ddp["memory_gib"]["total"] > 0 and ddp["step_time_us"] >= ddp["communication_us"] >= 0
    for c in plan.priced_collectives():
        assert c["phase"] in ("forward", "backward", "gradient") and c["bytes"] > 0 and c["mesh_dim"] in (0, 1)
    assert ct.auto_parallel(model, inputs, [2, 2], time_limit_s=1.0).hand_plans == {}


def test_bad_input_is_value_error():
    import ctshard.torch as ct

    model, inputs = ap.build("mlp")
    with pytest.raises(ValueError, match="hand_plans must be True or False"):
        ct.auto_parallel(model, inputs, [2, 2], time_limit_s=1.0, hand_plans="yes")
    with pytest.raises(ValueError, match="mesh must be a DeviceMesh"):
        ct.CollectiveLog([2, 2])
