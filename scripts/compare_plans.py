#!/usr/bin/env python3
"""Compare the plans of two ctshard binaries on every shared graph (a refactor must change none).

For every graph in SHARED/graphs/*.fx.txt and SHARED/graphs/more/*.fx.txt the tool is run as
`ctshard plan GRAPH --json` with five settings:

  greedy-2x4        --mesh 2x4
  greedy-2x4-dp     --mesh 2x4 --data-parallel
  greedy-2x2x2      --mesh 2x2x2
  greedy-2x2x2-dp   --mesh 2x2x2 --data-parallel
  global-2x4-dp     --mesh 2x4 --data-parallel --global --time-limit-ms 60000

Usage (SHARED defaults to <repo>/../shared, falling back to the main checkout's ../shared when
run from a git worktree):

  # both binaries now
  python3 scripts/compare_plans.py --old /work/baseline/ctshard --new build/examples/ctshard
  # record one binary's outputs (one JSON file per graph x setting, plus manifest.json) ...
  python3 scripts/compare_plans.py --record /work/baseline/plans --old /work/baseline/ctshard
  # ... and compare a later binary with the recording (same settings and time limit as recorded)
  python3 scripts/compare_plans.py --old-dir /work/baseline/plans --new build/examples/ctshard
  # two recordings (e.g. a determinism check without rerunning)
  python3 scripts/compare_plans.py --old-dir A --new-dir B

Options: --shared DIR, --jobs 1|2 (process pool, default 2), --time-limit-ms MS (global setting;
default 60000, or the recording's), --settings NAME,NAME (subset), --graphs GLOB (subset, matched
against e.g. graphs/more/dlrm_bw.fx.txt), --rel-tol X (relative tolerance of cost fields, default
0: exact), --strict-unproven (see below), --force (--record into a directory that already holds
a recording), -v (one line per run).

Time: the 104 greedy runs take about 2 s in all; the 26 global runs about 62 s with 2 jobs, nearly
all of it ves_symbolic_bw using its whole 60 s (every other graph is proven optimal within 0.4 s).
A recording (130 runs) or a comparison of one binary with a recording thus takes about 1 min; two
binaries (260 runs) about 1 min too (their two ves_symbolic_bw runs go side by side).

What is compared (a pair = one graph x one setting):
- exit status; for a failed run its stderr; otherwise the whole JSON document, every field,
  except `source` (the graph's path) and timing fields (any key ending in `_ms`).
- nodes are matched by name: inputs / outputs specs, cost_us, fallback (and reason, repaired,
  repair, changed) per node, plus the node order.
- greedy settings: everything, costs exact (total_cost_us, per-node cost_us).
- global setting: solver statistics are compared only for the cost graph's structure
  (build_complete, variables, candidates, max_candidates, edges, undelivered_rows,
  greedy_rows_added); search / dual counts, memory figures and times are ignored (they depend on
  the time the solver had). When both sides are proven_optimal, everything else is compared exactly
  (total_cost_us, objective_us, every node's placement, changes vs greedy). When either side is
  not proven optimal (ves_symbolic_bw hits the 60 s limit; its incumbent and bound depend on the
  machine's speed and load), the solution-dependent fields (total_cost_us, objective_us,
  lower_bound_us, optimality_gap, status, changes, nodes_changed, nodes_repaired, per-node
  inputs/outputs/cost_us/changed) are not compared; instead the two [lower_bound_us, objective_us]
  intervals must overlap (each side's plan is no cheaper than the other's lower bound), and
  proven_optimal must agree; a note says whether the two plans and bounds are the same anyway.
  --strict-unproven compares those fields exactly too. Greedy fields of the global run
  (greedy_total_cost_us, ...) and the per-node op / fallback flags are compared exactly always.
- Determinism (the baseline against itself, and two recordings of it): every field but the times
  is identical run to run, except ves_symbolic_bw's search_nodes / search_splits (time-limited
  search); its plan, total and bound were the same with 5 s, 20 s and 60 s limits.

Exit status: 0 when every pair is identical (one summary line), 1 listing every difference, 2 on
a usage error or a missing binary / directory. Standard library only.
"""

