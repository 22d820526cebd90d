"""The package's modules import in any order, and none imports a module that imports it back: an
AST scan of python/ctshard/*.py finds the intra-package imports (at module level or inside
functions, ``importlib.import_module`` of a relative name included) and checks they form no cycle."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "ctshard"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))  # "__init__" is the package itself


def _resolve(name: str) -> str | None:
    """The package module that ``name`` ("ctshard", "ctshard.torch", "ctshard.torch.x", ...)
    refers to: "__init__" for the package, the submodule's stem, or None outside the package."""
    parts = name.split(".")
    if parts[0] != "ctshard":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _absolute(node: ast.ImportFrom) -> str:
    """The absolute module name of a ``from ... import`` (every module sits directly in ctshard,
    so level 1 is the package, from a submodule and from __init__ alike)."""
    if node.level == 0:
        return node.module or ""
    if node.level > 1:
        return ""  # above the package
    return f"ctshard.{node.module}" if node.module else "ctshard"


def imports_of(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(), filename=f"{module}.py")
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node)
            names = [source]
            if source == "ctshard":  # `from . import x`: x is a submodule or a name of __init__
                names = [f"ctshard.{a.name}" if a.name in MODULES or a.name == "_ext" else "ctshard" for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            target = node.args[0].value
            names = ["ctshard" + target if target.startswith(".") else target]
        for name in names:
            resolved = _resolve(name)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the DFS stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_intra_package_import_cycle():
    graph = {m: imports_of(m) for m in MODULES}
    # the scan sees the imports it must (a scan that finds nothing would pass vacuously)
    assert {"_placements", "_run"} <= graph["torch"]
    assert "_placements" in graph["_run"] and "_graph" in graph["_run"]
    assert {"_graph", "torch"} <= graph["__init__"]  # plan's lazy import, ctshard.torch's importlib
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_scan_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


# ctshard.torch and ctshard._run both ways round, and the shared module first
ORDERS = [["ctshard.torch", "ctshard._run"], ["ctshard._run", "ctshard.torch"],
          ["ctshard._placements", "ctshard._run", "ctshard.torch"]]


@pytest.mark.parametrize("order", ORDERS, ids=[" then ".join(m.split(".")[1] for m in o) for o in ORDERS])
def test_modules_import_in_a_fresh_interpreter_in_any_order(order):
    script = "\n".join([f"import {m}" for m in order] + [
        "import ctshard, ctshard.torch as t, ctshard._run as r, ctshard._placements as p",
        "assert t.run_plan is r.run_plan and t.PlanRun is r.PlanRun and t.planned_specs is r.planned_specs",
        "assert t.collective_kind is r.collective_kind",
        "assert t.to_placements is p.to_placements is r.to_placements and t.to_spec is p.to_spec is r.to_spec",
        "assert t.plan_placements is p.plan_placements",
        "assert ctshard.torch is t",
        "assert t.__all__ == ['to_placements', 'to_spec', 'plan_placements', 'run_plan', 'PlanRun', 'planned_specs', 'collective_kind', 'auto_parallel', 'ParallelPlan', 'import_dtensor_rule', 'CollectiveLog']",
        "import ctshard._auto as a",
        "assert t.auto_parallel is a.auto_parallel and t.ParallelPlan is a.ParallelPlan",
        "assert t.to_spec(t.to_placements('S(0)P(sum)')) == 'S(0)P(sum)'",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_lazy_attribute_in_a_fresh_interpreter():
    script = ("import sys, ctshard\nassert 'ctshard.torch' not in sys.modules and 'torch' not in sys.modules\n"
              "t = ctshard.torch\nassert t.run_plan.__name__ == 'run_plan'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
