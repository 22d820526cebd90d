"""``ctshard.summary`` / ``ctshard plan --summary`` and ``ctshard.plot`` on a shared graph's plans:
the per-layer figures add up to the plan's own numbers, the command line (the built tool and the
console script) prints the same text, and ``plot`` writes a PNG and refuses bad input."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

import ctshard
from conftest import shared_path

GRAPH = ("graphs", "gpt_megatron_l1_fw.fx.txt")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def graph() -> str:
    return str(shared_path(*GRAPH))


@pytest.fixture(scope="module")
def greedy(graph):
    return ctshard.plan(graph, mesh=[2, 4], data_parallel=True, summary=True)


@pytest.fixture(scope="module")
def global_plan(graph):
    return ctshard.plan(graph, mesh=[2, 4], data_parallel=True, algo="global", summary=True)


def _placeholders(path: str) -> list[str]:
    line = next(l for l in open(path) if "def forward" in l)
    return re.findall(r'(\w+): "', line)


@pytest.mark.parametrize("which", ["greedy", "global_plan"])
def test_summary_adds_up_to_the_plan(which, request, graph):
    plan = request.getfixturevalue(which)
    s = plan["summary"]
    layers = s["layers"]
    assert s["grouping"] == "contraction" and len(layers) >= 8
    # communication: every layer's share of the plan's redistributions, summing to its total (> 0 here)
    assert plan["total_cost_us"] > 0
    assert math.isclose(sum(l["comm_us"] for l in layers), plan["total_cost_us"], rel_tol=1e-9)
    assert math.isclose(s["comm_us"], plan["total_cost_us"], rel_tol=1e-9)
    by_node = {n["name"]: n for n in plan["nodes"]}
    assert sum(l["nodes"] for l in layers) == len(plan["nodes"]) == plan["nodes_with_rule"] + plan["nodes_fallback"]
    # layers are named after their contraction node (the last one is the tail)
    for l in layers[:-1]:
        assert by_node[l["name"]]["op"] == l["anchor_op"] and l["anchor_op"].split(".")[1] in {"mm", "bmm", "baddbmm", "embedding"}
    assert all(l["compute_us"] > 0 and l["memory_bytes"] == l["parameter_bytes"] + l["activation_bytes"] for l in layers)
    assert math.isclose(sum(l["compute_us"] for l in layers), s["compute_us"], rel_tol=1e-9)
    # parameters: every graph input, each in the layer of its first consumer with its placement
    params = {p["name"]: p for p in s["parameters"]}
    assert list(params) == _placeholders(graph)
    pinned = plan["placements"] if which == "greedy" else plan["input_placements"]
    for name, p in params.items():
        assert p["placement"] == pinned.get(name, "RR")
        assert p["layer"] and name in next(l for l in layers if l["name"] == p["layer"])["parameters"]
    assert params["primals_17"]["placement"] == "S(0)R"  # data-parallel: [1536, 768] sharded on dim 0 over mesh dim 0
    assert params["primals_1"]["shape"] == [98304, 768] and params["primals_1"]["bytes_per_device"] == 98304 * 768 * 4
    assert params["primals_17"]["bytes_per_device"] == 1536 * 768 * 4 / 2
    assert math.isclose(sum(l["parameter_bytes"] for l in layers), sum(p["bytes_per_device"] for p in params.values()))
    text = ctshard.summary(plan)
    for l in layers:
        assert f"\n{l['name']} " in text
    assert all(f"\n{name} " in text for name in params)


def test_summary_compute_is_the_global_planners(graph):
    """With free inputs the global plan prices compute: the summary's total is the same number."""
    p = ctshard.plan(graph, mesh=[2, 4], algo="global", free_inputs=True, summary=True)
    assert math.isclose(p["summary"]["compute_us"], p["compute_us"], rel_tol=1e-9)
    assert math.isclose(p["summary"]["comm_us"], p["total_cost_us"], rel_tol=1e-9)
    assert {x["name"]: x["placement"] for x in p["summary"]["parameters"]} == p["input_placements"]


def test_summary_refuses_what_it_cannot_read(graph):
    with pytest.raises(ValueError, match=r"summary=True"):
        ctshard.summary(ctshard.plan(graph, mesh=[2, 4]))
    with pytest.raises(ValueError, match="not a plan"):
        ctshard.summary({"mesh": [2]})
    with pytest.raises(TypeError, match="ctshard.summary"):
        ctshard.summary("plan.json")
    assert "summary" not in ctshard.plan(graph, mesh=[2, 4])  # the document stays the command line's without it


