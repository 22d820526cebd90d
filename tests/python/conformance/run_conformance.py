#!/usr/bin/env python3
"""DTensor (PyTorch 2.13) vs ctshard conformance run.

    python3 tests/python/conformance/run_conformance.py --report /tmp/conformance.json
    python3 tests/python/conformance/run_conformance.py --family einsum,view --cases-per-op 10
    python3 tests/python/conformance/run_conformance.py --op 'aten.mm.default,aten.add.Tensor'
    python3 tests/python/conformance/run_conformance.py --dijkstra --simulate 0

For every op overload that both ctshard (`ctshard ops`) and DTensor (single-dim strategy,
op strategy or rule registries) have, it generates cases (cases.py), asks DTensor
(dtensor_oracle.py) and ctshard (ctshard_side.py), compares (compare.py), prints a per-family
table and writes every difference to the JSON report.  `--dijkstra` also runs DTensor 2.13's
`_dijkstra_expand_single_dim_strategy_to_mesh` (defined but never called by 2.13's propagation)
on every single-dim-rule case and counts how its choice and cost compare with the full expansion.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing as mp
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cases as cases_mod  # noqa: E402
import ctshard_side  # noqa: E402
from compare import compare_case, summary_text  # noqa: E402

# ---------------------------------------------------------------------------------------
# worker side

_oracle = None


_simulate_rows = 0
_dijkstra = False
DIJKSTRA_TIMEOUT_S = 10.0  # per case; the search is stopped at its next popped state


def _worker_init(env: dict, simulate_rows: int = 0, dijkstra: bool = False) -> None:
    global _simulate_rows, _dijkstra
    _simulate_rows = simulate_rows
    _dijkstra = dijkstra
    os.environ.update(env)
    # one thread per worker: the machine has 2 cores and we run 2 workers
    import torch

    torch.set_num_threads(1)
    global _oracle
    from dtensor_oracle import DTensorOracle

    _oracle = DTensorOracle()


def run_one(case: dict) -> dict:
    global _oracle
    if _oracle is None:
        _worker_init({})
    t0 = time.perf_counter()
    dt = _oracle.run(case)
    t1 = time.perf_counter()
    ct, ct_err = None, None
    try:
        ct = ctshard_side.ctshard_table(case)
    except ctshard_side.CtshardError as e:
        ct_err = str(e)
    t2 = time.perf_counter()
    rec = compare_case(case, dt, ct, ct_err)
    rec["time_dtensor_s"] = t1 - t0
    rec["time_ctshard_s"] = t2 - t1
    rec["dtensor_choice"] = dt.get("choice")
    if ct is not None:
        rec["ctshard_choice"] = ctshard_side.chosen(ct)
    if _dijkstra and dt.get("kind") == "single_dim":
        rec["dijkstra"] = dijkstra_probe(case)
    if _simulate_rows and rec["differences"]:
        import simulate

        t3 = time.perf_counter()
        simulate.annotate(rec, case, _simulate_rows)
        rec["time_simulate_s"] = time.perf_counter() - t3
    return rec


def _rel_cmp(a: float, b: float) -> str:
    """'lower' / 'equal' / 'higher': a against b, 1e-9 relative."""
    if a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)):
        return "equal"
    return "lower" if a < b else "higher"


def dijkstra_probe(case: dict) -> dict:
    """DTensor 2.13's `_dijkstra_expand_single_dim_strategy_to_mesh` against the full expansion
    propagation uses (dtensor_oracle.DTensorOracle.dijkstra), reduced to what the summary needs:
    status, reason, same_choice, and the costs of both picks under the full expansion's
    costs (`full_price`) and Dijkstra's own incremental cost (`own_cost`)."""
    from compare import row_key

    r = _oracle.dijkstra(case, DIJKSTRA_TIMEOUT_S)
    out = {"status": r["status"], "reason": r.get("reason"),
           "time_full_s": r.get("time_full_s"), "time_dijkstra_s": r.get("time_dijkstra_s")}
    if r["status"] != "ok":
        return out
    ndim = len(case["mesh"])
    full, dj = r["full"], r["choice"]
    out["full"] = {"out": full["out"], "in": full["in"], "cost": sum(full["cost"])}
    out["choice"] = {"out": dj["out"], "in": dj["in"], "own_cost": sum(dj["cost"])}
    out["same_choice"] = row_key(full, ndim) == row_key(dj, ndim)
    price = [sum(x["cost"]) for x in r["full_rows"] if row_key(x, ndim) == row_key(dj, ndim)]
    out["choice"]["full_price"] = min(price) if price else None
    out["full_price_vs_full_choice"] = (_rel_cmp(min(price), sum(full["cost"])) if price
                                        else "not_a_row")
    out["own_cost_vs_full_choice"] = _rel_cmp(sum(dj["cost"]), sum(full["cost"]))
    return out


