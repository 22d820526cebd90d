"""PyTorch's own objects in and out of the Python API (ctshard._args): a mesh as a ``DeviceMesh``,
sizes, an int or ``"2x4"``; ``place`` keyed by graph input names or, for a ``torch.export``
program, parameter and buffer FQNs, with spec text or DTensor placements as values; bad values
raise ValueError / TypeError naming the function and the argument (and the valid names); plans
hand back DTensor placements (``ctshard.torch.plan_placements``)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import Partial, Replicate, Shard

import ctshard
import ctshard.torch as ct


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 64)
        self.down = nn.Linear(64, 16)
        self.register_buffer("scale", torch.ones(16))

    def forward(self, x):
        return self.down(torch.relu(self.up(x))) * self.scale


@pytest.fixture(scope="module")
def program():
    torch.manual_seed(0)
    return torch.export.export(_MLP(), (torch.randn(8, 16),)).run_decompositions()


def _outputs(plan):
    return [(n["name"], n["outputs"]) for n in plan["nodes"]]


# --- meshes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mesh", [[2, 4], (2, 4), torch.Size([2, 4]), "2x4", " 2 x 4 ", [torch.tensor(2).item(), 4]],
                         ids=["list", "tuple", "torch.Size", "text", "text-spaces", "ints"])
def test_mesh_forms_plan_alike(mesh):
    want = ctshard.plan(mesh=[2, 4])
    got = ctshard.plan(mesh=mesh)
    assert got["mesh"] == [2, 4]
    assert (_outputs(got), got["total_cost_us"]) == (_outputs(want), want["total_cost_us"])


def test_an_int_is_a_one_dim_mesh():
    want = ctshard.table("mm", [[64, 32], [32, 16]], [8], ["S(0)", "R"])
    for mesh in (8, "8"):
        got = ctshard.table("mm", [[64, 32], [32, 16]], mesh, ["S(0)", "R"])
        assert got["strategies"] == want["strategies"] and got["choice"] == want["choice"]
    assert ctshard.cost([64, 32], 8, "S(0)", "R")["cost_us"] == ctshard.cost([64, 32], [8], "S(0)", "R")["cost_us"] > 0


@pytest.fixture
def device_mesh():
    """A 2x4 DeviceMesh over a fake world of 8 (one process), destroyed afterwards."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=0, world_size=8, store=FakeStore())
    try:
        yield init_device_mesh("cpu", (2, 4))
    finally:
        dist.destroy_process_group()


def test_device_mesh_everywhere(device_mesh, program):
    want = ctshard.plan(program, mesh=[2, 4], place={"x": "S(0)R"})
    got = ctshard.plan(program, mesh=device_mesh, place={"x": "S(0)R"})
    assert (_outputs(got), got["total_cost_us"]) == (_outputs(want), want["total_cost_us"])
    assert ctshard.table("mm", [[64, 32], [32, 16]], device_mesh, ["S(0)R", "RR"])["strategies"] == \
        ctshard.table("mm", [[64, 32], [32, 16]], [2, 4], ["S(0)R", "RR"])["strategies"]
    assert ctshard.choose("mm", [[64, 32], [32, 16]], device_mesh, ["S(0)R", "RR"]) == \
        ctshard.choose("mm", [[64, 32], [32, 16]], [2, 4], ["S(0)R", "RR"])
    assert ctshard.cost([64, 32], device_mesh, "S(0)S(1)", "RR") == ctshard.cost([64, 32], [2, 4], "S(0)S(1)", "RR")


@pytest.mark.parametrize("mesh, exc, text", [
    (2.5, TypeError, "mesh must be a DeviceMesh, a sequence of sizes, an int or text like '2x4', got float"),
    (None, TypeError, "mesh must be .* got NoneType"),
    (True, TypeError, "mesh must be .* got bool"),
    ({2, 4}, TypeError, "mesh must be .* got set"),
    ([2, "4"], TypeError, "mesh sizes must be ints, got str '4'"),
    ([2, 4.0], TypeError, "mesh sizes must be ints, got float"),
    ("2y4", ValueError, "mesh='2y4' is not mesh sizes like '2x4'"),
    ("", ValueError, "mesh='' is not mesh sizes"),
    ([], ValueError, "mesh has no mesh dims"),
    ([0, 4], ValueError, r"mesh dim 0 has size 0 \(sizes must be positive\): \[0, 4\]"),
    ([2, -2], ValueError, r"mesh dim 1 has size -2 \(sizes must be positive\): \[2, -2\]"),
    (-2, ValueError, r"mesh dim 0 has size -2"),
])
def test_bad_mesh_names_the_function_and_argument(mesh, exc, text):
    calls = {
        "ctshard.table": lambda: ctshard.table("mm", [[8, 8], [8, 8]], mesh, ["R", "R"]),
        "ctshard.choose": lambda: ctshard.choose("mm", [[8, 8], [8, 8]], mesh, ["R", "R"]),
        "ctshard.cost": lambda: ctshard.cost([8, 8], mesh, "R", "R"),
        "ctshard.plan": lambda: ctshard.plan(mesh=mesh),
    }
    for where, call in calls.items():
        with pytest.raises(exc, match=rf"^{where}: {text}"):
            call()