@pytest.mark.parametrize("algo", ["greedy", "global"])
def test_cli_summary_is_the_same_text_and_document(tool, graph, algo):
    flags = ["--global", "--quiet"] if algo == "global" else []
    kw = {"algo": "global"} if algo == "global" else {}
    py = ctshard.plan(graph, mesh=[2, 4], data_parallel=True, summary=True, **kw)
    text = subprocess.run([str(tool), "plan", graph, "--data-parallel", "--summary", *flags], check=True, capture_output=True,
                          text=True).stdout
    assert text == ctshard.summary(py) + "\n"
    doc = json.loads(subprocess.run([str(tool), "plan", graph, "--data-parallel", "--summary", "--json", *flags], check=True,
                                    capture_output=True, text=True).stdout)
    assert doc["summary"] == py["summary"]


def test_console_script_summary(graph):
    """`python -m ctshard plan --summary` (the console script's code) runs the same C++ command."""
    out = subprocess.run([sys.executable, "-m", "ctshard", "plan", graph, "--data-parallel", "--summary"], check=True,
                         capture_output=True, text=True).stdout
    assert out == ctshard.summary(ctshard.plan(graph, mesh=[2, 4], data_parallel=True, summary=True)) + "\n"


def test_plot_writes_a_png(tmp_path, greedy, global_plan, graph):
    pytest.importorskip("matplotlib", reason="ctshard.plot needs matplotlib (pip install 'ctshard[plot]')")
    side = ctshard.plot([greedy, global_plan], tmp_path / "side.png")
    one = ctshard.plot(ctshard.plan(graph, mesh=[2, 2, 2], data_parallel=True), tmp_path / "one.png", title="no summary")
    compare = ctshard.plot(greedy, str(tmp_path / "cmp.svg"), compare=global_plan)
    for path in (side, one):
        data = open(path, "rb").read()
        assert data[:8] == PNG_SIGNATURE and len(data) > 10_000
    assert open(compare).read(200).lstrip().startswith("<?xml")


def test_plot_refuses_bad_input(tmp_path, greedy):
    pytest.importorskip("matplotlib", reason="ctshard.plot needs matplotlib (pip install 'ctshard[plot]')")
    with pytest.raises(ValueError, match=r"\.png"):
        ctshard.plot(greedy, tmp_path / "plan.jpg")
    with pytest.raises(ValueError, match="ctshard.plot: plan must be"):
        ctshard.plot({"total_cost_us": 1.0}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="ctshard.plot: plan must be"):
        ctshard.plot([greedy, "global"], tmp_path / "x.png")
    with pytest.raises(ValueError, match="no plan"):
        ctshard.plot([], tmp_path / "x.png")
    assert not list(tmp_path.iterdir())


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path, greedy, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'ctshard\[plot\]'"):
        ctshard.plot(greedy, tmp_path / "x.png")


def test_summary_and_plot_of_a_parallel_plan(tmp_path):
    """A ParallelPlan: ``ctshard.summary`` is its own per-module ``summary()``, ``ctshard.plot``
    draws its ctshard.plan document (per-node communication: it has no per-layer data)."""
    torch = pytest.importorskip("torch", reason="auto_parallel needs torch")
    import torch.distributed as dist

    import ctshard.torch as ct

    if dist.is_available() and dist.is_initialized():  # an earlier module's fake world: plan by mesh sizes alone
        dist.destroy_process_group()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    plan = ct.auto_parallel(model, (torch.randn(16, 64),), [2, 2], time_limit_s=5)
    text = ctshard.summary(plan)
    assert text == plan.summary() and "(backward)" in text
    rows = {line.split()[0]: line for line in text.splitlines()[1:3]}  # one row per Linear, by module FQN
    for fqn in ("0", "2"):
        assert f"weight={plan.parameter_placements[fqn + '.weight']}" in rows[fqn]
    pytest.importorskip("matplotlib", reason="ctshard.plot needs matplotlib (pip install 'ctshard[plot]')")
    data = open(ctshard.plot(plan, tmp_path / "auto.png"), "rb").read()
    assert data[:8] == PNG_SIGNATURE


def test_summary_layers_are_the_modules_of_an_exported_program():
    """A torch.export program records each node's module (nn_module_stack): the layers are the
    modules, the parameters sit in theirs; a make_fx graph records none: contraction runs."""
    torch = pytest.importorskip("torch", reason="torch.export needs torch")
    from torch.fx.experimental.proxy_tensor import make_fx

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)

        def forward(self, x):
            return self.down(torch.relu(self.up(x)))

    model, x = MLP(), torch.randn(32, 64)
    place = {"x": "S(0)R", "up.weight": "RS(0)", "up.bias": "RS(0)", "down.weight": "RS(1)"}
    p = ctshard.plan(torch.export.export(model, (x,)), mesh=[2, 4], place=place, summary=True)
    s = p["summary"]
    assert s["grouping"] == "module" and [l["name"] for l in s["layers"]] == ["up", "(root)", "down"]
    layers = {l["name"]: l for l in s["layers"]}
    assert layers["up"]["parameters"] == {"p_up_weight": "RS(0)", "p_up_bias": "RS(0)", "x": "S(0)R"}
    assert layers["down"]["parameters"] == {"p_down_weight": "RS(1)", "p_down_bias": "RR"}
    assert [n["op"] for n in p["nodes"] if n["name"] == "relu"] == ["aten.relu.default"] and layers["(root)"]["nodes"] == 1
    assert math.isclose(sum(l["comm_us"] for l in s["layers"]), p["total_cost_us"], rel_tol=1e-9)
    assert ctshard.summary(p).splitlines()[1].startswith("layers: modules")
    gm = make_fx(model)(x)  # no module structure recorded
    assert ctshard.plan(gm, mesh=[2, 4], summary=True)["summary"]["grouping"] == "contraction"