def dijkstra_summary(records: list[dict]) -> dict:
    """Counts over the records that carry a `dijkstra` probe."""
    probes = [(r, r["dijkstra"]) for r in records if r.get("dijkstra")]
    s: dict = {"cases": len(probes), "status": defaultdict(int), "none_reasons": defaultdict(int),
               "error_reasons": defaultdict(int), "timeout_ops": defaultdict(int), "same_choice": 0, "different_choice": 0,
               "different_choice_full_price": defaultdict(int),
               "own_cost_vs_full_choice": defaultdict(int),
               "different_by_op": defaultdict(int), "different": [], "excess_us": [],
               "time_full_s": 0.0, "time_dijkstra_s": 0.0, "max_time_dijkstra_s": 0.0}
    t_full = sorted(d["time_full_s"] for _, d in probes if d.get("time_full_s") is not None)
    t_dj = sorted(d["time_dijkstra_s"] for _, d in probes if d.get("time_dijkstra_s") is not None)
    s["median_time_full_ms"] = round(1000 * t_full[len(t_full) // 2], 2) if t_full else None
    s["median_time_dijkstra_ms"] = round(1000 * t_dj[len(t_dj) // 2], 2) if t_dj else None
    for rec, d in probes:
        s["status"][d["status"]] += 1
        s["time_full_s"] += d.get("time_full_s") or 0.0
        s["time_dijkstra_s"] += d.get("time_dijkstra_s") or 0.0
        s["max_time_dijkstra_s"] = max(s["max_time_dijkstra_s"], d.get("time_dijkstra_s") or 0.0)
        if d["status"] == "none":
            s["none_reasons"][d["reason"]] += 1
        elif d["status"] == "error":
            s["error_reasons"][(d.get("reason") or "")[:90]] += 1
        elif d["status"] == "timeout":
            s["timeout_ops"][rec["op"]] += 1
        if d["status"] != "ok":
            continue
        s["own_cost_vs_full_choice"][d["own_cost_vs_full_choice"]] += 1
        if d["same_choice"]:
            s["same_choice"] += 1
            continue
        s["different_choice"] += 1
        s["different_choice_full_price"][d["full_price_vs_full_choice"]] += 1
        s["different_by_op"][rec["op"]] += 1
        fp = d["choice"].get("full_price")
        if d["full_price_vs_full_choice"] == "higher" and fp is not None:
            s["excess_us"].append(fp - d["full"]["cost"])
        s["different"].append({"id": rec["id"], "mesh": rec["case"]["mesh"] if rec.get("case") else None,
                               "inputs": [t["spec"] for t in rec["case"]["tensors"]] if rec.get("case") else None,
                               "full_price_vs_full_choice": d["full_price_vs_full_choice"],
                               "full": d["full"], "dijkstra": d["choice"]})
    ex = sorted(s.pop("excess_us"))
    s["excess_us"] = ({"n": len(ex), "sum": round(sum(ex), 3), "median": round(ex[len(ex) // 2], 3),
                       "max": round(ex[-1], 3)} if ex else {"n": 0})
    for k in ("status", "none_reasons", "error_reasons", "timeout_ops", "different_choice_full_price",
              "own_cost_vs_full_choice", "different_by_op"):
        s[k] = dict(sorted(s[k].items()))
    return s


def print_dijkstra(s: dict, out=sys.stdout) -> None:
    ok = s["status"].get("ok", 0)
    print(f"\nDTensor 2.13 _dijkstra_expand_single_dim_strategy_to_mesh on {s['cases']} single-dim-rule "
          f"cases (not on 2.13's propagation path; compared with its full expansion):", file=out)
    print(f"  returned a strategy: {ok}; None (caller would fall back to full expansion): "
          f"{s['status'].get('none', 0)} {s['none_reasons']}; raised: {s['status'].get('error', 0)} "
          f"{s['error_reasons']}; stopped after {DIJKSTRA_TIMEOUT_S:g} s: {s['status'].get('timeout', 0)} "
          f"{s['timeout_ops']}", file=out)
    print(f"  same choice (output + input placements) as full expansion: {s['same_choice']}/{ok}; "
          f"different: {s['different_choice']}/{ok}", file=out)
    print(f"  different choices priced by full expansion's costs, against full expansion's choice: "
          f"{s['different_choice_full_price']} (equal = a tie the two break differently; "
          f"higher: Dijkstra pays more by {s['excess_us']} us)", file=out)
    print(f"  Dijkstra's own (incremental) cost against full expansion's choice cost: "
          f"{s['own_cost_vs_full_choice']}", file=out)
    print(f"  time: full expansion + selection {s['time_full_s']:.1f} s, Dijkstra {s['time_dijkstra_s']:.1f} s "
          f"(slowest case {s['max_time_dijkstra_s']:.2f} s); median per case {s['median_time_full_ms']} ms vs "
          f"{s['median_time_dijkstra_ms']} ms", file=out)
    if s["different_by_op"]:
        print(f"  different choices by op: {s['different_by_op']}", file=out)


def run_chunk(chunk: list[dict]) -> list[dict]:
    return [run_one(c) for c in chunk]


# ---------------------------------------------------------------------------------------
# op selection

def dtensor_registered_ops() -> dict[str, str]:
    from dtensor_oracle import registered_ops

    return registered_ops()


def select_ops(ct_ops: list[str], dt_ops: dict[str, str], op_filter: str | None,
               family_filter: str | None) -> tuple[list[str], dict]:
    both = [o for o in ct_ops if o in dt_ops]
    info = {"ctshard_only": sorted(o for o in ct_ops if o not in dt_ops),
            "no_generator": sorted(o for o in both if o not in cases_mod.FAMILIES)}
    ops = [o for o in both if o in cases_mod.FAMILIES]
    if op_filter:
        pats = [p.strip() for p in op_filter.split(",") if p.strip()]
        ops = [o for o in ops if any(fnmatch.fnmatch(o, p) or p == o for p in pats)]
    if family_filter:
        fams = {f.strip() for f in family_filter.split(",")}
        ops = [o for o in ops if cases_mod.family_of(o) in fams]
    return ops, info


# ---------------------------------------------------------------------------------------
# main run

def run(ops: list[str], cases_per_op: int, seed: int, jobs: int, progress: bool = True,
        simulate_rows: int = 0, dijkstra: bool = False, rule_set: str = "ctshard") -> dict:
    """Every case of `ops` through DTensor and ctshard; `rule_set` is ctshard's
    (``ctshard.table(rule_set=...)``: "ctshard", the default, or "dtensor")."""
    # ctshard_side reads CTSHARD_RULE_SET, in this process and the workers; restored afterwards
    # so that a dtensor-mode run leaves later callers (other tests) on their own default
    before = os.environ.get("CTSHARD_RULE_SET")
    os.environ["CTSHARD_RULE_SET"] = rule_set
    try:
        return _run(ops, cases_per_op, seed, jobs, progress, simulate_rows, dijkstra, rule_set)
    finally:
        if before is None:
            os.environ.pop("CTSHARD_RULE_SET", None)
        else:
            os.environ["CTSHARD_RULE_SET"] = before


def _run(ops: list[str], cases_per_op: int, seed: int, jobs: int, progress: bool, simulate_rows: int, dijkstra: bool,
         rule_set: str) -> dict:
    t_start = time.perf_counter()
    feats = ctshard_side.features()
    all_cases, skipped = [], []
    need_counts: dict[str, int] = defaultdict(int)
    for op in ops:
        for c in cases_mod.generate(op, cases_per_op, seed):
            for n in ctshard_side.needs(c):
                need_counts[n] += 1
            miss = ctshard_side.missing_features(c)
            if miss:
                skipped.append({"id": c["id"], "op": op, "family": c["family"], "needs": miss, "case": c})
            else:
                all_cases.append(c)
    # group by world size so each worker re-initialises its process group rarely
    all_cases.sort(key=lambda c: (len(c["mesh"]) > 1 and c["mesh"] != [2, 2], c["op"]))
    world = lambda c: 1 if c["mesh"] in ([4], [2, 2]) else 2  # noqa: E731
    chunks: list[list[dict]] = []
    cur: list[dict] = []
    # the 8-device meshes first: their cases cost the most (S^3 expansions), so the pool's tail
    # is made of cheap chunks
    for c in sorted(all_cases, key=lambda c: (-world(c), c["id"])):
        if cur and (len(cur) >= 16 or world(cur[0]) != world(c)):
            chunks.append(cur)
            cur = []
        cur.append(c)
    if cur:
        chunks.append(cur)
    records: list[dict] = []
    env = {k: v for k, v in os.environ.items() if k.startswith("CTSHARD_")}
    # all workers use the same copy of the ctshard binary
    if ctshard_side.backend_name() == "cli":
        env["CTSHARD_BIN"] = ctshard_side.binary()
    done = 0
    if jobs <= 1:
        _worker_init(env, simulate_rows, dijkstra)
        for ch in chunks:
            records.extend(run_chunk(ch))
            done += len(ch)
            if progress:
                print(f"\r{done}/{len(all_cases)}", end="", file=sys.stderr, flush=True)
    else:
        ctx = mp.get_context("spawn")
        with ctx.Pool(jobs, initializer=_worker_init, initargs=(env, simulate_rows, dijkstra)) as pool:
            for res in pool.imap_unordered(run_chunk, chunks):
                records.extend(res)
                done += len(res)
                if progress:
                    print(f"\r{done}/{len(all_cases)}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    case_by_id = {c["id"]: c for c in all_cases}
    records.sort(key=lambda r: (r["family"] or "", r["op"], int(r["id"].rsplit("#", 1)[1])))
    for r in records:
        r["case"] = case_by_id[r["id"]]
    return {"records": records, "skipped": skipped, "features": feats, "need_counts": dict(need_counts),
            "elapsed_s": time.perf_counter() - t_start, "rule_set": rule_set}


def family_table(records: list[dict], skipped: list[dict]) -> list[dict]:
    fam: dict[str, dict] = defaultdict(lambda: {"ops": set(), "cases": 0, "skipped": 0,
                                                "strat_cmp": 0, "strat_same": 0, "strat_subset": 0,
                                                "choice_cmp": 0, "choice_same": 0,
                                                "dtensor_error": 0, "ctshard_error": 0,
                                                "time_dtensor_s": 0.0, "time_ctshard_s": 0.0,
                                                "time_simulate_s": 0.0})
    for r in records:
        f = fam[r["family"]]
        f["ops"].add(r["op"])
        f["cases"] += 1
        if r["strategies_identical"] is not None:
            f["strat_cmp"] += 1
            f["strat_same"] += bool(r["strategies_identical"])
            f["strat_subset"] += bool(r.get("strategies_subset"))
        if r["choice_identical"] is not None:
            f["choice_cmp"] += 1
            f["choice_same"] += bool(r["choice_identical"])
        kinds = {d["kind"] for d in r["differences"]}
        f["dtensor_error"] += "dtensor_error" in kinds
        f["ctshard_error"] += "ctshard_error" in kinds
        f["time_dtensor_s"] += r.get("time_dtensor_s", 0.0)
        f["time_ctshard_s"] += r.get("time_ctshard_s", 0.0)
        f["time_simulate_s"] += r.get("time_simulate_s", 0.0)
    for s in skipped:
        f = fam[s["family"]]
        f["ops"].add(s["op"])
        f["skipped"] += 1
    rows = []
    for name in sorted(fam):
        f = fam[name]
        rows.append({"family": name, "ops": len(f["ops"]), "cases": f["cases"], "skipped": f["skipped"],
                     "strategies_compared": f["strat_cmp"], "strategies_identical": f["strat_same"],
                     "strategies_subset": f["strat_subset"],
                     "choices_compared": f["choice_cmp"], "choices_identical": f["choice_same"],
                     "dtensor_errors": f["dtensor_error"], "ctshard_errors": f["ctshard_error"],
                     "time_dtensor_s": round(f["time_dtensor_s"], 2),
                     "time_ctshard_s": round(f["time_ctshard_s"], 2),
                     "time_simulate_s": round(f["time_simulate_s"], 2)})
    return rows


def print_table(rows: list[dict], out=sys.stdout) -> None:
    hdr = (f"{'family':<18} {'ops':>4} {'cases':>6} {'skip':>5} {'strat same':>12} {'dt<=ct':>6} "
           f"{'choice same':>12} {'dt err':>6} {'ct err':>6} {'t_dt s':>7} {'t_ct s':>7} {'t_sim s':>7}")
    print(hdr, file=out)
    print("-" * len(hdr), file=out)
    tot = defaultdict(float)
    for r in rows:
        print(f"{r['family']:<18} {r['ops']:>4} {r['cases']:>6} {r['skipped']:>5} "
              f"{r['strategies_identical']:>5}/{r['strategies_compared']:<6} {r['strategies_subset']:>6} "
              f"{r['choices_identical']:>5}/{r['choices_compared']:<6} "
              f"{r['dtensor_errors']:>6} {r['ctshard_errors']:>6} "
              f"{r['time_dtensor_s']:>7.1f} {r['time_ctshard_s']:>7.1f} {r['time_simulate_s']:>7.1f}", file=out)
        for k in ("ops", "cases", "skipped", "strategies_identical", "strategies_compared", "strategies_subset",
                  "choices_identical", "choices_compared", "dtensor_errors", "ctshard_errors",
                  "time_dtensor_s", "time_ctshard_s", "time_simulate_s"):
            tot[k] += r[k]
    print("-" * len(hdr), file=out)
    print(f"{'total':<18} {int(tot['ops']):>4} {int(tot['cases']):>6} {int(tot['skipped']):>5} "
          f"{int(tot['strategies_identical']):>5}/{int(tot['strategies_compared']):<6} {int(tot['strategies_subset']):>6} "
          f"{int(tot['choices_identical']):>5}/{int(tot['choices_compared']):<6} "
          f"{int(tot['dtensor_errors']):>6} {int(tot['ctshard_errors']):>6} "
          f"{tot['time_dtensor_s']:>7.1f} {tot['time_ctshard_s']:>7.1f} {tot['time_simulate_s']:>7.1f}", file=out)


def difference_items(records: list[dict]) -> list[dict]:
    """One item per (case, difference), with the summary text used for known-difference matching."""
    items = []
    for r in records:
        for d in r["differences"]:
            it = {"id": r["id"], "op": r["op"], "family": r["family"], "kind": d["kind"],
                  "summary": summary_text(d)}
            sim = d.get("sim")
            if isinstance(sim, list):
                it["sim_rows"] = sorted({x["verdict"] for x in sim})
            elif isinstance(sim, dict):
                if "dtensor" in sim:
                    it["sim_dtensor"] = sim["dtensor"]
                it["sim_ctshard"] = sim.get("ctshard")
            items.append(it)
    return items


# ---------------------------------------------------------------------------------------
# known differences

# ctshard_bug must not remain in known_differences.json (test_conformance checks it): such a
# difference is reported and fixed, not explained
CLASSIFICATIONS = {"ctshard_bug", "dtensor_unsound", "dtensor_search", "dtensor_version",
                   "dtensor_cost", "dtensor_refuses", "ctshard_extension", "empty_shards_policy",
                   "ctshard_limitation"}


KNOWN_FILES = {"ctshard": "known_differences.json", "dtensor": "known_differences_dtensor.json"}


def load_known(path: Path | None = None, rule_set: str = "ctshard") -> list[dict]:
    """The explained differences of a rule set's run: known_differences.json for ctshard's rules,
    known_differences_dtensor.json for the dtensor rule set (what remains when ctshard gives
    DTensor 2.13's rows)."""
    path = path or HERE / KNOWN_FILES[rule_set]
    entries = json.loads(Path(path).read_text())["entries"]
    for e in entries:
        if e.get("classification") not in CLASSIFICATIONS:
            raise ValueError(f"known difference {e} has no valid classification")
        for k in ("op", "kind", "pattern", "why"):
            if k not in e:
                raise ValueError(f"known difference {e} lacks '{k}'")
        re.compile(e["pattern"])
    return entries


def _op_globs(e: dict) -> list[str]:
    """An entry's `op`: one glob or a list of globs."""
    return [e["op"]] if isinstance(e["op"], str) else list(e["op"])


def _sim_ok(want: str | None, got) -> bool:
    """`want`: a verdict ("sound", "unsound", "local_error") or "not_sound" (unsound or
    local_error); `got`: one verdict or a list of them (all must satisfy)."""
    if want is None:
        return True
    if got is None:
        return False
    gots = got if isinstance(got, list) else [got]
    if not gots:
        return False
    if want == "not_sound":
        return all(g in ("unsound", "local_error") for g in gots)
    return all(g == want for g in gots)


def entry_matches(e: dict, item: dict) -> bool:
    if item["kind"] != e["kind"]:
        return False
    if not any(fnmatch.fnmatchcase(item["op"], g) for g in _op_globs(e)):
        return False
    if not re.search(e["pattern"], item["summary"]):
        return False
    return (_sim_ok(e.get("sim_rows"), item.get("sim_rows"))
            and _sim_ok(e.get("sim_dtensor"), item.get("sim_dtensor"))
            and _sim_ok(e.get("sim_ctshard"), item.get("sim_ctshard")))


def explain(items: list[dict], known: list[dict]) -> tuple[list[dict], list[dict]]:
    """(explained items, each with its entry's classification, unexplained items)."""
    done, left = [], []
    for it in items:
        e = next((e for e in known if entry_matches(e, it)), None)
        if e is None:
            left.append(it)
        else:
            done.append({**it, "classification": e["classification"], "why": e["why"]})
    return done, left


def summary_lines(res: dict, n_ops: int, explained: list[dict], unexplained: list[dict], label: str = "conformance") -> list[str]:
    """The lines the test command repeats at the end of the run (they start with `label`:
    "conformance" for ctshard's rule set, "conformance(dtensor)" for the dtensor rule set)."""
    rows = family_table(res["records"], res["skipped"])
    tot = {k: sum(r[k] for r in rows) for k in ("cases", "strategies_identical", "strategies_compared",
                                                  "strategies_subset", "choices_identical", "choices_compared")}
    lines = [f"{label}: {n_ops} ops, {tot['cases']} cases, strategy sets identical "
             f"{tot['strategies_identical']}/{tot['strategies_compared']} (DTensor rows within ctshard's "
             f"{tot['strategies_subset']}), choices identical {tot['choices_identical']}/{tot['choices_compared']}, "
             f"differences {len(explained) + len(unexplained)}, unexplained {len(unexplained)}"]
    for r in rows:
        lines.append(f"{label}   {r['family']:<18} {r['ops']:>3} ops {r['cases']:>4} cases  strategies "
                     f"identical {r['strategies_identical']:>4}/{r['strategies_compared']:<4} dt<=ct "
                     f"{r['strategies_subset']:>4}  choices identical {r['choices_identical']:>4}/{r['choices_compared']}")
    by = {}
    for it in explained:
        by[it["classification"]] = by.get(it["classification"], 0) + 1
    lines.append(f"{label}: explained " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    return lines


def build_report(result: dict, ops: list[str], info: dict, args_ns) -> dict:
    import torch

    rows = family_table(result["records"], result["skipped"])
    per_op = defaultdict(lambda: defaultdict(int))
    for r in result["records"]:
        p = per_op[r["op"]]
        p["cases"] += 1
        p["strategies_identical"] += bool(r["strategies_identical"])
        p["choices_identical"] += bool(r["choice_identical"])
        p["strategies_subset"] += bool(r.get("strategies_subset"))
        for d in r["differences"]:
            p[d["kind"]] += 1
    for s in result["skipped"]:
        per_op[s["op"]]["skipped"] += 1
    recs_with_diffs = [r for r in result["records"] if r["differences"]]
    diffs = difference_items(result["records"])
    explained, unexplained = explain(diffs, load_known(rule_set=result.get("rule_set", "ctshard")))
    cls = {it["id"] + "|" + it["kind"] + "|" + it["summary"]: it for it in explained}
    for it in diffs:
        hit = cls.get(it["id"] + "|" + it["kind"] + "|" + it["summary"])
        if hit:
            it["classification"] = hit["classification"]
    by_class = defaultdict(int)
    for it in explained:
        by_class[it["classification"]] += 1
    return {
        "meta": {"torch": torch.__version__, "ctshard_backend": ctshard_side.backend_name(),
                 "ctshard_features": result["features"],
                 "cases_needing_feature": result.get("need_counts", {}),
                 "cases_per_op": args_ns.cases_per_op, "rule_set": result.get("rule_set", "ctshard"),
                 "seed": args_ns.seed, "meshes": cases_mod.MESHES,
                 "devices_per_host": ctshard_side.DEVICES_PER_HOST,
                 "elapsed_s": round(result["elapsed_s"], 1)},
        "ops_compared": ops,
        "ops_ctshard_only": info["ctshard_only"],
        "ops_without_generator": info["no_generator"],
        "families": rows,
        "per_op": {k: dict(v) for k, v in sorted(per_op.items())},
        "skipped_needs_feature": [{"id": s["id"], "needs": s["needs"], "case": s["case"]} for s in result["skipped"]],
        "differences": diffs,
        "unexplained": len(unexplained),
        "explained_by_classification": dict(sorted(by_class.items())),
        "records": recs_with_diffs,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", help="comma-separated op names or globs (aten.mm.default, 'aten.add.*')")
    ap.add_argument("--family", help="comma-separated families (einsum, pointwise_binary, view, ...)")
    ap.add_argument("--cases-per-op", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--list-ops", action="store_true", help="print the compared ops and exit")
    ap.add_argument("--simulate", type=int, default=4, metavar="N",
                    help="run the simulated mesh (simulate.py) on up to N differing rows per "
                         "difference and on both choices of a choice difference (default 4; 0: "
                         "off, and then the sim-gated entries of known_differences.json explain "
                         "nothing)")
    ap.add_argument("--dijkstra", action="store_true",
                    help="also run DTensor 2.13's _dijkstra_expand_single_dim_strategy_to_mesh (defined, "
                         "never called by 2.13's propagation) on every single-dim-rule case and count "
                         "how its choice and cost compare with the full expansion's")
    ap.add_argument("--rule-set", choices=("ctshard", "dtensor"), default="ctshard",
                    help="ctshard's rule set: ctshard (default: its own rules; explained by known_differences.json) "
                         "or dtensor (DTensor 2.13's rows; explained by known_differences_dtensor.json)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)

    ct_ops = ctshard_side.ops()
    dt_ops = dtensor_registered_ops()
    ops, info = select_ops(ct_ops, dt_ops, a.op, a.family)
    if a.list_ops:
        for o in ops:
            print(f"{cases_mod.family_of(o):<18} {dt_ops[o]:<12} {o}")
        print(f"# ctshard-only (no DTensor registration): {', '.join(info['ctshard_only'])}")
        return 0
    result = run(ops, a.cases_per_op, a.seed, a.jobs, progress=not a.quiet, simulate_rows=a.simulate,
                 dijkstra=a.dijkstra, rule_set=a.rule_set)
    report = build_report(result, ops, info, a)
    print_table(report["families"])
    if a.dijkstra:
        report["dijkstra"] = dijkstra_summary(result["records"])
        print_dijkstra(report["dijkstra"])
    n_skip = len(result["skipped"])
    both = sum(1 for r in result["records"] if r.get("both_refuse"))
    print(f"\nrule set {a.rule_set}: {both} cases refused by both DTensor and ctshard (counted identical)")
    print(f"{len(ops)} ops, {len(result['records'])} cases compared, {n_skip} skipped until ctshard "
          f"accepts them (features {result['features']}; cases needing them: {result['need_counts']}), "
          f"{result['elapsed_s']:.1f} s (backend {ctshard_side.backend_name()})")
    kinds = defaultdict(int)
    for d in report["differences"]:
        kinds[d["kind"]] += 1
    print("differences by kind: " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    print(f"explained by known_differences.json: {sum(report['explained_by_classification'].values())} "
          f"{report['explained_by_classification']}; unexplained: {report['unexplained']}")
    if a.report:
        Path(a.report).write_text(json.dumps(report, indent=1, default=str))
        print(f"report: {a.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
