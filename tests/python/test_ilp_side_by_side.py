"""benchmarks/global/ilp_side_by_side.py's ILP (PuLP, solved by HiGHS) on tiny IOPDDL instances:
its optimum equals `ctshard iopddl`'s and a brute-force enumeration's, with a usage limit that
binds and forbidden strategies and pairs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from conftest import ROOT, shared_path

sys.path.insert(0, str(ROOT / "benchmarks" / "global"))
import ilp_side_by_side as ilp  # noqa: E402

F = 10**18  # forbidden

# 3 nodes; without the limit the optimum is (1, 1, 0) = 1 + 2 + 0 + 0 + 0 = 3, whose usage at t=1
# (nodes 0 and 1 live) is 5 + 5 > 8; node 2's strategy 1 and the pair (0:0, 1:1) are forbidden.
TINY = {"problem": {"name": "tiny", "nodes": {"intervals": [[0, 2], [1, 3], [2, 4]], "costs": [[4, 1], [3, 2, 7], [0, F]],
                                              "usages": [[1, 5], [2, 5, 1], [0, 0]]},
                    "edges": {"nodes": [[0, 1], [1, 2], [0, 0]], "costs": [[0, F, 3, 6, 0, 2], [1, 0, 0, 0, 5, 0], [0, 9, 9, 0]]},
                    "usage_limit": 8}}


def brute_force(prob: dict) -> int:
    best = None
    for s in itertools.product(*(range(len(c)) for c in prob["nodes"]["costs"])):
        cost, ok = ilp.evaluate(prob, list(s))
        # the [0, 0] self edge: only its diagonal can be chosen (evaluate indexes it as the pair (s0, s0))
        if ok and (best is None or cost < best):
            best = cost
    return best


def highs_optimum(prob: dict) -> float:
    import pulp

    lp, x, stats = ilp.build_model(prob)
    status = lp.solve(pulp.HiGHS(msg=False, threads=1, gapRel=0.0, timeLimit=30))
    assert pulp.LpStatus[status] == "Optimal"
    cost, feasible = ilp.evaluate(prob, ilp.decode(x))
    assert feasible
    assert cost == pytest.approx(pulp.value(lp.objective))
    return cost


def ctshard_optimum(tool, path) -> int:
    j = json.loads(subprocess.run([str(tool), "iopddl", str(path), "--time-limit-s", "10", "--json"], capture_output=True, text=True,
                                  check=True).stdout)
    assert j["optimal"]
    return j["cost"]


def test_contest_example_highs_equals_ctshard(tool):
    path = shared_path("iopddl", "example.json")
    prob = ilp.load(path)
    assert highs_optimum(prob) == ctshard_optimum(tool, path) == brute_force(prob) == 445


def test_binding_limit_and_forbidden_entries(tool, tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    prob = ilp.load(path)
    free = json.loads(json.dumps(TINY))["problem"]
    del free["usage_limit"]
    assert brute_force(free) < brute_force(prob)  # the limit binds
    lp, _, stats = ilp.build_model(prob)
    assert stats["x_columns"] == 6 and stats["usage_rows"] >= 1  # node 2's forbidden strategy has no column
    assert highs_optimum(prob) == ctshard_optimum(tool, path) == brute_force(prob)


def test_live_sets_are_the_maximal_ones():
    # [0,2) [1,3) [2,4): steps 1 -> {0, 1}, 2 -> {1, 2}; step 0's {0} is a subset of step 1's
    assert ilp.live_sets([[0, 2], [1, 3], [2, 4]], [[1], [1], [1]]) == [[0, 1], [1, 2]]
