"""The dtensor rule set (``rule_set="dtensor"``) against DTensor 2.13's own strategy tables.

    cd tests/python/conformance && python3 -m pytest -q test_dtensor_rule_set.py
    CONFORMANCE_REPORT_DTENSOR=/tmp/conformance_dtensor.json python3 -m pytest -q test_dtensor_rule_set.py

`test_dtensor_rule_set_has_no_unexplained_difference` runs every case of the suite (every op both
sides have, 25 cases each) with ctshard's dtensor rule set and fails on any difference that
known_differences_dtensor.json does not explain; it adds `conformance(dtensor) ...` lines to the
end-of-run summary. The other tests: R16 (eval batch norm) on the simulated mesh under both rule
sets, every single-dim-rule op of DTensor 2.13 identical, and the known differences well formed.
Environment as test_conformance.py (CONFORMANCE_CASES_PER_OP, CONFORMANCE_JOBS).
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
import run_conformance  # noqa: E402

needs_ctshard = pytest.mark.skipif(not ctshard_side.available(),
                                   reason="ctshard (Python package or build/examples/ctshard) not available")


def _r16_case(mesh, spec) -> dict:
    """R16's eval batch norm, small enough to simulate: x [4, 6, 3, 3], the four channel vectors."""
    c = 6
    tensors = [{"shape": [4, c, 3, 3], "spec": spec}] + [{"shape": [c], "spec": "R" * len(mesh)} for _ in range(4)]
    return {"op": "aten._native_batch_norm_legit_no_training.default", "mesh": mesh, "tensors": tensors,
            "args": ["$0", "$1", "$2", "$3", "$4", 0.1, 1e-5], "kwargs": {}}


@needs_ctshard
def test_r16_rows_on_the_simulated_mesh():
    """R16: DTensor's channel rows (the dtensor rule set) and ctshard's batch / spatial rows (its
    default rules) are all sound on the simulated mesh; the dtensor rule set's choice for a
    batch-sharded input is DTensor's own."""
    import simulate
    from dtensor_oracle import run_case

    case = _r16_case([2, 2], "S(0)R")
    for rule_set in ("ctshard", "dtensor"):
        t = ctshard_side.ctshard_table(case, rule_set=rule_set)
        assert t["rule_set"] == rule_set
        for s in t["strategies"]:
            v = simulate.check_row(case, list(s["in"]), s["out"])
            assert v["verdict"] == "sound", (rule_set, s, v)
    dt = ctshard_side.ctshard_table(case, rule_set="dtensor")
    ours = ctshard_side.ctshard_table(case, rule_set="ctshard")
    assert len(dt["strategies"]) == 4 and len(ours["strategies"]) > 4
    oracle = run_case(case)
    mine = ctshard_side.chosen(dt)
    assert mine["in"] == oracle["choice"]["in"] and mine["out"] == oracle["choice"]["out"]
    assert ctshard_side.chosen(ours)["in"][0] == "S(0)R"  # ctshard's sound batch row, free


@needs_ctshard
def test_dtensor_single_dim_rule_ops_are_identical():
    """Every op DTensor 2.13 registers as a single-dim rule: under the dtensor rule set the strategy
    set of every generated case equals DTensor's, row for row and cost for cost (8 cases per op)."""
    from dtensor_oracle import propagator, resolve_op

    p = propagator()
    ops, _ = run_conformance.select_ops(ctshard_side.ops(), run_conformance.dtensor_registered_ops(), None, None)
    single = [o for o in ops if resolve_op(o) in p.op_single_dim_strategy_funcs
              and o not in ("aten._to_copy.default",)]  # Partial(product): no such placement in ctshard
    assert len(single) >= 100
    res = run_conformance.run(single, 8, 0, jobs=int(os.environ.get("CONFORMANCE_JOBS", "2")), progress=False,
                              rule_set="dtensor")
    bad = [(r["id"], [d["kind"] for d in r["differences"]]) for r in res["records"]
           if any(d["kind"] in ("rows_missing_in_ctshard", "rows_extra_in_ctshard") for d in r["differences"])]
    assert not bad, json.dumps(bad, indent=1)[:4000]


def test_known_dtensor_differences_are_well_formed():
    known = run_conformance.load_known(rule_set="dtensor")
    assert known
    for e in known:
        assert e["classification"] != "ctshard_bug", e
        assert re.search(r"#\d+", e["why"]), f"entry without an example case id: {e['op']} {e['kind']}"


@needs_ctshard
@pytest.mark.torch_bound  # every case through DTensor's propagation
def test_dtensor_rule_set_has_no_unexplained_difference(summary):
    n = int(os.environ.get("CONFORMANCE_CASES_PER_OP", "25"))
    jobs = int(os.environ.get("CONFORMANCE_JOBS", str(min(2, os.cpu_count() or 1))))
    ops, info = run_conformance.select_ops(ctshard_side.ops(), run_conformance.dtensor_registered_ops(), None, None)
    assert len(ops) >= 180, f"only {len(ops)} ops compared"
    res = run_conformance.run(ops, n, 0, jobs, progress=False, simulate_rows=4, rule_set="dtensor")
    items = run_conformance.difference_items(res["records"])
    explained, unexplained = run_conformance.explain(items, run_conformance.load_known(rule_set="dtensor"))
    for line in run_conformance.summary_lines(res, len(ops), explained, unexplained, label="conformance(dtensor)"):
        summary(line)
    both = sum(1 for r in res["records"] if r.get("both_refuse"))
    summary(f"conformance(dtensor): {both} cases refused by both DTensor and ctshard (DTensor's errors ported)")
    report_path = os.environ.get("CONFORMANCE_REPORT_DTENSOR")
    if report_path:
        class _A:
            cases_per_op = n
            seed = 0
        Path(report_path).write_text(json.dumps(run_conformance.build_report(res, ops, info, _A), indent=1, default=str))
    if unexplained:
        by = {}
        for it in unexplained:
            by.setdefault((it["op"], it["kind"]), []).append(it)
        lines = [f"{len(unexplained)} unexplained differences of the dtensor rule set in {len(by)} (op, kind) groups "
                 f"(add an entry to known_differences_dtensor.json once the cause is known):"]
        for (op, kind), its in sorted(by.items()):
            lines.append(f"  {op} {kind} x{len(its)}: {its[0]['id']}: {its[0]['summary'][:300]}")
        pytest.fail("\n".join(lines[:200]), pytrace=False)
