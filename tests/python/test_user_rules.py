"""Rules for the user's own ops from Python: ctshard.register_rule / unregister_rule (rows with
placeholders, kinds, a factory fn) applied to table, choose and plan; errors naming the rule and
the entry; ctshard.check_rule on the simulated mesh (a wrong rotary-embedding rule is reported with
its row, the right one and built-in rules pass)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctshard

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "custom_rules"
SHARED = Path(os.environ.get("CTSHARD_SHARED_DIR", HERE.parents[2] / "shared"))  # ../shared beside the repository
JOINT = SHARED / "graphs" / "more" / "gpt_tp2_joint.fx.txt"

ROPE_ROWS = [["S?(0)", "S?(0)", "R"], ["S?(1)", "S?(1)", "S?(0)"], ["S?(2)", "S?(2)", "R"]]


@pytest.fixture(autouse=True)
def _no_rules_left():
    yield
    for op in list(ctshard.registered_rules()):
        ctshard.unregister_rule(op)


def _plan_rope_block():
    return ctshard.plan(str(DATA / "rope_block.fx.txt"), mesh=[2, 2], place={"x": "S(0)R", "wq": "RS(1)"})


def test_rows_apply_to_table_and_choose():
    with pytest.raises(ValueError, match="has no sharding rule"):
        ctshard.table("mylib.rope.default", [[8, 128, 8, 64], [128, 64]], [2, 2], ["S(0)S(2)", "RR"])
    ctshard.register_rule("mylib.rope.default", ROPE_ROWS)
    t = ctshard.table("mylib.rope.default", [[8, 128, 8, 64], [128, 64]], [2, 2], ["S(0)S(2)", "RR"])
    assert t["rules_raw"] == ROPE_ROWS
    assert t["num_combinations"] == 16
    c = ctshard.choose("mylib.rope.default", [[8, 128, 8, 64], [128, 64]], [2, 2], ["S(0)S(2)", "RR"])
    assert c["out"] == "S(0)S(2)" and c["in"] == ["S(0)S(2)", "RR"] and c["total"] == 0.0
    assert ctshard.registered_rules()["mylib.rope.default"]["rows"] == ROPE_ROWS
    ctshard.unregister_rule("mylib.rope.default")
    with pytest.raises(ValueError, match="has no sharding rule"):
        ctshard.table("mylib.rope.default", [[8, 128, 8, 64], [128, 64]], [2, 2], ["S(0)S(2)", "RR"])
    with pytest.raises(ValueError, match="'mylib.rope.default' has no registered rule"):
        ctshard.unregister_rule("mylib.rope.default")


def test_plan_with_python_rules_matches_the_rules_file():
    before = _plan_rope_block()
    assert before["nodes_fallback"] == 3
    ctshard.register_rule("mylib.log_tensor.default", kind="identity")
    ctshard.register_rule("mylib.bias_gelu.default", kind="pointwise")
    ctshard.register_rule("mylib.rope.default", ROPE_ROWS)
    after = _plan_rope_block()
    assert after["nodes_fallback"] == 0 and after["fallback_ops"] == {}
    ops = {n["op"]: n for n in after["nodes"]}
    assert ops["mylib.rope.default"]["inputs"][0] == "S(0)S(2)"
    assert ops["mylib.log_tensor.default"]["inputs"][0] == "S(0)S(2)"
    assert ops["mylib.bias_gelu.default"]["inputs"][0] == "S(0)S(0)"  # no Partial row: reduce-scattered first
    assert after["total_cost_us"] < before["total_cost_us"]


def test_a_rule_replaces_a_builtin_one_until_unregistered():
    base = ctshard.table("aten.relu.default", [[4, 4]], [2], ["S(0)"])
    assert len(base["rules_raw"]) > 0
    ctshard.register_rule("aten.relu.default", kind="replicate")
    assert ctshard.table("aten.relu.default", [[4, 4]], [2], ["S(0)"])["rules_raw"] == []
    ctshard.unregister_rule("aten.relu.default")
    assert ctshard.table("aten.relu.default", [[4, 4]], [2], ["S(0)"])["rules_raw"] == base["rules_raw"]


def test_fn_rule_depends_on_the_call():
    seen = []

    def norm_rows(shapes, args, kwargs):
        seen.append((shapes, args, kwargs))
        rank = len(shapes[0])
        dim = args[1] % rank
        return [[f"S?({d})", f"S?({d})"] for d in range(rank) if d != dim]

    ctshard.register_rule("mylib.fused_norm.default", fn=norm_rows)
    t = ctshard.table("mylib.fused_norm.default", [[4, 6, 8]], [2], ["S(0)"], args=["$0", -1])
    assert t["rules_raw"] == [["S?(0)", "S?(0)"], ["S?(1)", "S?(1)"]]
    assert seen == [([[4, 6, 8]], ["$0", -1], {})]

    def broken(shapes, args, kwargs):
        raise RuntimeError("cannot tell")

    ctshard.register_rule("mylib.fused_norm.default", fn=broken)
    with pytest.raises(ValueError, match="rule 'mylib.fused_norm.default': fn raised RuntimeError: cannot tell"):
        ctshard.table("mylib.fused_norm.default", [[4, 6, 8]], [2], ["S(0)"], args=["$0", -1])


def test_bad_rules_name_the_rule_and_the_entry():
    with pytest.raises(ValueError, match=r"'mylib.x.default'\): unknown kind 'elementwise'"):
        ctshard.register_rule("mylib.x.default", kind="elementwise")
    with pytest.raises(ValueError, match=r"'mylib.x.default'\): row 1 has 3 entries, row 0 has 2"):
        ctshard.register_rule("mylib.x.default", [["S?(0)", "S?(0)"], ["S?(1)", "S?(1)", "R"]])
    with pytest.raises(ValueError, match=r"'mylib.x.default'\): row 0, entry 1: "):
        ctshard.register_rule("mylib.x.default", [["S?(0)", "Q(1)"]])
    with pytest.raises(ValueError, match="give rows, a kind or fn"):
        ctshard.register_rule("mylib.x.default")
    with pytest.raises(ValueError, match="fn must be callable"):
        ctshard.register_rule("mylib.x.default", fn=3)
    assert ctshard.registered_rules() == {}
    # a placeholder dim past the tensor's rank, at the call
    ctshard.register_rule("mylib.rope.default", [["S?(3)", "S?(3)", "S?(3)"]])
    with pytest.raises(ValueError, match=r"row 0, entry 2 \(input 1\): S\?\(3\) names dim 3 of a rank-2 tensor"):
        ctshard.table("mylib.rope.default", [[8, 128, 8, 64], [128, 64]], [2], ["R", "R"])
    with pytest.raises(ValueError, match=r"node 'rope' \(mylib.rope.default\): .*names dim 3 of a rank-2 tensor"):
        _plan_rope_block()


@pytest.mark.skipif(not JOINT.exists(), reason="../shared not found")
def test_megatron_joint_graph_with_python_rules():
    opts = dict(mesh=[2], data_parallel=True, batch_size=32)
    builtin = ctshard.plan(str(JOINT), **opts)
    ctshard.register_rule("tg.log_tensor.default", kind="identity")
    identity = ctshard.plan(str(JOINT), **opts)
    assert identity["nodes_fallback"] == 0 and identity["nodes_with_rule"] == 388
    assert identity["total_cost_us"] == builtin["total_cost_us"]
    ctshard.register_rule("tg.log_tensor.default", kind="replicate")
    replicate = ctshard.plan(str(JOINT), **opts)
    assert all(n["inputs"][0] == "R" for n in replicate["nodes"] if n["op"] == "tg.log_tensor.default")


# ---- check_rule --------------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def rope(x, freqs):
    """Rotary embedding of x [b, s, h, d] by angles freqs [s, d/2] (halves rotated)."""
    half = x.shape[-1] // 2
    cos, sin = torch.cos(freqs)[:, None, :], torch.sin(freqs)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


ROPE_SHAPES = [[4, 6, 2, 8], [6, 4]]


def test_check_rule_reports_a_rope_declared_local_on_the_rotated_dim():
    wrong = ROPE_ROWS + [["S?(3)", "S?(3)", "S?(1)"]]
    r = ctshard.check_rule("mylib.rope.default", rope, ROPE_SHAPES, [2], rows=wrong)
    assert not r["ok"]
    assert r["rows_checked"] == 5  # all-Replicate + 4 rows
    assert [w["row"] for w in r["wrong_rows"]] == [["S(3)", "S(3)", "S(1)"]]
    assert r["wrong_rows"][0]["mesh"] == [2]
    assert "differs from the reference" in r["wrong_rows"][0]["counterexample"]
    assert ctshard.registered_rules() == {}  # the rule checked is not left registered


def test_check_rule_passes_the_right_rope_and_finds_a_wrong_partial_row():
    r = ctshard.check_rule("mylib.rope.default", rope, ROPE_SHAPES, [2, 2], rows=ROPE_ROWS + [["P(sum)", "P(sum)", "R"]])
    # (4 rows + all-Replicate)^2, less S(1)S(1): the sequence (6) does not split in 4 evenly
    assert r == {"ok": True, "rows_checked": 24, "wrong_rows": []}
    # rope is linear in x for fixed angles, but not monotone: P(max) does not pass through
    r = ctshard.check_rule("mylib.rope.default", rope, ROPE_SHAPES, [2], rows=ROPE_ROWS + [["P(max)", "P(max)", "R"]])
    assert [w["row"] for w in r["wrong_rows"]] == [["P(max)", "P(max)", "R"]]


def test_check_rule_on_kinds_and_registered_rules():
    def bias_gelu(x, b):
        return torch.nn.functional.gelu(x + b)

    assert ctshard.check_rule("mylib.bias_gelu.default", bias_gelu, [[4, 6], [6]], [2, 2], kind="pointwise")["ok"]
    # GeLU is not linear: a P(sum) row through it is wrong
    r = ctshard.check_rule("mylib.bias_gelu.default", bias_gelu, [[4, 6], [6]], [2], kind="pointwise", rows=[["P(sum)", "P(sum)", "P(sum)"]])
    assert [w["row"] for w in r["wrong_rows"]] == [["P(sum)", "P(sum)", "P(sum)"]]
    assert ctshard.check_rule("mylib.log.default", lambda t: t.clone(), [[4, 6]], [2, 2], kind="identity")["ok"]
    ctshard.register_rule("mylib.rope.default", ROPE_ROWS)
    assert ctshard.check_rule("mylib.rope.default", rope, ROPE_SHAPES, [2])["ok"]


@pytest.mark.parametrize("op, reference, shapes, args", [
    ("aten.mm.default", torch.mm, [[4, 6], [6, 8]], None),
    ("aten.add.Tensor", torch.add, [[4, 6], [6]], None),
    ("aten.gelu.default", torch.nn.functional.gelu, [[4, 6]], None),
    ("aten.sum.dim_IntList", lambda t, dims: torch.sum(t, dims), [[4, 6]], [[1]]),
])
def test_check_rule_passes_builtin_rules(op, reference, shapes, args):
    r = ctshard.check_rule(op, reference, shapes, [2, 2], args=args)
    assert r["ok"], r["wrong_rows"][:3]
    assert r["rows_checked"] > 4


def test_check_rule_command_line(tmp_path):
    import subprocess
    import sys

    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": [{"op": "mylib.log.default", "kind": "identity"},'
                     ' {"op": "mylib.gelu.default", "kind": "pointwise", "rows": [["P(sum)", "P(sum)"]]}]}')

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ctshard", "check-rule", "--rules", str(rules), *args],
                              capture_output=True, text=True, cwd=tmp_path)

    ok = run("--op", "mylib.log.default", "--reference", "aten.clone.default", "--shapes", "4x6", "--mesh", "2x2")
    assert ok.returncode == 0, ok.stderr
    doc = __import__("json").loads(ok.stdout)
    table = ctshard.table("tg.log_tensor.default", [[4, 6]], [2, 2], ["S(0)S(0)"])  # the built-in identity: the same rows
    assert doc["ok"] and doc["rows_checked"] == len(table["strategies"]) > 30
    wrong = run("--op", "mylib.gelu.default", "--reference", "torch.nn.functional.gelu", "--shapes", "4x6", "--mesh", "2")
    assert wrong.returncode == 1
    assert [w["row"] for w in __import__("json").loads(wrong.stdout)["wrong_rows"]] == [["P(sum)", "P(sum)"]]
    bad = run("--op", "mylib.gelu.default", "--reference", "aten.no_such_op.default", "--shapes", "4x6", "--mesh", "2")
    assert bad.returncode == 2 and "neither a dotted path nor an op torch has" in bad.stderr


def test_auto_parallel_plans_a_custom_op_with_its_registered_rule():
    import ctshard.torch as ct
    from torch import nn

    @torch.library.custom_op("ctshard_test::fused_gelu", mutates_args=())
    def fused_gelu(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)

    @fused_gelu.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        return torch.ops.aten.gelu_backward.default(g, ctx.saved_tensors[0])

    fused_gelu.register_autograd(backward, setup_context=setup)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(64, 256, bias=False)
            self.down = nn.Linear(256, 64, bias=False)

        def forward(self, x):
            return self.down(fused_gelu(self.up(x)))

    x = torch.randn(32, 64)
    before = ct.auto_parallel(Block(), (x,), [4], place={"inputs[0]": "S(0)"}, time_limit_s=3.0)
    assert before.plan["fallback_ops"] == {"ctshard_test.fused_gelu.default": 1}
    ctshard.register_rule("ctshard_test.fused_gelu.default", kind="pointwise")
    after = ct.auto_parallel(Block(), (x,), [4], place={"inputs[0]": "S(0)"}, time_limit_s=3.0)
    assert after.plan["nodes_fallback"] == 0 and after.plan["fallback_ops"] == {}
    assert [n["op"] for n in after.plan["nodes"]].count("ctshard_test.fused_gelu.default") == 1


def test_import_a_rule_registered_with_dtensor():
    import ctshard.torch as ct
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    @torch.library.custom_op("ctshard_test::row_softmax", mutates_args=())
    def row_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
        return torch.softmax(x, dim)

    @row_softmax.register_fake
    def _(x, dim):
        return torch.empty_like(x)

    @register_sharding(torch.ops.ctshard_test.row_softmax.default)
    def row_softmax_sharding(x, dim):  # DTensor's documented example (softmax)
        softmax_dim = dim if dim >= 0 else dim + x.ndim
        out = [([Replicate()], [Replicate(), None])]
        out += [([Shard(d)], [Shard(d), None]) for d in range(x.ndim) if d != softmax_dim]
        return out

    name = ct.import_dtensor_rule(torch.ops.ctshard_test.row_softmax.default)
    assert name == "ctshard_test.row_softmax.default"
    t = ctshard.table(name, [[4, 6, 8]], [2], ["S(0)"], args=[-1])
    assert t["rules_raw"] == [["S(0)", "S(0)"], ["S(1)", "S(1)"]]
    assert ctshard.check_rule(name, lambda x, dim: torch.softmax(x, dim), [[4, 6, 8]], [2], args=[-1])["ok"]
    with pytest.raises(ValueError, match="has no sharding function from register_sharding"):
        ct.import_dtensor_rule(torch.ops.aten.relu.default)
