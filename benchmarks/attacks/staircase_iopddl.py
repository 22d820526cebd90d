#!/usr/bin/env python3
"""A generated IOPDDL instance whose usage intervals form a staircase (docs/robustness.md).

Node i lives over [i, i + window): every time step from window - 1 on has a different set of
live nodes, each a maximal one, so listing the per-step usage limits explicitly takes
(nodes - window + 1) x window memberships (quadratic in the input). Each node has two strategies:
a cheap one that uses one unit and a dearer one that uses none; the usage limit lets half of
each window take the cheap strategy, so the limit binds at every step. Consecutive nodes are
joined by an edge that prefers equal strategies (--no-edges: none). The default size is about 93 KB.

    python3 benchmarks/attacks/staircase_iopddl.py OUT.json [--nodes 2060] [--window 1030]
"""

import argparse
import json


def staircase(nodes: int, window: int, edges: bool = True) -> dict:
    intervals = [[i, i + window] for i in range(nodes)]
    costs = [[0, 10] for _ in range(nodes)]
    usages = [[1, 0] for _ in range(nodes)]
    pairs = [[i, i + 1] for i in range(nodes - 1)] if edges else []
    edge_costs = [[0, 1, 1, 0] for _ in pairs]
    return {
        "problem": {
            "name": f"staircase-{nodes}-{window}",
            "nodes": {"intervals": intervals, "costs": costs, "usages": usages},
            "edges": {"nodes": pairs, "costs": edge_costs},
            "usage_limit": window // 2,
        }
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=2060)
    ap.add_argument("--window", type=int, default=0, help="default: nodes / 2")
    ap.add_argument("--no-edges", action="store_true", help="nodes only (about 24 bytes per node)")
    a = ap.parse_args()
    window = a.window or max(1, a.nodes // 2)
    with open(a.out, "w") as f:
        json.dump(staircase(a.nodes, window, not a.no_edges), f, separators=(",", ":"))


if __name__ == "__main__":
    main()
