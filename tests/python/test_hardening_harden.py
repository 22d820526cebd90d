"""Issue 22 through Python: every string argument decoded with ValueError on invalid text (a lone
surrogate raised ``RuntimeError: std::bad_cast``), the numbers of ``algo="global"`` checked by the
command line's rules (errors naming the option and the value), ``max_memory_mib``, one deadline
for the call, and bounded argument documents."""

from __future__ import annotations

import math
import time

import pytest

import ctshard

LONE = "\ud800"  # a lone surrogate: a str with no UTF-8 form


@pytest.mark.parametrize(
    "call",
    [
        lambda: ctshard.table("mm" + LONE, [[4, 4], [4, 4]], [2], ["R", "R"]),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "S(0)" + LONE]),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], dtype="float32" + LONE),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], einsum_linearity="sound" + LONE),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], cost_model=LONE),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], algo=LONE),
        lambda: ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], partial_passthrough=LONE),
        lambda: ctshard.table("aten.sum.dim_IntList", [[4, 8]], [2], ["R"], args=[[1]], kwargs={"keepdim" + LONE: True}),
        lambda: ctshard.table("aten.sum.dim_IntList", [[4, 8]], [2], ["R"], args=[[1], LONE]),
        lambda: ctshard.choose("mm" + LONE, [[4, 4], [4, 4]], [2], ["R", "R"]),
        lambda: ctshard.cost([8, 8], [2], "S(0)" + LONE, "R"),
        lambda: ctshard.cost([8, 8], [2], "S(0)", "R", dtype=LONE),
        lambda: ctshard.plan(place={"primals_1" + LONE: "S(0)R"}),
        lambda: ctshard.plan(place={"primals_1": "S(0)R" + LONE}),
        lambda: ctshard.plan(sym={"s77" + LONE: 4}),
        lambda: ctshard.plan(cost_model=LONE),
        lambda: ctshard.plan(einsum_linearity=LONE),
        lambda: ctshard.plan(partial_passthrough=LONE),
        lambda: ctshard.plan(algo="global", ties=[("primals_2" + LONE, "primals_6")]),
        lambda: ctshard.plan("def forward(self, x: \"f32[4]\"):\n    return (x,)\n" + LONE),
        lambda: ctshard.format_spec("S(0)" + LONE),
    ],
)
def test_lone_surrogates_are_value_errors(call):
    with pytest.raises(ValueError, match="not valid text|must be"):
        call()


def test_lone_surrogate_message_names_the_argument():
    with pytest.raises(ValueError, match=r"ctshard.table: op is not valid text .*'mm\\ud800'"):
        ctshard.table("mm" + LONE, [[4, 4], [4, 4]], [2], ["R", "R"])
    with pytest.raises(ValueError, match=r"ctshard.plan: place\['primals_1'\] is not valid text"):
        ctshard.plan(place={"primals_1": "S(0)R" + LONE})


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("time_limit_ms", math.nan, "time_limit_ms must be a number of milliseconds >= 0, got nan"),
        ("time_limit_ms", -1, "time_limit_ms must be a number of milliseconds >= 0, got -1"),
        ("device_tflops", -1.0, "device_tflops must be a finite number > 0, got -1"),
        ("device_gbps", math.nan, "device_gbps must be a finite number > 0, got nan"),
        ("device_gbps", math.inf, "device_gbps must be a finite number > 0, got inf"),
        ("memory_budget_gib", -1.0, "memory_budget_gib must be a finite number of GiB in"),
        ("memory_budget_gib", 1e300, "got 1e+300"),
        ("max_memory_mib", -5, "max_memory_mib must be 0"),
        ("max_memory_mib", math.nan, "max_memory_mib must be 0"),
        ("time_limit_ms", "ten", "time_limit_ms must be a number, got 'ten'"),
        ("device_tflops", 10**400, "device_tflops = 1000"),
    ],
)
def test_global_numbers_follow_the_cli_rules(option, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[").replace("+", r"\+")):
        ctshard.plan(algo="global", free_inputs=True, **{option: value})


def test_inf_time_limit_is_clamped_not_an_instant_stop():
    for limit in (math.inf, 1e300):
        g = ctshard.plan(algo="global", time_limit_ms=limit)
        assert g["status"] == "optimal"
        assert g["solver"]["time_limit_ms"] == 1e9


def test_max_memory_mib_is_the_cost_graph_budget():
    g = ctshard.plan(algo="global", max_memory_mib=512)
    assert g["solver"]["max_memory_mib"] == 512
    assert 0 < g["solver"]["memory_mib"] < 512
    with pytest.raises(ValueError, match="above the memory budget of 1 MiB"):
        ctshard.plan(mesh=(2, 2, 2), algo="global", every_candidate=True, max_memory_mib=1)


def test_one_deadline_covers_the_build():
    chain = (
        'def forward(self, x: "f32[32, 32, 32]", y: "f32[32, 32, 32]"):\n'
        '    add: "f32[32, 32, 32]" = torch.ops.aten.add.Tensor(x, y)\n'
        '    mul: "f32[32, 32, 32]" = torch.ops.aten.mul.Tensor(add, y)\n'
        '    sub: "f32[32, 32, 32]" = torch.ops.aten.sub.Tensor(mul, add)\n'
        "    return (sub,)\n"
    )
    t0 = time.monotonic()
    g = ctshard.plan(chain, mesh=(2, 2, 2, 2, 2), algo="global", every_candidate=True, time_limit_ms=1000, max_memory_mib=2048)
    elapsed = time.monotonic() - t0
    assert elapsed < 15  # generous for a busy machine; it ran ~60 s into bad_alloc before
    assert g["status"] in ("time_limit", "optimal")
    assert len(g["nodes"]) == 3


def test_argument_documents_are_bounded():
    with pytest.raises(ValueError, match="more than 262144 values"):
        ctshard.table("aten.view.default", [[32]], [2], ["R"], args=[[[]] * 300000])
    # a long int list is one argument, read straight into integers
    with pytest.raises(ValueError, match="exceeds max_tensor_dims"):
        ctshard.table("aten.view.default", [[32]], [2], ["R"], args=[[1] * 200000])


def test_option_types_are_value_errors():
    with pytest.raises(ValueError, match="devices_per_host must be an integer"):
        ctshard.table("mm", [[4, 4], [4, 4]], [2], ["R", "R"], devices_per_host=1.5)
    with pytest.raises(ValueError, match="ties must be pairs"):
        ctshard.plan(algo="global", ties=[("a", "b", "c")])
    with pytest.raises(ValueError, match="free_inputs|must be True or False"):
        ctshard._ext.plan_default([2, 4], {}, 8, "sound", {}, "dtensor", {"free_inputs": 1}, "search", "ctshard")
