"""The Python package against the command line and the reference cases: same JSON documents,
ValueError on bad input, the GIL released around C++ work, GraphModule input, DTensor placements."""

from __future__ import annotations

import functools
import json
import math
import subprocess
import threading

import pytest

import ctshard
from conftest import shared_path


def _same_cost(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _case_differences(want: dict, got: dict) -> str:
    """'' when the table equals the reference case (rows, order, costs to 1e-9, filters, choice)."""
    for key in ("rules", "filtered", "choice", "plain_min_index", "num_combinations"):
        if got[key] != want[key]:
            return f"{key}: got {got[key]} want {want[key]}"
    if len(got["strategies"]) != len(want["strategies"]):
        return f"strategy count {len(got['strategies'])} want {len(want['strategies'])}"
    for i, (w, g) in enumerate(zip(want["strategies"], got["strategies"])):
        if w["out"] != g["out"] or w["in"] != g["in"]:
            return f"row {i}: got {g} want {w}"
        if not all(_same_cost(x, y) for x, y in zip(w["cost"], g["cost"])) or not _same_cost(w["total"], g["total"]):
            return f"costs of row {i}: got {g} want {w}"
    return ""


def test_reference_cases_all_match_through_python(summary):
    path = shared_path("cases", "golden_dev.jsonl")
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(cases) == 300
    failures = []
    for case in cases:
        got = ctshard.table(case["op"], case["shapes"], case["mesh"], case["inputs"],
                            dtype={4: "float32", 2: "bfloat16", 8: "float64"}[case["itemsize"]],
                            devices_per_host=case["devices_per_host"])
        diff = _case_differences(case, got)
        if diff:
            failures.append(f"case {case['id']} ({case['op']}): {diff}")
    summary(f"python API: reference cases matched through ctshard.table: {300 - len(failures)} / 300")
    assert failures == []


def _cli_json(tool, *args: str) -> dict:
    out = subprocess.run([str(tool), *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_table_equals_the_cli_document(tool):
    py = ctshard.table("aten.cat.default", [[4, 6], [4, 6]], [2, 2], ["S(1)R", "RR"], args=[["$0", "$1"], 0])
    cli = _cli_json(tool, "table", "--op", "aten.cat.default", "--shapes", "4x6,4x6", "--mesh", "2x2",
                    "--inputs", "S(1)R;RR", "--args", '[["$0", "$1"], 0]')
    assert py == cli
    assert py["choice"]["rule"] in {"no_redistribute", "zero_cost", "min_cost", "only"}
    assert py["strategies"][py["choice"]["index"]]["out"] == "S(1)R"


def test_table_non_tensor_args_and_keywords_and_dtypes(tool):
    py = ctshard.table("aten.sum.dim_IntList", [[6, 4]], [2], ["S(0)"], args=[[0]], kwargs={"keepdim": True})
    cli = _cli_json(tool, "table", "--op", "aten.sum.dim_IntList", "--shapes", "6x4", "--mesh", "2", "--inputs", "S(0)",
                    "--args", "[[0]]", "--kwargs", '{"keepdim": true}')
    assert py == cli
    chosen = py["strategies"][py["choice"]["index"]]
    assert chosen["out"] == "P(sum)" and chosen["in"] == ["S(0)"]
    mixed = ctshard.table("mm", [[8, 8], [8, 8]], [2], ["S(0)", "S(0)"], dtype=["float32", "bfloat16"])
    assert mixed["itemsize"] == [4, 2]
    row = next(s for s in mixed["strategies"] if s["in"] == ["R", "R"])
    # the bf16 operand moves half the bytes of the f32 one: its all-gather is cheaper
    assert row["cost"][1] < row["cost"][0]


def test_cost_equals_the_cli_document(tool):
    py = ctshard.cost([8, 8], [2, 2], "S(0)S(0)", "RS(0)")
    cli = _cli_json(tool, "cost", "--shape", "8x8", "--mesh", "2x2", "--from", "S(0)S(0)", "--to", "RS(0)")
    assert py == cli
    assert [s["collective"] for s in py["steps"]] == ["all_gather", "all_gather", "local"]
    assert math.isclose(py["cost_us"], sum(s["cost_us"] for s in py["steps"]))


def test_plan_of_the_default_block_equals_the_cli(tool):
    py = ctshard.plan()
    cli = _cli_json(tool, "plan")
    assert py == cli
    assert py["nodes_fallback"] == 0 and py["total_cost_us"] > 0
    assert py["placements"]["primals_1"] == "S(0)R"


def test_plan_of_a_file_and_of_its_text_agree(tool):
    path = shared_path("graphs", "gpt_megatron_l1_fw.fx.txt")
    by_path = ctshard.plan(str(path), mesh=[2, 2], place={"primals_1": "S(0)R"})
    by_text = ctshard.plan(path.read_text(), mesh=[2, 2], place={"primals_1": "S(0)R"})
    cli = _cli_json(tool, "plan", str(path), "--mesh", "2x2", "--place", "primals_1=S(0)R")
    assert by_path == cli
    assert by_text["nodes"] == cli["nodes"] and by_text["total_cost_us"] == cli["total_cost_us"]
    assert by_text["source"] == "<text>"


def test_ops_lists_the_registered_overloads(tool):
    ops = ctshard.ops()
    assert ops == _cli_json(tool, "ops")
    assert ops["count"] == len(ops["ops"]) and "aten.mm.default" in ops["ops"]


@pytest.mark.parametrize("call, message", [
    (lambda: ctshard.table("mm", [[6, 8], [8, 12]], [2], ["S(0)", "Q"]), "cannot parse a placement at column 1 of 'Q'"),
    (lambda: ctshard.table("nosuchop", [[4]], [2], ["R"]), "unknown op 'nosuchop'"),
    (lambda: ctshard.table("mm", [[6, 8]], [2], ["R", "R"]), "1 shapes but 2 input specs"),
    (lambda: ctshard.table("mm", [[6, 8], [8, 2]], [0], ["R", "R"]), "mesh dim 0 has size 0"),
    (lambda: ctshard.table("mm", [[6, 8], [8, 2]], [2], ["R", "R"], args=[{1}]), "unsupported argument {1}"),
    (lambda: ctshard.table("mm", [[6, 8], [8, 2]], [2], ["R", "R"], args=["$1", "$0"]), "reference 0 is $1"),
    (lambda: ctshard.table("mm", [[6, 8], [8, 2]], [2], ["R", "R"], dtype="float31"), "unknown dtype 'float31'"),
    (lambda: ctshard.table("mm", "6x8", [2], ["R"]), "shapes must be a list of shapes"),
    (lambda: ctshard.cost([8, 8], [2, 2], "S(0)", "R"), "S(0)"),
    (lambda: ctshard.plan("def forward(self, x):\n    y = torch.ops.aten.relu.default(zz)\n    return y\n"), "zz"),
    (lambda: ctshard.plan("no/such/graph.fx.txt"), "neither FX graph text"),
    (lambda: ctshard.plan(None, place={"nobody": "S(0)R"}), "'nobody', which is not an input"),
    (lambda: ctshard.plan(None, place={"primals_1": "S(0)"}), "has 1 placements for a 2-dim mesh"),
    (lambda: ctshard.plan(42), "got int"),
    (lambda: ctshard.plan(None, sym={"s0": 4}), "(it has no symbolic sizes)"),
    (lambda: ctshard.plan(None, sym={"s0": "4"}), "sym must map symbol names to integers"),
    (lambda: ctshard.plan('def forward(self, x: "f32[s0 +]"):\n    return x\n'), "bad size expression 's0 +'"),
    (lambda: ctshard.format_spec("S(0"), "S(0"),
    # found by the atheris target (tests/fuzz/python/fuzz_api.py): a crash before the tensor-count check
    (lambda: ctshard.table("einsum:ij,jk->ik", [], [4], []), "takes 2 tensor inputs, got 0"),
    (lambda: ctshard.table("aten.view.default", [[4294967296]], [2], ["R"], args=[[4294967296, 4294967297]]),
     "4294967296 * 4294967297 overflows a 64-bit size"),
    (lambda: ctshard.cost([3037000500, 3037000500], [2], "S(0)", "R"), "overflows a 64-bit size"),
    (lambda: ctshard.table("mm", [[6, 8], [8, 2]], [2], ["R", "R"], args=[functools.reduce(lambda a, _: [a], range(70), [])]),
     "nest lists deeper than 64 levels"),
    (lambda: ctshard.table("aten.view.default", [[32]], [2], ["R"], args=[[2**70]]), "integer argument 1180591620717411303424 does not fit in int64"),
])
def test_bad_input_raises_value_error_with_the_library_message(call, message):
    with pytest.raises(ValueError) as e:
        call()
    assert message in str(e.value)


def test_the_gil_is_released_while_cpp_works():
    assert ctshard._ext._gil_held_during_work() is False
    # and calls from several threads run and agree
    results = []
    threads = [threading.Thread(target=lambda: results.append(ctshard.plan(mesh=[2, 2, 2])["total_cost_us"])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len(set(results)) == 1


def test_graph_module_input_plans_like_its_printout():
    torch = pytest.importorskip("torch", reason="torch 2.13.0 is part of the test setup (scripts/setup-python.sh)")
    from torch.fx.experimental.proxy_tensor import make_fx

    def block(x, w, b):
        y = torch.nn.functional.linear(x, w, b).relu()
        return y.sum(dim=1, keepdim=True), torch.var_mean(y, dim=0), torch.cat([y, y], dim=1)

    gm = make_fx(block, tracing_mode="fake")(torch.randn(8, 16), torch.randn(12, 16), torch.randn(12))
    place = {"x_1": "S(0)R", "w_1": "RS(0)", "b_1": "RS(0)"}
    from_module = ctshard.plan(gm, mesh=[2, 2], place=place)
    from_text = ctshard.plan(gm.print_readable(print_output=False), mesh=[2, 2], place=place)
    assert from_module["nodes"] == from_text["nodes"]
    assert from_module["nodes_fallback"] == 0
    addmm = next(n for n in from_module["nodes"] if n["op"] == "aten.addmm.default")
    assert addmm["outputs"] == ["S(0)S(1)"] and addmm["cost_us"] == 0.0


def test_specs_as_dtensor_placements_and_back():
    pytest.importorskip("torch", reason="torch 2.13.0 is part of the test setup (scripts/setup-python.sh)")
    import ctshard.torch as ct
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.placement_types import _StridedShard

    placements = ct.to_placements("S(0)P(avg)_S(1, 2)R")
    assert placements == (Shard(0), Partial("avg"), _StridedShard(1, split_factor=2), Replicate())
    assert ct.to_spec(placements) == "S(0)P(avg)_S(1, 2)R"
    for spec in ["R", "S(3)", "P(sum)P(max)", "P(min)S(1)R"]:
        assert ct.to_spec(ct.to_placements(spec)) == spec
    with pytest.raises(ValueError, match="product"):
        ct.to_spec([Partial("product")])
    with pytest.raises(ValueError, match="cannot parse"):
        ct.to_placements("S(x)")


@pytest.mark.parametrize("op, shapes, mesh, inputs, args", [
    ("mm", [[1024, 512], [512, 2048]], [2, 2, 2], ["S(0)RR", "S(0)S(1)R"], None),
    ("mm", [[6, 8], [8, 12]], [2, 4], ["S(0)R", "RS(1)"], None),
    ("pointwise:add", [[4, 6, 8, 10], [8, 10]], [2, 2, 2, 2], ["S(0)RP(sum)S(3)", "RS(1)RR"], None),
    ("aten.view.default", [[4, 6, 8]], [2, 2], ["S(0)S(2)"], [[24, 8]]),
    ("aten.native_layer_norm.default", [[8, 16, 32], [32], [32]], [2, 2], ["S(0)S(2)", "RR", "RR"], ["$0", [32], "$1", "$2", 1e-5]),
])
def test_choose_is_the_chosen_row_of_the_table(op, shapes, mesh, inputs, args):
    full = ctshard.table(op, shapes, mesh, inputs, args=args, devices_per_host=1)
    chosen = ctshard.choose(op, shapes, mesh, inputs, args=args, devices_per_host=1)
    row = full["strategies"][full["choice"]["index"]]
    assert chosen["choice"] == full["choice"]
    assert (chosen["out"], chosen["in"]) == (row["out"], row["in"])
    assert all(_same_cost(a, b) for a, b in zip(chosen["cost"], row["cost"])) and _same_cost(chosen["total"], row["total"])


@pytest.mark.parametrize("op, shapes, mesh, inputs, args", [
    ("mm", [[1024, 512], [512, 2048]], [2, 2, 2], ["S(0)RR", "S(0)S(1)R"], None),
    ("mm", [[1024, 512], [512, 2048]], [2, 2, 2], ["P(sum)S(1)R", "S(1)RS(0)"], None),
    ("pointwise:add", [[4, 6, 8, 10], [8, 10]], [2, 2, 2, 2], ["S(0)RP(sum)S(3)", "RS(1)RR"], None),
    ("aten.view.default", [[4, 6, 8]], [2, 2], ["S(0)S(2)"], [[24, 8]]),
])
def test_algo_search_gives_the_enumerated_choice(tool, op, shapes, mesh, inputs, args):
    full = ctshard.table(op, shapes, mesh, inputs, args=args)
    searched = ctshard.table(op, shapes, mesh, inputs, args=args, algo="search")
    assert full["algo"] == "enumerate" and searched["algo"] == "search"
    for key in ("choice", "plain_min_index", "filtered", "num_combinations", "rules"):
        assert searched[key] == full[key], key
    assert searched["strategies"] == [full["strategies"][full["choice"]["index"]]]
    assert ctshard.choose(op, shapes, mesh, inputs, args=args, algo="enumerate") == ctshard.choose(op, shapes, mesh, inputs, args=args)
    cli_args = ["table", "--op", op, "--shapes", ",".join("x".join(map(str, s)) for s in shapes), "--mesh", "x".join(map(str, mesh)),
                "--inputs", ";".join(inputs), "--algo", "search"]
    if args is not None:
        cli_args += ["--args", json.dumps(args)]
    assert searched == _cli_json(tool, *cli_args)


def test_algo_on_an_8_dim_mesh_and_bad_names(tool):
    p = ctshard.plan(mesh=[2] * 8)
    assert p["algo"] == "search" and p["nodes_fallback"] == 0
    assert p == _cli_json(tool, "plan", "--mesh", "2x2x2x2x2x2x2x2")
    assert ctshard.plan(mesh=[2] * 8, algo="enumerate")["nodes_fallback"] > 0  # tables above 2^20 rows
    small = ctshard.plan(mesh=[2, 2, 2], algo="enumerate")
    assert small["algo"] == "enumerate" and dict(small, algo="search") == ctshard.plan(mesh=[2, 2, 2])
    big = ctshard.choose("mm", [[64, 64], [64, 64]], [2] * 8, ["S(0)RRRRRRR", "RRRRRRRR"])
    assert big["choice"] == {"rule": "no_redistribute"}  # no index above 2^20 candidate rows
    with pytest.raises(ValueError, match="above the enumeration limit"):
        ctshard.table("mm", [[64, 64], [64, 64]], [2] * 8, ["S(0)RRRRRRR", "RRRRRRRR"])
    t = ctshard.table("mm", [[64, 64], [64, 64]], [2] * 8, ["S(0)RRRRRRR", "RRRRRRRR"], algo="search")
    assert t["num_combinations"] == 8 ** 8 and isinstance(t["choice"]["index"], int)
    with pytest.raises(ValueError, match="algo must be 'search' or 'enumerate', got 'fast'"):
        ctshard.choose("mm", [[4, 4], [4, 4]], [2], ["R", "R"], algo="fast")
    with pytest.raises(ValueError, match="algo must be 'search', 'enumerate', 'greedy' or 'global', got 'fast'"):
        ctshard.plan(mesh=[2], algo="fast")
    assert ctshard.plan(mesh=[2, 2], algo="greedy") == ctshard.plan(mesh=[2, 2])


def test_cost_model_option_in_every_entry_point(tool):
    # R09: nothing moves on a size-1 mesh dim, so the consistent model charges nothing there
    c = ctshard.cost([8, 8], [1], "S(0)", "R", cost_model="consistent")
    assert c["cost_us"] == 0.0 and c["cost_model"] == "consistent"
    assert ctshard.cost([8, 8], [1], "S(0)", "R")["cost_us"] > 0  # DTensor's formula: 6.6 us
    assert c == _cli_json(tool, "cost", "--shape", "8x8", "--mesh", "1", "--from", "S(0)", "--to", "R", "--cost-model", "consistent")
    # Shard -> Partial: infinite under DTensor's model, finite (through Replicate) under the consistent one
    assert ctshard.cost([8, 8], [2], "S(0)", "P(sum)")["cost_us"] == "inf"
    assert isinstance(ctshard.cost([8, 8], [2], "S(0)", "P(sum)", cost_model="consistent")["cost_us"], float)
    t = ctshard.table("mm", [[6, 8], [8, 12]], [2, 4], ["S(0)R", "P(sum)S(1)"], cost_model="consistent")
    assert t["cost_model"] == "consistent"
    assert all(not isinstance(c, str) for s in t["strategies"] for c in s["cost"])  # nothing infinite
    assert t == _cli_json(tool, "table", "--op", "mm", "--shapes", "6x8,8x12", "--mesh", "2x4", "--inputs", "S(0)R;P(sum)S(1)",
                          "--cost-model", "consistent")
    ch = ctshard.choose("mm", [[6, 8], [8, 12]], [2, 4], ["S(0)R", "P(sum)S(1)"], cost_model="consistent")
    assert ch["choice"] == t["choice"]
    p = ctshard.plan(mesh=[2, 4], cost_model="consistent")
    assert p["cost_model"] == "consistent" and p == _cli_json(tool, "plan", "--mesh", "2x4", "--cost-model", "consistent")
    with pytest.raises(ValueError, match="cost model must be 'dtensor' or 'consistent', got 'cheap'"):
        ctshard.cost([8], [2], "S(0)", "R", cost_model="cheap")


def _all_gather_us(nbytes: float, n: int, bw: float = 87.7, hop: float = 0.6) -> float:
    """DTensor's all_gather formula for `nbytes` gathered over n devices (µs)."""
    return 6.6 + (n - 1) * hop + nbytes / 1024**3 * (n - 1) / n / bw * 1e6


@pytest.mark.parametrize("cost_model", ["dtensor", "consistent"])
def test_strided_shard_costs_are_finite(tool, cost_model):
    # _S(0, 2) -> R: an all-gather of the same bytes as S(0) -> R (8x8 f32 = 256 bytes, mesh 2)
    c = ctshard.cost([8, 8], [2], "_S(0, 2)", "R", cost_model=cost_model)
    assert math.isclose(c["cost_us"], _all_gather_us(256, 2), rel_tol=1e-12)
    assert [s["collective"] for s in c["steps"]] == ["all_gather"]
    assert c == _cli_json(tool, "cost", "--shape", "8x8", "--mesh", "2", "--from", "_S(0,2)", "--to", "R", "--cost-model", cost_model)
    assert ctshard.cost([8, 8], [2], "R", "_S(0, 2)", cost_model=cost_model)["cost_us"] == 0.0
    # shard <-> StridedShard on one mesh dim: DTensor runs an all-gather then a local chunk; the
    # consistent model prices the all-to-all that permutes the local blocks
    m = ctshard.cost([8, 8], [2], "S(0)", "_S(0, 2)", cost_model=cost_model)
    if cost_model == "dtensor":
        assert [s["collective"] for s in m["steps"]] == ["all_gather", "local"]
        assert math.isclose(m["cost_us"], _all_gather_us(256, 2), rel_tol=1e-12)
    else:
        assert [s["collective"] for s in m["steps"]] == ["all_to_all"]
        assert math.isclose(m["cost_us"], _all_gather_us(128, 2), rel_tol=1e-12)


@pytest.mark.parametrize("cost_model", ["dtensor", "consistent"])
def test_plan_with_batch_sharded_megatron_inputs_is_finite(tool, cost_model):
    path = shared_path("graphs", "gpt_megatron_l1_fw.fx.txt")
    place = {f"primals_{i}": "S(0)R" for i in (18, 19, 20, 21, 22)}
    p = ctshard.plan(str(path), mesh=[2, 4], place=place, cost_model=cost_model)
    assert isinstance(p["total_cost_us"], float) and math.isfinite(p["total_cost_us"])
    strided = [n for n in p["nodes"] if any("_S(" in s for s in n["outputs"])]
    assert len(strided) >= 5  # views flattening [seq, batch] with the batch sharded
    assert math.isclose(sum(n["cost_us"] for n in p["nodes"]), p["total_cost_us"], rel_tol=1e-9)
    args = ["plan", str(path), "--mesh", "2x4", "--cost-model", cost_model]
    for k, v in place.items():
        args += ["--place", f"{k}={v}"]
    assert p == _cli_json(tool, *args)
    if cost_model == "dtensor":
        # the loss mul: S(0)R moves to _S(0, 8)_S(0, 8): one all-gather of 12288 floats on mesh dim 0
        mul = next(n for n in p["nodes"] if n["name"] == "mul")
        assert mul["inputs"] == ["_S(0, 8)_S(0, 8)", "_S(0, 8)_S(0, 8)"]
        assert math.isclose(mul["cost_us"], _all_gather_us(12288 * 4, 2), rel_tol=1e-9)