def test_summary_header_keeps_what_plan_prints(tool):
    """`plan --summary` keeps the plan's own status lines: an infeasible budget's least footprint,
    the training step and the hand plans (the same text from Python)."""
    joint = str(shared_path("graphs", "more", "gpt_tp2_joint.fx.txt"))
    flags = ["--mesh", "2x4", "--global", "--free-inputs", "--quiet"]
    text = subprocess.run([str(tool), "plan", joint, *flags, "--memory-budget-gib", "0.5", "--summary"], check=True,
                          capture_output=True, text=True).stdout
    head = text.splitlines()[:3]
    assert "not proven optimal (infeasible" in head[0]
    assert head[1].startswith("infeasible memory budget: the smallest footprint of any plan is ")
    assert head[2].startswith("training step (adam): step time ")
    py = ctshard.plan(joint, mesh=[2, 4], algo="global", free_inputs=True, memory_budget_gib=0.5, summary=True)
    assert py["status"] == "infeasible"
    assert text == ctshard.summary(py) + "\n"
    hands = subprocess.run([str(tool), "plan", joint, *flags, "--hand-plans", "--summary"], check=True, capture_output=True,
                           text=True).stdout
    assert [line.split(":")[0] for line in hands.splitlines() if line.startswith("hand plan ")] == [
        "hand plan ddp", "hand plan fsdp", "hand plan megatron_tp_fsdp"]
    bad = subprocess.run([str(tool), "plan", "--coverage", str(shared_path("graphs")), "--summary"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--summary summarizes one plan" in bad.stderr


def test_casts_do_not_end_layers():
    """A layer ends at a contraction or weighted op, never at a dtype cast (convert_element_type)."""
    plan = ctshard.plan(str(shared_path("graphs", "more", "llama32_1b_fw.fx.txt")), mesh=[2, 4], data_parallel=True, summary=True)
    ends = {layer["name"].split(" ")[0] for layer in plan["summary"]["layers"]}
    assert not any("convert_element_type" in name for name in ends)
    assert sum(layer["comm_us"] for layer in plan["summary"]["layers"]) == pytest.approx(plan["total_cost_us"], abs=1e-6)


def test_malformed_plans_and_paths_are_value_errors(tmp_path, greedy, graph):
    with pytest.raises(ValueError, match="not a summary document"):
        ctshard.summary({**greedy, "summary": None})
    with pytest.raises(ValueError, match="not a summary document"):
        ctshard.summary({**greedy, "summary": {}})
    pytest.importorskip("matplotlib", reason="ctshard.plot needs matplotlib (pip install 'ctshard[plot]')")
    with pytest.raises(ValueError, match="malformed"):
        ctshard.plot({**greedy, "nodes": [1, 2]}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="cannot write"):
        ctshard.plot(greedy, tmp_path / "missing" / "x.png")
    other = ctshard.plan(str(shared_path("graphs", "more", "dlrm_fw.fx.txt")), mesh=[2, 4], data_parallel=True)
    with pytest.raises(ValueError, match="same graph"):
        ctshard.plot([greedy, other], tmp_path / "x.png")
    assert not list(tmp_path.iterdir())


def test_parallel_plan_summary_rows_add_up(tmp_path):
    """Nested modules with parameters of their own: each forward node counts in its innermost
    layer once, so the rows (layers, other forward, backward) add up to the communication."""
    torch = pytest.importorskip("torch", reason="auto_parallel needs torch")
    import torch.distributed as dist

    import ctshard.torch as ct

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(64))
            self.fc = torch.nn.Linear(64, 128)
            self.out = torch.nn.Linear(128, 64)

        def forward(self, x):
            return self.out(torch.relu(self.fc(x * self.scale)))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x).sum()

    plan = ct.auto_parallel(Net(), (torch.randn(16, 64),), [2, 2], time_limit_s=5,
                            place={"inputs[0]": "S(0)R", "block.fc.weight": "RS(1)"})
    lines = plan.summary().splitlines()
    rows = [line.split() for line in lines[1:] if line and not line.startswith("mesh ")]
    total = sum(float(r[1]) for r in rows if len(r) > 1 and re.fullmatch(r"-?[0-9.]+", r[1]))
    total += sum(float(r[2]) for r in rows if r[0] == "(other" and len(r) > 2)
    assert total == pytest.approx(plan.communication_us, abs=0.01)