import argparse
import concurrent.futures
import datetime
import fnmatch
import hashlib
import json
import math
import os
import subprocess
import sys
import time

GLOBAL_TIME_LIMIT_MS = 60000
SETTINGS = [
    ("greedy-2x4", ["--mesh", "2x4"]),
    ("greedy-2x4-dp", ["--mesh", "2x4", "--data-parallel"]),
    ("greedy-2x2x2", ["--mesh", "2x2x2"]),
    ("greedy-2x2x2-dp", ["--mesh", "2x2x2", "--data-parallel"]),
    ("global-2x4-dp", ["--mesh", "2x4", "--data-parallel", "--global", "--time-limit-ms", "{tl}"]),
]
RECORD_FORMAT = 1

# Solver statistics that describe the cost graph (not the search): compared in every global pair.
SOLVER_STRUCTURE = ("build_complete", "variables", "candidates", "max_candidates", "edges",
                    "undelivered_rows", "greedy_rows_added")
# Fields of a global plan that depend on how far the solver got; not compared unless both sides
# are proven optimal.
GLOBAL_SOLUTION_FIELDS = ("total_cost_us", "objective_us", "lower_bound_us", "optimality_gap",
                          "status", "changes", "nodes_changed", "nodes_repaired")
NODE_SOLUTION_FIELDS = ("inputs", "outputs", "cost_us", "changed", "repaired", "repair")
COST_KEYS_SUFFIX = "_us"


def die(msg):
    print(f"compare_plans: {msg}", file=sys.stderr)
    sys.exit(2)


def default_shared():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tried = [os.path.normpath(os.path.join(repo, "..", "shared"))]
    try:  # a git worktree: the main checkout's ../shared
        common = subprocess.run(["git", "-C", repo, "rev-parse", "--path-format=absolute",
                                 "--git-common-dir"], capture_output=True, text=True,
                                check=True).stdout.strip()
        tried.append(os.path.normpath(os.path.join(os.path.dirname(common), "..", "shared")))
    except (OSError, subprocess.CalledProcessError):
        pass
    for d in tried:
        if os.path.isdir(os.path.join(d, "graphs")):
            return d
    die("no shared graphs directory (tried " + ", ".join(tried) + "); pass --shared DIR")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def find_graphs(shared):
    out = []
    for sub in ("graphs", os.path.join("graphs", "more")):
        d = os.path.join(shared, sub)
        if os.path.isdir(d):
            out += sorted(os.path.join(sub, n) for n in os.listdir(d) if n.endswith(".fx.txt"))
    return [g.replace(os.sep, "/") for g in out]


def record_name(graph, setting):
    return graph.replace("/", "__") + "." + setting + ".json"


def run_one(binary, shared, graph, setting, args, timeout_s):
    argv = [binary, "plan", os.path.join(shared, graph)] + args + ["--json"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout_s)
        rc, out, err = p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode(
            "utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", (e.stdout or b"").decode("utf-8", "replace"), (
            e.stderr or b"").decode("utf-8", "replace")
    wall = time.monotonic() - t0
    rec = {"graph": graph, "setting": setting, "args": args, "exit_code": rc, "stderr": err,
           "wall_s": round(wall, 3), "output": None}
    if rc == 0:
        try:
            rec["output"] = json.loads(out)
        except ValueError as e:
            rec["stdout"] = out
            rec["json_error"] = str(e)
    else:
        rec["stdout"] = out
    return rec


def run_all(binaries, shared, graphs, settings, time_limit_ms, jobs, verbose):
    """binaries: {side: path}. Returns {side: {(graph, setting): record}} and the wall time."""
    tasks = []
    for side, binary in binaries.items():
        for graph in graphs:
            for name, args in settings:
                args = [a.replace("{tl}", f"{time_limit_ms:g}") for a in args]
                is_global = "--global" in args
                timeout = 2 * time_limit_ms / 1000 + 300 if is_global else 600
                tasks.append((not is_global, side, binary, graph, name, args, timeout))
    tasks.sort(key=lambda t: t[0])  # the global runs (the long ones) first
    results = {side: {} for side in binaries}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(run_one, b, shared, g, n, a, to): (s, g, n)
                for _, s, b, g, n, a, to in tasks}
        for f in concurrent.futures.as_completed(futs):
            side, graph, name = futs[f]
            rec = f.result()
            results[side][(graph, name)] = rec
            if verbose:
                print(f"  {side} {graph} [{name}] exit {rec['exit_code']} {rec['wall_s']:.2f} s",
                      file=sys.stderr)
    return results, time.monotonic() - t0


