"""Symbolic shapes through the Python package: GraphModules traced with dynamic shapes plan like
their printouts, ``sym=`` binds symbols (bound plans equal the static trace), the R03 / R04
reference graphs agree with the command line, and bad ``sym`` input raises ValueError."""

from __future__ import annotations

import json
import subprocess

import pytest

import ctshard
from conftest import shared_path

torch = pytest.importorskip("torch", reason="torch 2.13.0 is part of the test setup (scripts/setup-python.sh)")
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from ctshard._graph import node_records  # noqa: E402


def _cli_json(tool, *args: str) -> dict:
    out = subprocess.run([str(tool), *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def _block(x, w, b):
    y = torch.nn.functional.linear(x, w, b).relu()
    return y.view(x.shape[0], 4, -1).sum(1), y * 2


_ARGS = (torch.randn(8, 16), torch.randn(12, 16), torch.randn(12))
_PLACE = {"x_1": "S(0)R", "w_1": "RS(0)", "b_1": "RS(0)"}


def test_symbolic_graph_module_records_carry_expressions():
    gm = make_fx(_block, tracing_mode="symbolic")(*_ARGS)
    records = {r[0]: r for r in node_records(gm)}
    x_dtype, x_shape = records["x_1"][5][0]
    assert x_dtype == "f32" and all(isinstance(s, str) for s in x_shape)
    view_shape = records["view"][5][0][1]
    assert view_shape[1] == 4 and view_shape[2].startswith("(") and "//4" in view_shape[2]
    # a Sym-valued node is a symbolic integer: no tensor outputs, its expression in the record
    size = records["sym_size_int"]
    assert size[5] == [] and size[6] == x_shape[0]
    assert records["view"][3][1][0] == {"node": "sym_size_int"}


def test_symbolic_graph_module_plans_like_its_printout():
    gm = make_fx(_block, tracing_mode="symbolic")(*_ARGS)
    text = gm.print_readable(print_output=False)
    for mesh, place in [([2, 2], _PLACE), ([8], {"x_1": "S(0)", "w_1": "S(0)"}), ([2, 2, 2], {"x_1": "S(0)RS(1)"})]:
        from_module = ctshard.plan(gm, mesh=mesh, place=place, symbol_hints=False)  # the printout has no hints
        from_text = ctshard.plan(text, mesh=mesh, place=place)
        assert from_module["nodes"] == from_text["nodes"]
        assert from_module["total_cost_us"] == from_text["total_cost_us"]
        assert from_module["symbols"] == from_text["symbols"]
    plan = ctshard.plan(gm, mesh=[2, 2], place=_PLACE, symbol_hints=False)
    assert [s["value"] for s in plan["symbols"]] == [8191, 8209, 8219]
    assert not any(s["bound"] for s in plan["symbols"])
    assert "sym_size_int" not in {n["name"] for n in plan["nodes"]}  # not an op to plan


def test_bound_symbols_plan_like_the_static_trace():
    gm = make_fx(_block, tracing_mode="symbolic")(*_ARGS)
    static = make_fx(_block, tracing_mode="fake")(*_ARGS)
    names = [s["name"] for s in ctshard.plan(gm, mesh=[2, 2])["symbols"]]
    sym = dict(zip(names, [8, 16, 12]))  # x is 8x16, w 12x16
    bound = ctshard.plan(gm, mesh=[2, 2], place=_PLACE, sym=sym)
    want = ctshard.plan(static, mesh=[2, 2], place=_PLACE)
    assert bound["nodes"] == want["nodes"]
    assert bound["total_cost_us"] == want["total_cost_us"]
    assert bound["nodes_fallback"] == 0
    assert all(s["bound"] for s in bound["symbols"])
    view = next(n for n in bound["nodes"] if n["name"] == "view")
    assert view["outputs"] == ["S(0)S(1)"] and view["cost_us"] == 0.0
    # printout and module agree when bound too
    assert ctshard.plan(gm.print_readable(print_output=False), mesh=[2, 2], place=_PLACE, sym=sym)["nodes"] == bound["nodes"]


def test_graph_module_symbols_take_the_example_inputs_sizes():
    """The ShapeEnv's hints bind the symbols: the plan is the static trace's, without a warning."""
    import warnings

    gm = make_fx(_block, tracing_mode="symbolic")(*_ARGS)
    static = make_fx(_block, tracing_mode="fake")(*_ARGS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hinted = ctshard.plan(gm, mesh=[2, 2], place=_PLACE)
    want = ctshard.plan(static, mesh=[2, 2], place=_PLACE)
    assert (hinted["nodes"], hinted["total_cost_us"]) == (want["nodes"], want["total_cost_us"])
    assert [(s["value"], s["bound"]) for s in hinted["symbols"]] == [(8, True), (16, True), (12, True)]
    # sym wins over a hint
    first = hinted["symbols"][0]["name"]
    assert ctshard.plan(gm, mesh=[2, 2], sym={first: 24})["symbols"][0] == {"name": first, "value": 24, "bound": True}


def test_export_with_a_dynamic_batch_plans_at_the_example_batch():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(16, 64)

        def forward(self, x):
            return self.up(x).relu()

    x = torch.randn(8, 16)
    dynamic = torch.export.export(Net(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}}).run_decompositions()
    static = torch.export.export(Net(), (x,)).run_decompositions()
    place = {"x": "S(0)R", "up.weight": "RS(0)"}
    got, want = ctshard.plan(dynamic, mesh=[2, 4], place=place), ctshard.plan(static, mesh=[2, 4], place=place)
    assert [(s["value"], s["bound"]) for s in got["symbols"]] == [(8, True)]
    assert (got["nodes"], got["total_cost_us"]) == (want["nodes"], want["total_cost_us"])
    with pytest.warns(ctshard.UnboundSymbolWarning):
        unhinted = ctshard.plan(dynamic, mesh=[2, 4], place=place, symbol_hints=False)
    assert unhinted["symbols"] == [{"name": got["symbols"][0]["name"], "value": 8191, "bound": False}]


def test_unbound_symbols_warn_once_naming_them():
    import warnings

    text = make_fx(_block, tracing_mode="symbolic")(*_ARGS).print_readable(print_output=False)
    with pytest.warns(ctshard.UnboundSymbolWarning) as caught:
        plan = ctshard.plan(text, mesh=[2, 2])
    names = [s["name"] for s in plan["symbols"]]
    caught = [w for w in caught if w.category is ctshard.UnboundSymbolWarning]  # (the prime-sized view also falls back)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(f"ctshard.plan: unbound symbolic sizes {names[0]} (priced as 8191), {names[1]} (priced as 8209), "
                              f"{names[2]} (priced as 8219): a prime hint")
    assert f"sym={{'{names[0]}': N}} (command line: --sym {names[0]}=N)" in message
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctshard.plan(text, mesh=[2, 2], sym=dict(zip(names, [8, 16, 12])))


def test_symbolic_integer_inputs_are_not_tensors():
    def f(x, n):
        return x.view(n, -1) * 2

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(8, 4), 8)
    records = {r[0]: r for r in node_records(gm)}
    assert records["n_1"][1] == "placeholder" and records["n_1"][5] == [] and records["n_1"][6] != ""
    plan = ctshard.plan(gm, mesh=[2], place={"x_1": "S(0)"})
    assert plan["nodes_fallback"] == 0
    assert [n["outputs"] for n in plan["nodes"]] == [["S(0)"], ["S(0)"]]
    with pytest.raises(ValueError, match="a symbolic integer input"):
        ctshard.plan(gm, mesh=[2], place={"n_1": "S(0)"})


