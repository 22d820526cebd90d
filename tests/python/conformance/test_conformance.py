"""DTensor (PyTorch 2.13) conformance of ctshard.

    cd tests/python/conformance && python3 -m pytest -q test_conformance.py
    CONFORMANCE_REPORT=/tmp/conformance.json python3 -m pytest -q test_conformance.py

`test_all_differences_are_explained` runs the whole suite (every op both sides have, 25 cases
each, with the simulated mesh on differing rows) and fails on any difference that no entry of
known_differences.json explains, and adds `conformance ...` lines (totals, one per family, counts per
classification) to the end-of-run summary.  The other tests are quick: the machinery itself, the mm
family identical, ctshard's per-op uneven-input mode against DTensor 2.13's registry, and the
known differences well formed (no ctshard_bug, an example case in every `why`).
Environment: CONFORMANCE_CASES_PER_OP (default 25), CONFORMANCE_REPORT (write the JSON report),
CONFORMANCE_JOBS (default 2), CTSHARD_BIN / CTSHARD_BACKEND=cli (see ctshard_side.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

torch = pytest.importorskip("torch")

import ctshard_side  # noqa: E402


needs_ctshard = pytest.mark.skipif(not ctshard_side.available(),
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


@needs_ctshard
def test_uneven_input_modes_follow_dtensor_registration():
    """ctshard's per-op UnevenInputs (`uneven_inputs` in the table JSON) is read off DTensor 2.13's
    registry: a single-dim rule's `allow_uneven_sharding` True -> keep_current, False -> reject;
    an op DTensor 2.13 has only as an op_strategy function -> keep_existing_shards (it follows the
    input without a shardability check), except aten.dot.default, which the reference cases pin
    to reject (ctshard follows the single-dim einsum rule there)."""
    import cases
    import run_conformance
    from dtensor_oracle import propagator, resolve_op

    p = propagator()
    ops, _ = run_conformance.select_ops(ctshard_side.ops(), run_conformance.dtensor_registered_ops(), None, None)
    bad, seen = [], {}
    for op in ops:
        o = resolve_op(op)
        info = p.op_single_dim_strategy_funcs.get(o)
        if info is not None:
            want = "keep_current" if info.allow_uneven_sharding else "reject"
            reg = f"single-dim rule, allow_uneven_sharding={info.allow_uneven_sharding}"
        else:
            assert o in p.op_strategy_funcs, f"{op}: neither a single-dim rule nor an op_strategy in DTensor"
            want = "reject" if op == "aten.dot.default" else "keep_existing_shards"
            reg = "op_strategy function"
        for c in cases.generate(op, 2, 0):  # two calls: the mode must not depend on the case
            got = ctshard_side.ctshard_table(c).get("uneven_inputs")
            seen[got] = seen.get(got, 0) + 1
            if got != want:
                bad.append(f"{c['id']}: DTensor 2.13 {reg} -> expected {want}, ctshard says {got}")
    assert not bad, "\n".join(bad)
    assert set(seen) == {"reject", "keep_current", "keep_existing_shards"}, seen


def test_known_differences_are_well_formed():
    """Every entry has a valid classification and a compilable pattern, none is a ctshard_bug
    (ctshard bugs are fixed, not explained), and every `why` names an example case."""
    import run_conformance

    known = run_conformance.load_known()
    assert known
    for e in known:
        assert e["classification"] != "ctshard_bug", e
        assert re.search(r"#\d+", e["why"]), f"entry without an example case id: {e['op']} {e['kind']}"


# ---------------------------------------------------------------------------------------
# the suite

@needs_ctshard
@pytest.mark.torch_bound  # 300 cases through DTensor's propagation; test_api.py runs them through the extension
def test_all_differences_are_explained(summary):
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
    explained, unexplained = run_conformance.explain(items, run_conformance.load_known())
    for line in run_conformance.summary_lines(res, len(ops), explained, unexplained):
        summary(line)
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
