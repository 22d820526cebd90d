"""Whole-graph sharding problems (IOPDDL JSON) solved side by side by an autoparallel-style ILP
(PuLP, solved by CBC and by HiGHS) and by `ctshard iopddl`, one thread each, one time limit.

    python3 benchmarks/global/ilp_side_by_side.py PROBLEM.json[.gz] ... --time-limit-s 60 \\
        --out results.json --markdown table.md [--tool build/examples/ctshard] [--max-ilp-columns N]

The ILP (build_model): a binary x[u,i] per node u and allowed strategy i (cost < 10^18; forbidden
strategies get no column), one-hot per node; per edge (parallel edges merged, [u, u] folded into
u's costs) a continuous y[e,i,j] in [0, 1] per allowed pair, linearised in the *marginal* (local
polytope) form sum_j y[e,i,j] = x[u,i] and sum_i y[e,i,j] = x[v,j] -- tighter than XLA /
autoparallel's y >= x[u,i] + x[v,j] - 1 -- forbidden pairs (cost >= 10^18) get no column; an edge
whose allowed pairs all cost the same and none is forbidden adds that constant instead. Usage: at
every time step t, sum of the usages of the nodes whose [start, end) contains t <= usage_limit,
one row per maximal set of live nodes (every distinct set when a usage is negative); rows that no
choice can break are left out. Objective: node costs + pair costs + constant.

Each solver runs in its own worker process (`--worker cbc|highs FILE`), so its peak RSS is its own:
CBC is PuLP's bundled cbc binary (run with `-preprocess off`: CBC 2.10.3's preprocessing wrongly
declares IOPDDL-B infeasible), threads 1, ratio gap 0; HiGHS is highspy through PuLP's HiGHS API,
threads 1, mip_rel_gap 0. ctshard is `ctshard iopddl FILE --time-limit-s S --json`. Every
solution is priced and checked against the instance (evaluate) by this script.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INF = 10**18


def load(path: str | Path) -> dict:
    """The `problem` object of an IOPDDL file (.json or .json.gz)."""
    p = str(path)
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        return json.load(f)["problem"]


def live_sets(intervals: list, usages: list) -> list[list[int]]:
    """The sets of nodes live together at some time step that the limit must hold on: the maximal
    ones (the set at each start time unless no interval ends before the next start), or every
    distinct set when some usage is negative."""
    negative = any(x < 0 for row in usages for x in row)
    nodes = [u for u, (s, e) in enumerate(intervals) if s < e]
    times = sorted({intervals[u][0] for u in nodes} | ({intervals[u][1] for u in nodes} if negative else set()))
    out, prev = [], None
    for k, t in enumerate(times):
        live = [u for u in nodes if intervals[u][0] <= t < intervals[u][1]]
        if not live:
            continue
        if not negative and k + 1 < len(times):
            nxt = times[k + 1]
            if all(intervals[u][1] > nxt for u in live):  # a subset of the next start's set
                continue
        if live != prev:
            out.append(live)
        prev = live
    return out


def merged_edges(prob: dict) -> tuple[list[list[int]], dict]:
    """Node costs with [u, u] edges folded in, and {(u, v): flat |S_u| x |S_v| costs} with u < v
    and parallel edges summed (forbidden stays forbidden)."""
    costs = [list(c) for c in prob["nodes"]["costs"]]
    edges: dict = {}
    for (u, v), m in zip(prob["edges"]["nodes"], prob["edges"]["costs"]):
        su, sv = len(costs[u]), len(costs[v])
        if u == v:
            for a in range(su):
                costs[u][a] = min(INF, costs[u][a] + m[a * sv + a])
            continue
        if u > v:
            m = [m[a * sv + b] for b in range(sv) for a in range(su)]
            u, v = v, u
        if (u, v) in edges:
            old = edges[(u, v)]
            edges[(u, v)] = [min(INF, x + y) for x, y in zip(old, m)]
        else:
            edges[(u, v)] = list(m)
    return costs, edges


def model_size(prob: dict) -> int:
    """The number of columns build_model would create (x plus y), without building it."""
    costs, edges = merged_edges(prob)
    ok = [[a for a, c in enumerate(row) if c < INF] for row in costs]
    n = sum(len(a) for a in ok)
    for (u, v), m in edges.items():
        sv = len(costs[v])
        n += sum(1 for a in ok[u] for b in ok[v] if m[a * sv + b] < INF)
    return n


def build_model(prob: dict):
    """The PuLP model (see the module comment); returns (model, x: {u: {i: var}}, stats)."""
    import pulp

    costs, edges = merged_edges(prob)
    lp = pulp.LpProblem(prob.get("name", "iopddl") or "iopddl", pulp.LpMinimize)
    ok = [[a for a, c in enumerate(row) if c < INF] for row in costs]
    if any(not a for a in ok):
        raise ValueError(f"node {next(u for u, a in enumerate(ok) if not a)} has no allowed strategy")
    x = {u: {a: pulp.LpVariable(f"x_{u}_{a}", cat=pulp.LpBinary) for a in ok[u]} for u in range(len(costs))}
    terms, constant, ny, const_edges = [], 0, 0, 0
    for u, xs in x.items():
        lp += pulp.lpSum(xs.values()) == 1, f"onehot_{u}"
        terms += [(v, costs[u][a]) for a, v in xs.items() if costs[u][a] != 0]
    for (u, v), m in edges.items():
        sv = len(costs[v])
        pairs = [(a, b) for a in ok[u] for b in ok[v] if m[a * sv + b] < INF]
        vals = {m[a * sv + b] for a, b in pairs}
        if len(pairs) == len(ok[u]) * len(ok[v]) and len(vals) == 1:
            constant += vals.pop()
            const_edges += 1
            continue
        y = {(a, b): pulp.LpVariable(f"y_{u}_{v}_{a}_{b}", lowBound=0, upBound=1) for a, b in pairs}
        ny += len(y)
        for a in ok[u]:
            lp += pulp.lpSum(y[a, b] for b in ok[v] if (a, b) in y) == x[u][a], f"mu_{u}_{v}_{a}"
        for b in ok[v]:
            lp += pulp.lpSum(y[a, b] for a in ok[u] if (a, b) in y) == x[v][b], f"mv_{u}_{v}_{b}"
        terms += [(var, m[a * sv + b]) for (a, b), var in y.items() if m[a * sv + b] != 0]
    limit, usages, nlim = prob.get("usage_limit"), prob["nodes"].get("usages"), 0
    if limit is not None and usages:
        for k, live in enumerate(live_sets(prob["nodes"]["intervals"], usages)):
            if sum(max(usages[u][a] for a in ok[u]) for u in live) <= limit:
                continue  # no choice breaks it
            lp += pulp.lpSum(usages[u][a] * x[u][a] for u in live for a in ok[u] if usages[u][a] != 0) <= limit, f"usage_{k}"
            nlim += 1
    lp += pulp.LpAffineExpression(terms) + constant
    stats = {"x_columns": sum(len(a) for a in ok), "y_columns": ny, "constant_edges": const_edges, "usage_rows": nlim,
             "rows": len(lp._constraints), "constant": constant}
    return lp, x, stats


def evaluate(prob: dict, strategies: list[int]) -> tuple[int, bool]:
    """The cost of one strategy per node and whether it is feasible (no forbidden cost, every
    time step within the usage limit)."""
    n = prob["nodes"]
    total = sum(n["costs"][u][a] for u, a in enumerate(strategies))
    for (u, v), m in zip(prob["edges"]["nodes"], prob["edges"]["costs"]):
        total += m[strategies[u] * len(n["costs"][v]) + strategies[v]]
    ok = total < INF and all(n["costs"][u][a] < INF for u, a in enumerate(strategies))
    limit = prob.get("usage_limit")
    if limit is not None and n.get("usages"):
        for live in live_sets(n["intervals"], n["usages"]):
            ok = ok and sum(n["usages"][u][strategies[u]] for u in live) <= limit
    return total, ok


def decode(x: dict) -> list[int]:
    return [max(xs, key=lambda a: xs[a].varValue or 0.0) for _, xs in sorted(x.items())]


def worker(solver: str, path: str, time_limit_s: float) -> dict:
    """Builds the ILP of one instance and solves it with `solver` (cbc | highs) in this process."""
    import pulp

    prob = load(path)
    t0 = time.perf_counter()
    lp, x, stats = build_model(prob)
    out = {"solver": solver, **stats}
    const = stats["constant"]
    if solver == "highs":
        hs = pulp.HiGHS(msg=False, threads=1, timeLimit=time_limit_s, gapRel=0.0)
        hs.createAndConfigureSolver(lp)
        hs.buildSolverModel(lp)
        out["build_s"] = time.perf_counter() - t0
        out["rss_before_solve_mib"] = own_peak_rss_mib()
        t1 = time.perf_counter()
        hs.callSolver(lp)
        out["solve_s"] = time.perf_counter() - t1
        h = lp.solverModel
        info, status = h.getInfo(), h.getModelStatus()
        out["status"] = h.modelStatusToString(status)
        out["proven"] = status == h.getModelStatus().__class__.kOptimal
        out["infeasible"] = "nfeasible" in out["status"]
        has_sol = info.primal_solution_status == 2
        if has_sol:
            hs.findSolutionValues(lp)
        out["objective"] = info.objective_function_value + const if has_sol else None
        out["bound"] = info.mip_dual_bound + const if abs(info.mip_dual_bound) < 1e300 else None
        out["peak_rss_mib"] = own_peak_rss_mib()  # this process: the PuLP model and HiGHS
    else:
        cbc = pulp.PULP_CBC_CMD(msg=False, threads=1, timeLimit=time_limit_s, gapRel=0.0, options=["preprocess off"],
                                timeMode="elapsed")
        with tempfile.TemporaryDirectory() as tmp:
            mps = os.path.join(tmp, "model.mps")
            lp.writeMPS(mps)
            out["build_s"] = time.perf_counter() - t0
            sol, log = os.path.join(tmp, "model.sol"), os.path.join(tmp, "cbc.log")
            hwm = os.path.join(tmp, "cbc.rss")
            cmd = [TIME, "-f", "%M", "-o", hwm, cbc.path, mps, "-sec", str(time_limit_s), "-timeMode", "elapsed", "-threads", "1", "-ratio", "0",
                   "-preprocess", "off", "-printingOptions", "all", "-solve", "-solution", sol]
            out["cbc_command"] = " ".join(["cbc"] + cmd[6:])
            t1 = time.perf_counter()
            cap = 2 * time_limit_s + 30  # CBC checks -sec only between its own phases: a root LP can overrun it
            killed = False
            with open(log, "w") as lf:
                p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
                try:
                    p.wait(timeout=cap)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)  # GNU time and cbc
                    p.wait()
                    killed = True
            out["solve_s"] = time.perf_counter() - t1
            text = open(log).read()
            if killed:
                text += f"\nResult - killed after {cap:g} s (still running past -sec)\n"
            out["peak_rss_mib"] = read_time_rss(hwm)  # the cbc process alone
            m = re.search(r"^Result - (.*)$", text, re.M)
            out["status"] = m.group(1).strip() if m else "unknown"
            out["proven"] = out["status"].startswith("Optimal solution found")
            out["infeasible"] = "infeasible" in out["status"].lower()
            obj = re.search(r"^Objective value:\s+(\S+)", text, re.M)
            bnd = re.search(r"^Lower bound:\s+(\S+)", text, re.M)
            out["objective"] = float(obj.group(1)) + const if obj and "No feasible" not in text else None
            out["bound"] = float(bnd.group(1)) + const if bnd else (out["objective"] if out["proven"] else None)
            vals = {}
            if out["objective"] is not None and os.path.exists(sol):
                for line in open(sol).read().splitlines()[1:]:
                    parts = line.replace("**", " ").split()
                    if len(parts) >= 3:
                        vals[parts[1]] = float(parts[2])
                for xs in x.values():
                    for var in xs.values():
                        var.varValue = vals.get(var.name, 0.0)
            has_sol = bool(vals)
    if has_sol:
        s = decode(x)
        out["verified_cost"], out["feasible"] = evaluate(prob, s)
    return out


TIME = "/usr/bin/time"  # GNU time: the peak RSS of a process started from a small one


def own_peak_rss_mib() -> float:
    """This process's peak RSS since it started (VmHWM; getrusage's ru_maxrss also counts the
    parent's RSS at the fork, Linux keeps it across exec)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def read_time_rss(path: str) -> float | None:
    """The peak RSS (MiB) GNU time wrote (`-f %M`, KiB), None when absent."""
    try:
        return int(open(path).read().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        return None


def run_measured(cmd: list[str]) -> tuple[str, float, float | None, int]:
    """Runs cmd under GNU time; (stdout, wall s, peak RSS MiB of it and its children, exit code)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as f, tempfile.TemporaryDirectory() as tmp:
        hwm = os.path.join(tmp, "rss")
        rc = subprocess.run([TIME, "-f", "%M", "-o", hwm] + cmd, stdout=f, stderr=subprocess.PIPE, text=True).returncode
        f.seek(0)
        return f.read(), time.perf_counter() - t0, read_time_rss(hwm), rc


def run_ctshard(tool: str, path: str, prob: dict, time_limit_s: float) -> dict:
    text, wall, rss, rc = run_measured([tool, "iopddl", path, "--time-limit-s", str(time_limit_s), "--json"])
    if rc != 0:
        return {"solver": "ctshard", "error": f"exit {rc}"}
    j = json.loads(text)
    out = {"solver": "ctshard", "status": j["status"], "proven": bool(j["optimal"]), "objective": j["cost"], "bound": j["lower_bound"],
           "build_s": j["read_seconds"], "solve_s": j["seconds"] - j["read_seconds"], "wall_s": wall, "peak_rss_mib": rss,
           "infeasible": j["status"] == "infeasible"}
    if j.get("strategies"):
        out["verified_cost"], out["feasible"] = evaluate(prob, j["strategies"])
    return out


def run_ilp(solver: str, path: str, time_limit_s: float) -> dict:
    text, wall, rss, rc = run_measured([sys.executable, __file__, "--worker", solver, path, "--time-limit-s", str(time_limit_s)])
    if rc != 0:
        return {"solver": solver, "error": f"worker exit {rc}", "wall_s": wall, "worker_peak_rss_mib": rss}
    out = json.loads(text.strip().splitlines()[-1])  # HiGHS prints its banner first
    out["wall_s"], out["worker_peak_rss_mib"] = wall, rss
    return out


def gap(r: dict):
    o, b = r.get("objective"), r.get("bound")
    if o is None or b is None:
        return None
    return 0.0 if o == b else (o - b) / abs(o) if o else None


def check(name: str, rows: dict) -> list[str]:
    """Consistency: reported objectives match the priced solutions; proven optima agree; no
    solver's objective below another's proven bound."""
    bad = []
    for s, r in rows.items():
        if r.get("objective") is not None and "verified_cost" in r:
            if abs(r["verified_cost"] - r["objective"]) > 0.5 + 1e-9 * abs(r["objective"]):
                bad.append(f"{name} {s}: objective {r['objective']} but its solution costs {r['verified_cost']}")
            if not r["feasible"]:
                bad.append(f"{name} {s}: its solution breaks a constraint")
    proven = {s: round(r["objective"]) for s, r in rows.items() if r.get("proven") and r.get("objective") is not None}
    if len(set(proven.values())) > 1:
        bad.append(f"{name}: proven optima differ: {proven}")
    for s, r in rows.items():
        for t, q in rows.items():
            if r.get("bound") is not None and q.get("objective") is not None and r["bound"] > q["objective"] + 0.5 + 1e-9 * abs(q["objective"]):
                bad.append(f"{name}: {s}'s bound {r['bound']} exceeds {t}'s objective {q['objective']}")
    return bad


def fmt(v, spec=",.0f"):
    return "–" if v is None else format(v, spec)


def markdown(results: list[dict], time_limit_s: float) -> str:
    lines = ["| problem | nodes / edges | ILP columns / rows | solver | build s | solve s | objective | bound | gap | proven | peak RSS MiB "
             "| ctshard time × | ctshard RSS × |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for res in results:
        ct = res["rows"].get("ctshard", {})
        for s in ("ctshard", "highs", "cbc"):
            r = res["rows"].get(s)
            if r is None:
                continue
            size = f"{r['x_columns'] + r['y_columns']:,} / {r['rows']:,}" if "x_columns" in r else ""
            if "error" in r or "skipped" in r:
                lines.append(f"| {res['name']} | {res['nodes']:,} / {res['edges']:,} | {size} | {s} | {r.get('error') or r.get('skipped')} |||||||||")
                continue
            t = r["build_s"] + r["solve_s"]
            ct_t = ct.get("build_s", 0) + ct.get("solve_s", 0) if "error" not in ct else None
            g = gap(r)
            ratio_t = "" if s == "ctshard" or not ct_t else f"{t / ct_t:,.1f}"
            ratio_m = "" if s == "ctshard" or not ct.get("peak_rss_mib") or r["peak_rss_mib"] is None else f"{r['peak_rss_mib'] / ct['peak_rss_mib']:,.1f}"
            status = "yes" if r["proven"] else ("infeasible" if r.get("infeasible") else f"no ({r['status']})")
            lines.append(f"| {res['name']} | {res['nodes']:,} / {res['edges']:,} | {size} | {s} | {r['build_s']:.2f} | {r['solve_s']:.2f} "
                         f"| {fmt(r.get('objective'))} | {fmt(r.get('bound'))} | {fmt(g, '.2e') if g else ('0' if g == 0 else '–')} | {status} "
                         f"| {fmt(r['peak_rss_mib'])} | {ratio_t} | {ratio_m} |")
    lines.append("")
    lines.append(f"Time limit {time_limit_s:g} s per solver, one thread each. \"ctshard time ×\": (build + solve) of the ILP solver over "
                 "ctshard's (read + solve); \"ctshard RSS ×\": the ILP process's peak RSS over ctshard's.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="*", help="IOPDDL instances (.json / .json.gz)")
    ap.add_argument("--time-limit-s", type=float, default=60.0, help="per solver and problem (s)")
    ap.add_argument("--out", type=Path, help="results JSON")
    ap.add_argument("--markdown", type=Path, help="markdown table")
    ap.add_argument("--tool", default=str(ROOT / "build/examples/ctshard"))
    ap.add_argument("--solvers", default="ctshard,highs,cbc")
    ap.add_argument("--max-ilp-columns", type=int, default=1_500_000,
                    help="skip the ILP of an instance whose model would have more columns (PuLP needs ~1.5 KiB a column)")
    ap.add_argument("--worker", choices=["cbc", "highs"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.problems[0], a.time_limit_s)))
        return 0
    results, problems_bad = [], []
    for path in a.problems:
        prob = load(path)
        name = Path(path).name.removesuffix(".gz").removesuffix(".json")
        res = {"name": name, "file": str(path), "nodes": len(prob["nodes"]["costs"]), "edges": len(prob["edges"]["nodes"]),
               "usage_limit": prob.get("usage_limit"), "rows": {}}
        cols = model_size(prob)
        res["ilp_columns"] = cols
        for s in a.solvers.split(","):
            if s == "ctshard":
                r = run_ctshard(a.tool, path, prob, a.time_limit_s)
            elif cols > a.max_ilp_columns:
                r = {"solver": s, "skipped": f"not built: {cols:,} columns > --max-ilp-columns {a.max_ilp_columns:,}"}
            else:
                r = run_ilp(s, path, a.time_limit_s)
            r["gap"] = gap(r)
            res["rows"][s] = r
            print(f"{name} {s}: " + json.dumps({k: r.get(k) for k in ("status", "objective", "bound", "build_s", "solve_s", "peak_rss_mib",
                                                                        "verified_cost", "feasible", "error", "skipped")}), flush=True)
        res["violations"] = check(name, res["rows"])
        problems_bad += res["violations"]
        results.append(res)
        if a.out:
            a.out.write_text(json.dumps({"time_limit_s": a.time_limit_s, "results": results}, indent=1))
    table = markdown(results, a.time_limit_s)
    if a.markdown:
        a.markdown.write_text(table)
    print(table)
    for b in problems_bad:
        print("VIOLATION:", b)
    return 1 if problems_bad else 0


if __name__ == "__main__":
    sys.exit(main())