def test_r03_through_python_equals_the_cli(tool):
    path = shared_path("cases", "graphs", "symbolic_batch.fx.txt")
    for sym, args in [(None, []), ({"s77": 1024}, ["--sym", "s77=1024"])]:
        py = ctshard.plan(str(path), mesh=[2], place={"tangents_1": "S(0)"}, sym=sym)
        cli = _cli_json(tool, "plan", str(path), "--mesh", "2", "--place", "tangents_1=S(0)", *args)
        assert py == cli
        assert py["nodes_fallback"] == 0 and py["nodes_with_rule"] == 2
        assert [n["outputs"] for n in py["nodes"]] == [["S(0)"], ["S(0)"]]
    assert ctshard.plan(str(path), mesh=[2])["symbols"] == [{"name": "s77", "value": 8191, "bound": False}]


def test_r04_joint_graph_through_python(tool):
    path = shared_path("cases", "graphs", "joint_graph_format.fx.txt")
    py = ctshard.plan(str(path), mesh=[2], place={"primals_1": "S(0)"})
    assert py == _cli_json(tool, "plan", str(path), "--mesh", "2", "--place", "primals_1=S(0)")
    assert py["nodes"] == [{"name": "mul", "op": "aten.mul.Tensor", "inputs": ["S(0)", "S(0)"], "outputs": ["S(0)"],
                            "cost_us": 0.0, "fallback": False}]


def test_joint_graph_module_and_its_pytree_printout_agree():
    def joint_helper(primals, tangents):
        (x, w), (t,) = primals, tangents
        return [x * w * t]

    for mode in ("fake", "symbolic"):
        gm = make_fx(joint_helper, tracing_mode=mode)([torch.randn(8, 4), torch.randn(8, 4)], [torch.randn(8, 4)])
        text = gm.print_readable(print_output=False)
        assert "fx_pytree.tree_flatten_spec" in text
        place = {"primals_1": "S(0)", "tangents_1": "S(1)"}
        assert ctshard.plan(text, mesh=[2], place=place)["nodes"] == ctshard.plan(gm, mesh=[2], place=place, symbol_hints=False)["nodes"]


@pytest.mark.parametrize("sym, message", [
    ({"s9": 4}, "--sym names 's9', which is not a symbol of"),
    ({"s77": 0}, "--sym s77=0: a symbol's value must be a positive integer"),
    ({"s77": -3}, "a symbol's value must be a positive integer"),
    ({"s77": "1024"}, "sym must map symbol names to integers, got 's77': '1024'"),
    ({"s77": True}, "sym must map symbol names to integers"),
    ({"s77": 2.0}, "sym must map symbol names to integers"),
    ({"s77": 2 ** 70}, "does not fit 64 bits"),
    ({7: 1}, "sym must map symbol names to integers, got 7: 1"),
    ([("s77", 4)], "sym must map symbol names to integers"),
])
def test_bad_sym_raises_value_error(sym, message):
    path = shared_path("cases", "graphs", "symbolic_batch.fx.txt")
    with pytest.raises(ValueError) as e:
        ctshard.plan(str(path), mesh=[2], sym=sym)
    assert message in str(e.value)
