"""A plan in which more than 5 % of the op nodes have no sharding rule warns: the text is
``report::fallback_warning`` (C++), printed by ``ctshard plan`` on stderr (``warning: ...``, not
with ``--quiet``) and raised by ``ctshard.plan`` as a ``ctshard.FallbackWarning``."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import ctshard
from ctshard import _ext

# aten.linear has no rule (torch.export keeps it undecomposed); relu has one: 1 of 2 op nodes
LINEAR = '''class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 16]", w: "f32[32, 16]"):
        linear: "f32[8, 32]" = torch.ops.aten.linear.default(x, w);  x = w = None
        relu: "f32[8, 32]" = torch.ops.aten.relu.default(linear);  linear = None
        return (relu,)
'''


def test_the_threshold_is_five_percent():
    assert _ext.fallback_warning(95, 5, {"aten.linear.default": 5}) == ""
    assert _ext.fallback_warning(0, 0, {}) == ""
    text = _ext.fallback_warning(94, 6, {"aten.linear.default": 4, "aten.layer_norm.default": 2})
    assert text.startswith("6 of 100 op nodes (6.0 %) fall back (no sharding rule")
    assert "aten.linear.default x4, aten.layer_norm.default x2." in text  # most frequent first
    assert "run_decompositions()" in text


def test_at_most_eight_ops_are_named():
    ops = {f"aten.op{i}.default": i + 1 for i in range(10)}
    text = _ext.fallback_warning(0, sum(ops.values()), ops)
    assert "aten.op9.default x10, aten.op8.default x9" in text and "aten.op1.default" not in text
    assert ", ... (10 ops)." in text


def test_python_warns_with_the_counts():
    with pytest.warns(ctshard.FallbackWarning) as caught:
        plan = ctshard.plan(LINEAR, mesh=[2])
    assert (plan["nodes_with_rule"], plan["nodes_fallback"], plan["fallback_ops"]) == (1, 1, {"aten.linear.default": 1})
    assert len(caught) == 1
    assert str(caught[0].message).startswith("ctshard.plan: 1 of 2 op nodes (50.0 %) fall back (no sharding rule")
    assert caught[0].filename == __file__  # attributed to the caller, not to the package


def test_a_plan_with_rules_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = ctshard.plan(mesh=[2, 4])  # the embedded block: every op has a rule
    assert plan["nodes_fallback"] == 0


def test_command_line_warns_on_stderr(tmp_path, tool):
    graph = tmp_path / "linear.fx.txt"
    graph.write_text(LINEAR)
    for cmd in ([str(tool)], [sys.executable, "-m", "ctshard"]):
        done = subprocess.run(cmd + ["plan", str(graph), "--mesh", "2", "--json"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr.startswith("warning: 1 of 2 op nodes (50.0 %) fall back (no sharding rule"), done.stderr
        quiet = subprocess.run(cmd + ["plan", str(graph), "--mesh", "2", "--json", "--quiet"], capture_output=True, text=True, timeout=120)
        assert (quiet.returncode, quiet.stderr) == (0, "") and quiet.stdout == done.stdout