# --- placements -------------------------------------------------------------------------------

def test_placement_objects_as_specs():
    specs = ctshard.table("mm", [[64, 32], [32, 16]], [2, 4], ["S(0)R", "RS(1)"])
    objs = ctshard.table("mm", [[64, 32], [32, 16]], [2, 4], [(Shard(0), Replicate()), [Replicate(), Shard(1)]])
    assert objs["strategies"] == specs["strategies"] and objs["choice"] == specs["choice"]
    assert ctshard.cost([64, 32], [2, 4], (Partial(), Shard(0)), (Replicate(), Replicate())) == \
        ctshard.cost([64, 32], [2, 4], "P(sum)S(0)", "RR")
    assert ctshard.cost([64, 32], [8], Shard(0), Replicate()) == ctshard.cost([64, 32], [8], "S(0)", "R")


@pytest.mark.parametrize("bad, exc, text", [
    (3, TypeError, r"ctshard.plan: place\['x'\] must be a spec string \('S\(0\)R'\) or DTensor placements"),
    ((Shard(0), "R"), TypeError, r"ctshard.plan: place\['x'\] must be"),
    ((Partial("product"), Replicate()), ValueError, r"ctshard.plan: place\['x'\]: .*Partial reduce op 'product'"),
])
def test_bad_placement_values(program, bad, exc, text):
    with pytest.raises(exc, match=text):
        ctshard.plan(program, mesh=[2, 4], place={"x": bad})


@pytest.mark.parametrize("spec, text", [
    ("S(0)", r"ctshard.plan: place\['x'\] = 'S\(0\)' has 1 placements for a 2-dim mesh \(one per mesh dim\)$"),
    ((Shard(0), Replicate(), Replicate()), r"place\['x'\] = 'S\(0\)RR' has 3 placements for a 2-dim mesh"),
    ("S(0)Q", r"ctshard.plan: place\['x'\]: .*cannot parse a placement at column 5 of 'S\(0\)Q'"),
])
def test_placement_of_the_wrong_size_or_unreadable(program, spec, text):
    for graph in (program, None):  # checked before the graph is read, for every kind of graph
        with pytest.raises(ValueError, match=text):
            ctshard.plan(graph, mesh=[2, 4], place={"x": spec})


def test_bad_table_inputs():
    with pytest.raises(TypeError, match=r"ctshard.table: inputs must be a list with one placement per tensor input, got str"):
        ctshard.table("mm", [[8, 8], [8, 8]], [2], "S(0)")
    with pytest.raises(TypeError, match=r"ctshard.choose: inputs\[1\] must be a spec string"):
        ctshard.choose("mm", [[8, 8], [8, 8]], [2], ["S(0)", 0])


# --- names ------------------------------------------------------------------------------------