def settings_by_name(names):
    known = dict(SETTINGS)
    if names is None:
        return list(SETTINGS)
    out = []
    for n in names.split(","):
        if n not in known:
            die(f"unknown setting {n!r} (known: {', '.join(known)})")
        out.append((n, known[n]))
    return out


# ----------------------------------------------------------------------------------------------
# Recordings


def write_recording(directory, binary, shared, graphs, settings, time_limit_ms, results, wall,
                    force):
    manifest_path = os.path.join(directory, "manifest.json")
    if os.path.exists(manifest_path) and not force:
        die(f"{directory} already holds a recording (manifest.json); pass --force to replace it")
    os.makedirs(directory, exist_ok=True)
    for (graph, name), rec in results.items():
        tmp = os.path.join(directory, record_name(graph, name) + ".tmp")
        with open(tmp, "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, os.path.join(directory, record_name(graph, name)))
    manifest = {
        "format": RECORD_FORMAT,
        "binary": os.path.abspath(binary),
        "binary_sha256": sha256(binary),
        "shared": os.path.abspath(shared),
        "graphs": {g: sha256(os.path.join(shared, g)) for g in graphs},
        "settings": {n: a for n, a in settings},
        "time_limit_ms": time_limit_ms,
        "recorded_at": datetime.datetime.now().isoformat(timespec="seconds"),
        "wall_s": round(wall, 1),
    }
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)


