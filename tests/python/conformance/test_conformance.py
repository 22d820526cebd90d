"""DTensor (PyTorch 2.13) conformance of ctshard.

    cd tests/python/conformance && python3 -m pytest -q test_conformance.py
    CONFORMANCE_REPORT=/tmp/conformance.json python3 -m pytest -q test_conformance.py

`test_all_differences_are_explained` runs the whole suite (every op both sides have, 25 cases
each, with the simulated mesh on differing rows) and fails on any difference that no entry of
known_differences.json explains.  The other tests check the machinery itself and are quick.
Environment: CONFORMANCE_CASES_PER_OP (default 25), CONFORMANCE_REPORT (write the JSON report),
CONFORMANCE_JOBS (default 2), CTSHARD_BIN / CTSHARD_BACKEND=cli (see ctshard_side.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

torch = pytest.importorskip("torch")

import ctshard_side  # noqa: E402


def _ctshard_available() -> bool:
    try:
        ctshard_side.ops()
        return True
    except Exception:  # noqa: BLE001
        return False


needs_ctshard = pytest.mark.skipif(not _ctshard_available(),
                                   reason="ctshard (Python package or build/examples/ctshard) not available")


# ---------------------------------------------------------------------------------------
# machinery

def test_simulated_mesh_tells_sound_from_unsound():
    import simulate

    c = {"op": "aten.mm.default", "mesh": [2, 2],
         "tensors": [{"shape": [6, 5], "spec": "RR"}, {"shape": [5, 4], "spec": "RR"}],
         "args": ["$0", "$1"], "kwargs": {}}
    assert simulate.check_row(c, ["S(0)R", "RS(1)"], "S(0)S(1)")["verdict"] == "sound"
    assert simulate.check_row(c, ["S(1)S(1)", "S(0)S(0)"], "P(sum)P(sum)")["verdict"] == "sound"
    assert simulate.check_row(c, ["P(sum)R", "P(sum)R"], "P(sum)R")["verdict"] == "unsound"
    assert simulate.check_row(c, ["S(1)R", "RR"], "P(sum)R")["verdict"] == "local_error"
    e = {"op": "aten.exp.default", "mesh": [4], "tensors": [{"shape": [7, 3], "spec": "R"}],
         "args": ["$0"], "kwargs": {}}
    assert simulate.check_row(e, ["P(max)"], "P(max)")["verdict"] == "sound"
    assert simulate.check_row(e, ["P(sum)"], "P(sum)")["verdict"] == "unsound"
    assert simulate.check_row(e, ["S(0)"], "S(0)")["verdict"] == "sound"  # 7 rows on 4: 2,2,2,1


def test_oracle_mm_matches_pytorch_test_expectations():
    """test_op_strategy.py: mm (6,8)@(8,12) with inputs (S0,R),(R,S1) needs no redistribution."""
    from dtensor_oracle import run_case

    c = {"op": "aten.mm.default", "mesh": [4],
         "tensors": [{"shape": [6, 8], "spec": "S(0)"}, {"shape": [8, 12], "spec": "R"}],
         "args": ["$0", "$1"], "kwargs": {}}
    r = run_case(c)
    assert r["kind"] == "single_dim"
    assert r["choice"] == {"out": "S(0)", "in": ["S(0)", "R"], "redistribute": False, "index": 2}
    assert len(r["strategies"]) == 8  # 1 + 3 + 4 rules on a 1-d mesh, all shardable


@needs_ctshard
def test_mm_family_is_identical():
    import run_conformance

    ops = ["aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.baddbmm.default"]
    res = run_conformance.run(ops, 8, 0, jobs=1, progress=False)
    bad = [(r["id"], r["differences"]) for r in res["records"] if r["differences"]]
    assert not bad, json.dumps(bad, indent=1)[:4000]


# ---------------------------------------------------------------------------------------
# the suite

@needs_ctshard
def test_all_differences_are_explained():
    import run_conformance

    n = int(os.environ.get("CONFORMANCE_CASES_PER_OP", "25"))
    jobs = int(os.environ.get("CONFORMANCE_JOBS", str(min(2, os.cpu_count() or 1))))
    report_path = os.environ.get("CONFORMANCE_REPORT")
    ct_ops = ctshard_side.ops()
    dt_ops = run_conformance.dtensor_registered_ops()
    ops, info = run_conformance.select_ops(ct_ops, dt_ops, None, None)
    assert len(ops) >= 140, f"only {len(ops)} ops compared"
    res = run_conformance.run(ops, n, 0, jobs, progress=False, simulate_rows=4)
    per_op = {}
    for r in res["records"]:
        per_op[r["op"]] = per_op.get(r["op"], 0) + 1
    for s in res["skipped"]:
        per_op[s["op"]] = per_op.get(s["op"], 0) + 1
    assert all(v >= n for v in per_op.values())
    items = run_conformance.difference_items(res["records"])
    _, unexplained = run_conformance.explain(items, run_conformance.load_known())
    if report_path:
        class _A:  # the fields build_report reads from argparse
            cases_per_op = n
            seed = 0
        Path(report_path).write_text(json.dumps(
            run_conformance.build_report(res, ops, info, _A), indent=1, default=str))
    if unexplained:
        by = {}
        for it in unexplained:
            by.setdefault((it["op"], it["kind"]), []).append(it)
        lines = [f"{len(unexplained)} unexplained differences in {len(by)} (op, kind) groups "
                 f"(add an entry to known_differences.json once the cause is known):"]
        for (op, kind), its in sorted(by.items()):
            lines.append(f"  {op} {kind} x{len(its)}: {its[0]['id']}: {its[0]['summary'][:300]}")
        pytest.fail("\n".join(lines[:200]), pytrace=False)
