"""Cases for tests/python/test_run_plan.py that run inside the spawned gloo group (every rank
calls them with the DeviceMesh; rank 0's return value goes back to the test)."""

from __future__ import annotations

import torch
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

import ctshard
import ctshard.torch

SHAPE = (4, 6)


def einsum_graph() -> torch.fx.GraphModule:
    """``aten.einsum("ab,ab->ab", [a, b])`` as an aten FX graph with fake-tensor metas (make_fx
    would decompose einsum into mul, so the graph is built by hand)."""
    g = torch.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    g.output((g.call_function(torch.ops.aten.einsum.default, ("ab,ab->ab", [a, b])),))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    FakeTensorProp(gm).propagate(torch.zeros(SHAPE), torch.zeros(SHAPE))
    return gm


def einsum_partial(mesh) -> dict:
    """The batch-only einsum with all-Partial inputs: DTensor's rows ``[P(r), P(r), P(r)]``
    (``einsum_linearity="dtensor"``) against ctshard's sound plan, run with ``run_plan``; plus the
    ValueErrors for plans that do not match."""
    gm = einsum_graph()
    gen = torch.Generator().manual_seed(7)
    a, b = torch.randn(SHAPE, generator=gen), torch.randn(SHAPE, generator=gen)
    want = a * b
    partial = "P(sum)" * mesh.ndim
    place = {"a": partial, "b": partial}
    out = {}
    for linearity in ("dtensor", "sound"):
        plan = ctshard.plan(gm, mesh=list(mesh.shape), place=place, einsum_linearity=linearity, devices_per_host=1)
        for mode in ("local", "dtensor"):
            run = ctshard.torch.run_plan(gm, plan, mesh, [a, b], mode=mode, devices_per_host=1)
            got = run.outputs[0].full_tensor()
            node = run.nodes[0]
            out[(linearity, mode)] = {
                "node": node,
                "max_error": (got - want).abs().max().item(),
                "scale": want.abs().max().item(),
            }
    errors = {}
    plan = ctshard.plan(gm, mesh=list(mesh.shape), place=place, devices_per_host=1)

    def expect_value_error(key, fn):
        try:
            fn()
            errors[key] = None
        except ValueError as e:
            errors[key] = str(e)

    other = ctshard.plan(gm, mesh=[mesh.size() * 2], devices_per_host=1)
    expect_value_error("mesh", lambda: ctshard.torch.run_plan(gm, other, mesh, [a, b]))
    renamed = {**plan, "nodes": [dict(plan["nodes"][0], name="mul")]}
    expect_value_error("node", lambda: ctshard.torch.run_plan(gm, renamed, mesh, [a, b]))
    fewer = {**plan, "nodes": [dict(plan["nodes"][0], inputs=plan["nodes"][0]["inputs"][:1])]}
    expect_value_error("inputs", lambda: ctshard.torch.run_plan(gm, fewer, mesh, [a, b]))
    expect_value_error("values", lambda: ctshard.torch.run_plan(gm, plan, mesh, [a]))
    expect_value_error("mode", lambda: ctshard.torch.run_plan(gm, plan, mesh, [a, b], mode="eager"))
    expect_value_error("not a plan", lambda: ctshard.torch.run_plan(gm, {"x": 1}, mesh, [a, b]))
    return {"model": "einsum_partial", "mesh": list(mesh.shape), "runs": out, "errors": errors}


def misc_graph() -> torch.fx.GraphModule:
    """Ops ctshard has no rule for (``trace``, which DTensor decomposes; ``renorm``, which DTensor
    2.13 has no rule for either), ``squeeze()`` of a tensor whose sharded dim has local size 1, a
    factory (``arange``) and a Partial output."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, z):
        t = torch.trace(torch.renorm(x, 2, 0, 1.0))
        s = z.squeeze()
        r = torch.arange(6, dtype=torch.float32)
        return s + r + t, s.sum(0)

    return make_fx(f)(torch.zeros(4, 6), torch.zeros(2, 1, 6))


def misc_ops(mesh) -> dict:
    gm = misc_graph()
    gen = torch.Generator().manual_seed(3)
    x, z = torch.randn(4, 6, generator=gen), torch.randn(2, 1, 6, generator=gen)
    s = z.squeeze()
    want = [s + torch.arange(6.0) + torch.trace(torch.renorm(x, 2, 0, 1.0)), s.sum(0)]
    r = "R" * (mesh.ndim - 1)
    plan = ctshard.plan(gm, mesh=list(mesh.shape), place={"x_1": "S(0)" + r, "z_1": "S(0)" + r}, devices_per_host=1)
    out = {}
    for mode in ("dtensor", "local"):
        run = ctshard.torch.run_plan(gm, plan, mesh, [x, z], mode=mode, devices_per_host=1)
        out[mode] = {
            "nodes": run.nodes,
            "errors": [(o.full_tensor() - w).abs().max().item() for o, w in zip(run.outputs, want)],
            "output_specs": [ctshard.torch.to_spec(o) for o in run.outputs],
        }
    return {"model": "misc_ops", "mesh": list(mesh.shape), "runs": out}