def test_place_by_fqn_and_placement_tuples(program):
    """A parameter's FQN from the graph signature stands for its placeholder, DTensor placements
    for their spec: the plan is the one of the placeholder names and spec text."""
    names = {s.target: s.arg.name for s in program.graph_signature.input_specs if s.target}
    assert names["up.weight"] == "p_up_weight" and names["scale"] == "b_scale"
    by_names = ctshard.plan(program.graph_module, mesh=[2, 4],
                            place={"x": "S(0)R", "p_up_weight": "RS(0)", "p_up_bias": "RS(0)", "p_down_weight": "RS(1)"})
    by_fqns = ctshard.plan(program, mesh="2x4",
                           place={"x": (Shard(0), Replicate()), "up.weight": (Replicate(), Shard(0)),
                                  "up.bias": [Replicate(), Shard(0)], "down.weight": "RS(1)"})
    assert (_outputs(by_fqns), by_fqns["total_cost_us"]) == (_outputs(by_names), by_names["total_cost_us"])
    assert by_fqns["placements"] == {"x": "S(0)R", "p_up_weight": "RS(0)", "p_up_bias": "RS(0)", "p_down_weight": "RS(1)"}
    assert dict(_outputs(by_fqns))["addmm"] == ["S(0)S(1)"]  # x @ up.weight.T: batch and hidden sharded
    # the Megatron pairing moves nothing but the down projection's partial sum
    assert by_fqns["total_cost_us"] < ctshard.plan(program, mesh=[2, 4], place={"x": "S(0)R", "up.weight": "RS(1)"})["total_cost_us"]


def test_unknown_name_lists_the_valid_ones(program):
    with pytest.raises(ValueError) as info:
        ctshard.plan(program, mesh=[2, 4], place={"tok.weight": "S(0)R"})
    text = str(info.value)
    assert text.startswith("ctshard.plan: place names 'tok.weight', which is not an input of the graph; valid names: ")
    for name in ("'up.weight'", "'up.bias'", "'down.weight'", "'down.bias'", "'scale'", "'x'"):
        assert name in text
    assert "--place" not in text
    with pytest.raises(ValueError, match=r"valid names: 'x', 'y'$"):
        ctshard.plan(torch.fx.symbolic_trace(lambda x, y: x + y), place={"z": "R"})  # a GraphModule's own placeholders


def test_one_input_named_twice(program):
    with pytest.raises(ValueError, match=r"place gives input 'p_up_weight' twice \(as 'up.weight' and 'p_up_weight'\)"):
        ctshard.plan(program, mesh=[2, 4], place={"up.weight": "RS(0)", "p_up_weight": "RS(0)"})


def test_place_must_be_a_mapping(program):
    with pytest.raises(TypeError, match=r"ctshard.plan: place must map input names to placements"):
        ctshard.plan(program, place=[("x", "S(0)R")])
    with pytest.raises(TypeError, match=r"ctshard.plan: place keys must be input names \(str\), got int 0"):
        ctshard.plan(program, place={0: "S(0)R"})


# --- out: DTensor placements ------------------------------------------------------------------

def test_plan_placements_hand_back_dtensor_objects(program):
    plan = ctshard.plan(program, mesh=[2, 4], place={"x": "S(0)R", "up.weight": "RS(0)"})
    got = ct.plan_placements(plan)
    assert set(got) == {n["name"] for n in plan["nodes"]} | {"x", "p_up_weight"}
    for node in plan["nodes"]:
        assert [ct.to_spec(p) for p in got[node["name"]]] == node["outputs"]
    assert got["p_up_weight"] == [(Replicate(), Shard(0))] and got["addmm"] == [(Shard(0), Shard(1))]
    by_fqn = ct.plan_placements(plan, program)
    assert by_fqn["up.weight"] == [(Replicate(), Shard(0))] and "p_up_weight" not in by_fqn
    assert by_fqn["x"] == [(Shard(0), Replicate())]
    # a global plan lists every input's placement
    glob = ct.plan_placements(ctshard.plan(program, mesh=[2, 4], place={"x": "S(0)R"}, algo="global", free_inputs=True), program)
    assert {"up.weight", "up.bias", "down.weight", "down.bias", "scale", "x"} <= set(glob)
    assert glob["x"] == [(Shard(0), Replicate())] and all(len(p[0]) == 2 for p in glob.values())
    with pytest.raises(ValueError, match="plan must be a result of ctshard.plan"):
        ct.plan_placements({"total_cost_us": 0})


def test_graph_text_names_its_tensor_inputs():
    """Graph text is read by the planner: its error for an unknown name lists the tensor inputs."""
    text = '''class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 16]", w: "f32[32, 16]", n: "Sym(s0)"):
        t: "f32[16, 32]" = torch.ops.aten.t.default(w);  w = None
        mm: "f32[8, 32]" = torch.ops.aten.mm.default(x, t);  x = t = None
        return (mm,)
'''
    with pytest.raises(ValueError, match=r"--place names 'z', which is not an input \(placeholder\) of <text>; its tensor inputs: 'x', 'w'$"):
        ctshard.plan(text, mesh=[2], place={"z": "R"})