def read_recording(directory):
    try:
        with open(os.path.join(directory, "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{directory}: no readable manifest.json ({e}); record with --record DIR")
    if manifest.get("format") != RECORD_FORMAT:
        die(f"{directory}: recording format {manifest.get('format')}, expected {RECORD_FORMAT}")
    results = {}
    for graph in manifest["graphs"]:
        for name in manifest["settings"]:
            path = os.path.join(directory, record_name(graph, name))
            try:
                with open(path) as f:
                    results[(graph, name)] = json.load(f)
            except (OSError, ValueError) as e:
                die(f"{path}: {e}")
    return manifest, results


# ----------------------------------------------------------------------------------------------
# Comparison


def is_cost_key(key):
    return key.endswith(COST_KEYS_SUFFIX) or key in ("optimality_gap",)


def numbers_equal(a, b, rel_tol):
    if rel_tol == 0:
        return a == b
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


def short(v, limit=200):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "..."


def diff_values(a, b, path, out, rel_tol, skip=()):
    """Appends 'path: old -> new' lines for every difference of two JSON values."""
    key = path.rsplit(".", 1)[-1]
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in skip or k.endswith("_ms"):
                continue
            sub = f"{path}.{k}" if path else k
            if k not in a:
                out.append(f"{sub}: only in new: {short(b[k])}")
            elif k not in b:
                out.append(f"{sub}: only in old: {short(a[k])}")
            else:
                diff_values(a[k], b[k], sub, out, rel_tol)
        return
    if isinstance(a, list) and isinstance(b, list):
        flat = not any(isinstance(x, (dict, list)) for x in a + b)
        if flat and len(a) == len(b) and all(
                type(x) is type(y) and (x == y or (isinstance(x, float) and numbers_equal(
                    x, y, rel_tol if is_cost_key(key) else 0))) for x, y in zip(a, b)):
            return
        if flat or len(a) != len(b):
            sizes = f" ({len(a)} entries -> {len(b)})" if len(a) != len(b) else ""
            out.append(f"{path}: {short(a)} -> {short(b)}{sizes}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            diff_values(x, y, f"{path}[{i}]", out, rel_tol)
        return
    num = (int, float)
    if (isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool)
            and not isinstance(b, bool)):
        if not numbers_equal(a, b, rel_tol if is_cost_key(key) else 0):
            out.append(f"{path}: {a!r} -> {b!r}")
        return
    if a != b or type(a) is not type(b):
        out.append(f"{path}: {short(a)} -> {short(b)}")


def diff_nodes(a, b, out, rel_tol, node_skip):
    names_a = [n.get("name") for n in a]
    names_b = [n.get("name") for n in b]
    by_a = {n.get("name"): n for n in a}
    by_b = {n.get("name"): n for n in b}
    only_a = [n for n in names_a if n not in by_b]
    only_b = [n for n in names_b if n not in by_a]
    if only_a:
        out.append(f"nodes only in old ({len(only_a)}): {', '.join(map(str, only_a[:20]))}"
                   + (" ..." if len(only_a) > 20 else ""))
    if only_b:
        out.append(f"nodes only in new ({len(only_b)}): {', '.join(map(str, only_b[:20]))}"
                   + (" ..." if len(only_b) > 20 else ""))
    common_a = [n for n in names_a if n in by_b]
    common_b = [n for n in names_b if n in by_a]
    if common_a != common_b:
        out.append("node order differs")
    for name in common_a:
        x, y = by_a[name], by_b[name]
        sub = []
        diff_values(x, y, "", sub, rel_tol, skip=node_skip)
        if sub:
            out.append(f"node {name} ({x.get('op')}): " + "; ".join(sub))


def diff_plan(a, b, is_global, rel_tol, strict_unproven):
    """Differences of two plan documents and notes (not failures) about them."""
    out, notes = [], []
    skip = {"source", "nodes"}
    node_skip = set()
    if is_global:
        skip.add("solver")
        sa, sb = a.get("solver", {}), b.get("solver", {})
        built = sa.get("build_complete") and sb.get("build_complete")
        for k in SOLVER_STRUCTURE if built else ("build_complete",):
            if sa.get(k) != sb.get(k):
                out.append(f"solver.{k}: {sa.get(k)!r} -> {sb.get(k)!r}")
        pa, pb = a.get("proven_optimal"), b.get("proven_optimal")
        if not (pa is True and pb is True):
            if not strict_unproven:
                skip.update(GLOBAL_SOLUTION_FIELDS)
                node_skip.update(NODE_SOLUTION_FIELDS)
            def placed(n):
                return n.get("name"), n.get("inputs"), n.get("outputs")
            moved = sum(1 for x, y in zip(a.get("nodes", []), b.get("nodes", []))
                        if placed(x) != placed(y))
            same = (moved == 0 and a.get("total_cost_us") == b.get("total_cost_us")
                    and a.get("lower_bound_us") == b.get("lower_bound_us"))
            notes.append("same plan and bound on both sides" if same else
                         f"the plans differ ({moved} node(s) placed differently)")
            la, lb = a.get("lower_bound_us"), b.get("lower_bound_us")
            ua, ub = a.get("objective_us"), b.get("objective_us")
            for side, v in (("old", a), ("new", b)):
                notes.append(f"{side}: {'proven' if v.get('proven_optimal') else 'not proven'}"
                             f", status {v.get('status')}, total {v.get('total_cost_us')} us,"
                             f" lower bound {v.get('lower_bound_us')} us,"
                             f" gap {v.get('optimality_gap')}")
            if None in (la, lb, ua, ub):
                out.append("lower_bound_us / objective_us missing")
            else:
                eps = 1e-3 + 1e-9 * max(abs(ua), abs(ub))  # the bound is printed to 3 decimals
                if la > ub + eps or lb > ua + eps:
                    out.append(f"bounds inconsistent: old [{la}, {ua}] us, new [{lb}, {ub}] us"
                               " (one side's plan is cheaper than the other's lower bound)")
    diff_values(a, b, "", out, rel_tol, skip=skip)
    diff_nodes(a.get("nodes", []), b.get("nodes", []), out, rel_tol, node_skip)
    return out, notes


def diff_records(ra, rb, rel_tol, strict_unproven):
    if ra["exit_code"] != rb["exit_code"]:
        out = [f"exit status {ra['exit_code']} -> {rb['exit_code']}"]
        for side, r in (("old", ra), ("new", rb)):
            if r["exit_code"] != 0:
                out.append(f"{side} stderr: {r['stderr'].strip()[:500]}")
        return out, []
    if ra["exit_code"] != 0:
        if ra["stderr"].strip() != rb["stderr"].strip():
            return [f"stderr (both exit {ra['exit_code']}): {ra['stderr'].strip()[:300]!r} -> "
                    f"{rb['stderr'].strip()[:300]!r}"], []
        return [], []
    if ra["output"] is None or rb["output"] is None:
        if ra.get("stdout") != rb.get("stdout"):
            return ["output not JSON (" + (ra.get("json_error") or rb.get("json_error")) +
                    ") and differs"], []
        return [], []
    return diff_plan(ra["output"], rb["output"], "--global" in ra["args"], rel_tol,
                     strict_unproven)


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See the module docstring for what is compared.")
    ap.add_argument("--old", metavar="BIN", help="old ctshard binary")
    ap.add_argument("--new", metavar="BIN", help="new ctshard binary")
    ap.add_argument("--old-dir", metavar="DIR", help="a recording to use as the old side")
    ap.add_argument("--new-dir", metavar="DIR", help="a recording to use as the new side")
    ap.add_argument("--record", metavar="DIR",
                    help="run the one binary given (--old or --new) and save its outputs in DIR")
    ap.add_argument("--force", action="store_true", help="--record: replace a recording")
    ap.add_argument("--shared", metavar="DIR", help="shared directory holding graphs/ "
                    "(default: <repo>/../shared)")
    ap.add_argument("--jobs", type=int, default=2, choices=(1, 2), help="parallel runs (default 2)")
    ap.add_argument("--time-limit-ms", type=float, default=None,
                    help=f"global setting's time limit (default {GLOBAL_TIME_LIMIT_MS}, or the "
                    "recording's)")
    ap.add_argument("--settings", metavar="NAMES", help="comma-separated subset of: "
                    + ", ".join(n for n, _ in SETTINGS))
    ap.add_argument("--graphs", metavar="GLOB", help="subset of graphs, e.g. 'graphs/more/*'")
    ap.add_argument("--rel-tol", type=float, default=0.0,
                    help="relative tolerance of cost fields (default 0: exact)")
    ap.add_argument("--strict-unproven", action="store_true",
                    help="compare global pairs that are not proven optimal exactly too (plan, "
                    "total, bound, gap; only search counts and times ignored)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per run on stderr")
    o = ap.parse_args()

    for b in (o.old, o.new):
        if b is not None and not (os.path.isfile(b) and os.access(b, os.X_OK)):
            die(f"{b}: not an executable file")
    settings = settings_by_name(o.settings)

    if o.record:
        if o.old_dir or o.new_dir or (o.old is None) == (o.new is None):
            die("--record DIR takes exactly one binary (--old BIN or --new BIN)")
        binary = o.old or o.new
        shared = os.path.abspath(o.shared or default_shared())
        graphs = [g for g in find_graphs(shared) if not o.graphs or fnmatch.fnmatch(g, o.graphs)]
        if not graphs:
            die(f"no *.fx.txt graphs under {shared}/graphs")
        tl = o.time_limit_ms if o.time_limit_ms is not None else GLOBAL_TIME_LIMIT_MS
        results, wall = run_all({"rec": binary}, shared, graphs, settings, tl, o.jobs, o.verbose)
        write_recording(o.record, binary, shared, graphs, settings, tl, results["rec"], wall,
                        o.force)
        failed = sum(1 for r in results["rec"].values() if r["exit_code"] != 0)
        print(f"compare_plans: recorded {len(graphs)} graphs x {len(settings)} settings = "
              f"{len(results['rec'])} runs of {binary} in {o.record} ({wall:.1f} s"
              + (f"; {failed} runs failed, recorded as such" if failed else "") + ")")
        return 0

    if (o.old is None) == (o.old_dir is None) or (o.new is None) == (o.new_dir is None):
        die("give one old side (--old BIN or --old-dir DIR) and one new side (--new BIN or "
            "--new-dir DIR), or --record DIR with one binary")

    notes_global = []
    problems = []  # differences that are not about one pair
    recorded = {}
    manifest = None
    for side, d in (("old", o.old_dir), ("new", o.new_dir)):
        if d:
            m, recs = read_recording(d)
            recorded[side] = recs
            if manifest is None:
                manifest = m
            elif (m["settings"] != manifest["settings"]
                  or m["time_limit_ms"] != manifest["time_limit_ms"]):
                die(f"{o.old_dir} and {o.new_dir} were recorded with different settings")
    if manifest is not None:
        graphs = list(manifest["graphs"])
        rec_settings = manifest["settings"]
        if o.settings:
            missing = [n for n, _ in settings if n not in rec_settings]
            if missing:
                die(f"setting(s) {', '.join(missing)} not in the recording")
        settings = [(n, a) for n, a in rec_settings.items()
                    if not o.settings or n in dict(settings)]
        tl = manifest["time_limit_ms"]
        if o.time_limit_ms is not None and o.time_limit_ms != tl:
            die(f"the recording's global time limit is {tl:g} ms; --time-limit-ms must match")
        if o.graphs:
            graphs = [g for g in graphs if fnmatch.fnmatch(g, o.graphs)]
    else:
        tl = o.time_limit_ms if o.time_limit_ms is not None else GLOBAL_TIME_LIMIT_MS
        graphs = None

    binaries = {s: b for s, b in (("old", o.old), ("new", o.new)) if b}
    wall = 0.0
    if binaries:
        shared = os.path.abspath(o.shared or default_shared())
        current = find_graphs(shared)
        if graphs is None:
            graphs = [g for g in current if not o.graphs or fnmatch.fnmatch(g, o.graphs)]
        else:
            extra = [g for g in current if g not in manifest["graphs"]
                     and (not o.graphs or fnmatch.fnmatch(g, o.graphs))]
            if extra:
                notes_global.append(f"not in the recording, not compared: {', '.join(extra)}")
            for g in list(graphs):
                p = os.path.join(shared, g)
                if not os.path.isfile(p):
                    problems.append(f"{g}: recorded, but missing from {shared}")
                    graphs.remove(g)
                elif sha256(p) != manifest["graphs"][g]:
                    problems.append(f"{g}: the graph file changed since the recording")
        if not graphs:
            die(f"no graphs to compare under {shared}")
        if o.old and o.new and os.path.realpath(o.old) == os.path.realpath(o.new):
            notes_global.append("old and new are the same binary (a determinism check)")
        ran, wall = run_all(binaries, shared, graphs, settings, tl, o.jobs, o.verbose)
        recorded.update(ran)
    elif o.old_dir and o.new_dir:
        m_new, _ = read_recording(o.new_dir)
        for g in sorted(set(m_new["graphs"]) ^ set(manifest["graphs"])):
            problems.append(f"{g}: in only one of the recordings")
        graphs = [g for g in graphs if g in m_new["graphs"]]
        for g in graphs:
            if m_new["graphs"][g] != manifest["graphs"][g]:
                problems.append(f"{g}: the graph file differs between the recordings")

    failures = []
    unproven = []
    for g in graphs:
        for name, _ in settings:
            ra, rb = recorded["old"][(g, name)], recorded["new"][(g, name)]
            diffs, notes = diff_records(ra, rb, o.rel_tol, o.strict_unproven)
            if notes:
                unproven.append((g, name, notes))
            if diffs:
                failures.append((g, name, diffs))

    pairs = len(graphs) * len(settings)
    for n in notes_global:
        print(f"note: {n}")
    for g, name, notes in unproven:
        print(f"note: {g} [{name}] not proven optimal on a side; bounds compared: "
              + "; ".join(notes))
    timing = f" in {wall:.1f} s" if binaries else ""
    if failures or problems:
        for p in problems:
            print(f"DIFF {p}")
        for g, name, diffs in failures:
            print(f"DIFF {g} [{name}]: {len(diffs)} difference(s)")
            for d in diffs:
                print(f"    {d}")
        print(f"compare_plans: {len(failures)} of {pairs} pairs ({len(graphs)} graphs x "
              f"{len(settings)} settings) differ" + (f", {len(problems)} other problem(s)"
                                                     if problems else "") + timing)
        return 1
    print(f"compare_plans: {len(graphs)} graphs x {len(settings)} settings = {pairs} pairs "
          f"compared, all identical ({len(unproven)} global pair(s) unproven: bounds consistent)"
          + timing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
