"""Graphs above the aten level: a ``torch.fx.symbolic_trace`` or Dynamo-backend GraphModule is
exported and decomposed when ``example_inputs`` are given and refused (saying how) otherwise; a
``torch.export`` program with ops outside the core ATen IR (linear, softmax.int) is decomposed
before planning. Each route plans like the decomposed export of the same model."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import ctshard


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 64)
        self.down = nn.Linear(64, 16)

    def forward(self, x):
        return self.down(torch.relu(self.up(x))).softmax(-1)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return _Net(), torch.randn(8, 16)


def _ops(plan):
    return [(n["op"], n["outputs"]) for n in plan["nodes"]]


PLACE = {"x": "S(0)R", "up.weight": "RS(0)", "up.bias": "RS(0)", "down.weight": "RS(1)"}


def _reference(net):
    model, x = net
    return ctshard.plan(torch.export.export(model, (x,)).run_decompositions(), mesh=[2, 4], place=PLACE)


def test_raw_export_is_decomposed(net):
    model, x = net
    raw = torch.export.export(model, (x,))
    assert any(str(n.target) == "aten.linear.default" for n in raw.graph.nodes)  # torch.export keeps linear
    with warnings.catch_warnings():
        warnings.simplefilter("error", ctshard.FallbackWarning)
        got = ctshard.plan(raw, mesh=[2, 4], place=PLACE)
    want = _reference(net)
    assert got["nodes_fallback"] == 0 and got["nodes_with_rule"] == want["nodes_with_rule"]
    assert (_ops(got), got["total_cost_us"]) == (_ops(want), want["total_cost_us"])
    assert "aten.addmm.default" in {op for op, _ in _ops(got)}


def test_symbolic_trace_needs_example_inputs(net):
    model, x = net
    traced = torch.fx.symbolic_trace(model)
    with pytest.raises(ValueError, match=r"^ctshard.plan: the _Net is not an aten-level graph \(call_module up, torch.relu, "
                                         r"call_module down, call_method softmax: .*pass example_inputs=\(\.\.\.\)"):
        ctshard.plan(traced, mesh=[2, 4])
    got = ctshard.plan(traced, mesh=[2, 4], place=PLACE, example_inputs=(x,))
    want = _reference(net)
    assert got["nodes_fallback"] == 0
    assert (_ops(got), got["total_cost_us"]) == (_ops(want), want["total_cost_us"])


def test_dynamo_backend_graph_with_its_example_inputs(net):
    model, x = net
    captured = []

    def backend(gm, example_inputs):
        captured.append((gm, list(example_inputs)))
        return gm.forward

    torch.compile(model, backend=backend)(x)
    gm, inputs = captured[0]
    with pytest.raises(ValueError, match="torch.nn.functional.linear"):
        ctshard.plan(gm, mesh=[2, 4])
    # Dynamo lifts the parameters to inputs: they are placed by their placeholder names
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    weight = next(n for n in names if "up" in n and "weight" in n)
    x_name = next(n for n in names if n.lower().startswith("l_x"))
    got = ctshard.plan(gm, mesh=[2, 4], example_inputs=inputs, place={x_name.lower(): "S(0)R", weight.lower(): "RS(0)"})
    assert got["nodes_fallback"] == 0 and got["nodes_with_rule"] == _reference(net)["nodes_with_rule"]
    first = next(n for n in got["nodes"] if n["op"] == "aten.addmm.default")
    assert first["outputs"] == ["S(0)S(1)"]  # x @ up.weight.T: batch and hidden sharded


def test_export_failure_names_the_module():
    class Bad(nn.Module):
        def forward(self, x):
            return x.relu()

    traced = torch.fx.symbolic_trace(Bad())
    with pytest.raises(ValueError, match=r"^ctshard.plan: cannot export Bad with the example inputs to bring it to the aten level: AttributeError"):
        ctshard.plan(traced, example_inputs=("not a tensor",))
