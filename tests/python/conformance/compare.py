"""Compare DTensor's answer (dtensor_oracle.run) with ctshard's table (ctshard_side) for one case.

Difference kinds:
  rows_missing_in_ctshard  DTensor has rows (out, in...) that ctshard's table lacks
  rows_extra_in_ctshard    ctshard has rows DTensor lacks (for `op_strategy` ops DTensor often
                           lists only rows that follow the input's one strategy; such records
                           carry `dtensor_kind: "op_strategy"`, and the case's
                           `strategies_subset` says whether DTensor's rows are all in ctshard's
                           table with equal costs)
  cost_mismatch            same row, per-input costs differ beyond 1e-9 relative
  choice_out               DTensor's propagation picks other output placements
  choice_in                same outputs, other input placements (redistribution targets)
  dtensor_error            DTensor refused the case (its exception text)
  ctshard_error            ctshard refused the case
Rows compare as a multiset keyed by (out, in).  Output positions that DTensor leaves `None`
(non-tensor / masked-off outputs) match ctshard's all-Replicate placement there, and DTensor's
_MaskPartial (embedding's row-wise rule, printed `_MP(sum)`) matches ctshard's way of writing
that rule: Replicate on the indices input, P(sum) on the output.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

REL_TOL = 1e-9
MAX_ROWS_IN_RECORD = 12


def normalize_spec(s: str, is_input: bool) -> str:
    """DTensor's _MaskPartial (printed `_MP(sum)` by the oracle) as ctshard writes embedding's
    row-wise row: the indices input Replicate (masked locally), the output P(sum)."""
    if "_MP(" not in s:
        return s
    import re

    return re.sub(r"_MP\((\w+)\)", "R" if is_input else r"P(\1)", s)


def _key_part(x: Any, ndim: int, is_input: bool = False) -> Any:
    if x is None or (isinstance(x, str) and "None" in x):
        # no spec (non-tensor / masked-off output), or DTensor's half-None spec for a masked-off
        # output (one mesh dim's rule says None, another P(sum)): nothing to place
        return "R" * ndim
    if isinstance(x, list):
        if len(x) == 1 and not is_input:
            # a one-piece tensor list (split / unbind into one piece) vs a plain spec
            return _key_part(x[0], ndim, is_input)
        return tuple(_key_part(e, ndim, is_input) for e in x)
    return normalize_spec(x, is_input)


def row_key(row: dict, ndim: int) -> tuple:
    return (_key_part(row["out"], ndim), tuple(_key_part(i, ndim, True) for i in row["in"]))


def row_text(row: dict, ndim: int | None = None) -> str:
    out = row["out"]
    if out is None:
        out = "None"
    out_t = ", ".join("None" if o is None else o for o in out) if isinstance(out, list) else str(out)
    ins = ", ".join("None" if i is None else i for i in row["in"])
    return f"({ins}) -> {out_t}"


def costs_close(a: list[float], b: list[float]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if math.isinf(x) or math.isinf(y):
            if x != y:
                return False
            continue
        if abs(x - y) > REL_TOL * max(abs(x), abs(y), 1e-12) and abs(x - y) > 1e-12:
            return False
    return True


def _cost_json(c: list[float]) -> list:
    return ["inf" if math.isinf(x) else x for x in c]


def _total(c: list[float]) -> float:
    return sum(c)


_PL = re.compile(r"_S\((\d+), *(\d+)\)|S\((\d+)\)|_?M?P\((\w+)\)|R")


def _placements(spec: str) -> list[tuple]:
    out = []
    for m in _PL.finditer(spec):
        if m.group(1) is not None:
            out.append(("S", int(m.group(1)), int(m.group(2))))
        elif m.group(3) is not None:
            out.append(("S", int(m.group(3)), 1))
        elif m.group(4) is not None:
            out.append(("P", m.group(4)))
        else:
            out.append(("R",))
    return out


def shardable(shape: list[int], spec: str, mesh: list[int]) -> bool:
    """DTensor's is_tensor_shardable: no shard may be empty."""
    n = [1] * len(shape)
    pls = _placements(spec)
    for i, p in enumerate(pls):
        if p[0] == "S":
            d = p[1]
            if d >= len(shape):
                return False
            n[d] *= mesh[i]
            if shape[d] < n[d] * p[2]:
                return False
    return True


def mixed_partial(spec: str) -> bool:
    ops = {p[1] for p in _placements(spec) if p[0] == "P"}
    return len(ops) > 1 and ops != {"sum", "avg"}


def _shard_layout(spec: str, d: int) -> list[tuple]:
    """The (mesh dim, split factor) pairs that shard tensor dim d, in mesh-dim order."""
    return [(i, p[2]) for i, p in enumerate(_placements(spec)) if p[0] == "S" and p[1] == d]


def new_empty_shards(shape: list[int], current: str, target: str, mesh: list[int]) -> bool:
    """Moving an input from `current` to `target` creates empty shards it does not have yet: some
    tensor dim has fewer elements than target shards (DTensor's is_tensor_shardable fails on it)
    and is not split by the same mesh dims as in the current spec (ctshard's
    UnevenInputs::keep_existing_shards refuses exactly these targets)."""
    for d in range(len(shape)):
        lay = _shard_layout(target, d)
        n = 1
        for i, sf in lay:
            n *= mesh[i]
        n *= max([sf for _, sf in lay], default=1)
        if shape[d] < n and lay != _shard_layout(current, d):
            return True
    return False


def row_tags(row: dict, case: dict) -> set[str]:
    """Why a row might be in one table only: `current_inputs` (the row keeps every input where it
    is), `unshardable_input` (an input spec would leave a device an empty shard),
    `new_empty_shards` (an input is moved into a layout with empty shards it does not have now),
    `mixed_partial` (a spec mixes Partial kinds other than sum+avg)."""
    tags = set()
    ins = [normalize_spec(i, True) if i else i for i in row["in"]]
    cur = [t["spec"] for t in case["tensors"]]
    if ins == cur:
        tags.add("current_inputs")
    for t, sp in zip(case["tensors"], ins):
        if sp and not shardable(t["shape"], sp, case["mesh"]):
            tags.add("unshardable_input")
        if sp and new_empty_shards(t["shape"], t["spec"], sp, case["mesh"]):
            tags.add("new_empty_shards")
    specs = [x for x in ins if x] + [o for o in (row["out"] if isinstance(row["out"], list) else [row["out"]]) if o]
    if any(mixed_partial(x) for x in specs):
        tags.add("mixed_partial")
    return tags


def compare_strategies(dt_rows: list[dict], ct_rows: list[dict], ndim: int, subset_mode: bool,
                       inputs_sharded: bool = True, case: dict | None = None) -> list[dict]:
    """Differences between the two row lists (multiset by (out, in))."""
    diffs: list[dict] = []
    dt_by: dict[tuple, list[dict]] = defaultdict(list)
    ct_by: dict[tuple, list[dict]] = defaultdict(list)
    for r in dt_rows:
        dt_by[row_key(r, ndim)].append(r)
    for r in ct_rows:
        ct_by[row_key(r, ndim)].append(r)
    missing, extra, cost_bad = [], [], []
    for k, rs in dt_by.items():
        cs = ct_by.get(k, [])
        for i, r in enumerate(rs):
            if i < len(cs):
                if not costs_close(r["cost"], cs[i]["cost"]):
                    cost_bad.append((r, cs[i]))
            else:
                missing.append(r)
    for k, cs in ct_by.items():
        n_dt = len(dt_by.get(k, []))
        extra.extend(cs[n_dt:])
    if missing:
        diffs.append({"kind": "rows_missing_in_ctshard", "count": len(missing),
                      "rows": [row_text(r) for r in missing[:MAX_ROWS_IN_RECORD]]})
        if case is not None:
            tags = [row_tags(r, case) for r in missing]
            diffs[-1]["row_tags"] = sorted(set().union(*tags))
            diffs[-1]["row_tags_all"] = sorted(set.intersection(*tags))
        if not inputs_sharded:
            # no input has a plain Shard: rows written with a sharding placeholder vanish
            diffs[-1]["no_sharded_input"] = True
    if extra:
        d = {"kind": "rows_extra_in_ctshard", "count": len(extra),
             "rows": [row_text(r) for r in extra[:MAX_ROWS_IN_RECORD]]}
        if case is not None:
            tags = [row_tags(r, case) for r in extra]
            d["row_tags"] = sorted(set().union(*tags))
            d["row_tags_all"] = sorted(set.intersection(*tags))
        if subset_mode:
            d["dtensor_kind"] = "op_strategy"
        if not inputs_sharded:
            # no input has a plain Shard: DTensor's fill drops the placeholder rows; ctshard's
            # shard_from_partial fill keeps them for a Partial input (docs/semantics.md, R15)
            d["no_sharded_input"] = True
        diffs.append(d)
    if cost_bad:
        no_cost = all(len(a["cost"]) == 0 for a, _ in cost_bad)
        diffs.append({"kind": "cost_mismatch", "count": len(cost_bad),
                      **({"dtensor_no_cost": True} if no_cost else {}),
                      "rows": [{"row": row_text(a), "dtensor": _cost_json(a["cost"]),
                                "ctshard": _cost_json(b["cost"])} for a, b in cost_bad[:MAX_ROWS_IN_RECORD]]})
    return diffs


def _find_total(rows: list[dict], out, ins, ndim) -> float | None:
    key = (_key_part(out, ndim), tuple(_key_part(i, ndim, True) for i in ins))
    for r in rows:
        if row_key(r, ndim) == key:
            return _total(r["cost"])
    return None


def compare_choice(dt_choice: dict, ct_choice: dict, dt_rows: list[dict] | None,
                   ct_rows: list[dict], ndim: int, case: dict | None = None) -> list[dict]:
    diffs = []
    dt_out = _key_part(dt_choice["out"], ndim)
    ct_out = _key_part(ct_choice["out"], ndim)
    dt_in = tuple(_key_part(i, ndim, True) for i in dt_choice["in"])
    ct_in = tuple(_key_part(i, ndim, True) for i in ct_choice["in"])
    if dt_out == ct_out and dt_in == ct_in:
        return diffs
    kind = "choice_out" if dt_out != ct_out else "choice_in"
    rec = {"kind": kind,
           "dtensor": row_text({"out": dt_choice["out"], "in": dt_choice["in"]}),
           "ctshard": row_text({"out": ct_choice["out"], "in": ct_choice["in"]}),
           "ctshard_rule": ct_choice.get("rule")}
    if case is not None:
        # why DTensor's choice may be missing from ctshard's table (row_tags of that row)
        rec["dtensor_choice_tags"] = sorted(row_tags({"out": dt_choice["out"], "in": dt_choice["in"]}, case)
                                            - {"current_inputs"})
        rec["ctshard_choice_tags"] = sorted(row_tags({"out": ct_choice["out"], "in": ct_choice["in"]}, case)
                                            - {"current_inputs"})
    # price both choices in both tables: tells a tie / tie-rule difference from a cost difference
    dt_tot_dt = _find_total(dt_rows or [], dt_choice["out"], dt_choice["in"], ndim)
    ct_tot_dt = _find_total(dt_rows or [], ct_choice["out"], ct_choice["in"], ndim)
    dt_tot_ct = _find_total(ct_rows, dt_choice["out"], dt_choice["in"], ndim)
    ct_tot_ct = _find_total(ct_rows, ct_choice["out"], ct_choice["in"], ndim)
    rec["totals"] = {"dtensor_choice_in_dtensor": dt_tot_dt, "ctshard_choice_in_dtensor": ct_tot_dt,
                     "dtensor_choice_in_ctshard": dt_tot_ct, "ctshard_choice_in_ctshard": ct_tot_ct}
    for k, v in list(rec["totals"].items()):
        if v is not None and math.isinf(v):
            rec["totals"][k] = "inf"
    if dt_tot_ct is None:
        rec["note"] = "dtensor's choice is not a row of ctshard's table"
    elif ct_tot_dt is None and dt_rows:
        rec["note"] = "ctshard's choice is not a row of dtensor's table"
    elif dt_tot_ct is not None and ct_tot_ct is not None and abs(dt_tot_ct - ct_tot_ct) <= 1e-9 * max(1.0, abs(ct_tot_ct)):
        rec["note"] = "tie in ctshard's table (tie rule)"
    diffs.append(rec)
    return diffs


def compare_case(case: dict, dt: dict, ct: dict | None, ct_error: str | None) -> dict:
    """One case's comparison record:
    {"id", "op", "family", "strategy_kind", "strategies_identical", "choice_identical",
     "differences": [...]}.  `strategies_identical` / `choice_identical` are None when the side
    could not be compared (errors, no strategy set)."""
    ndim = len(case["mesh"])
    rec: dict[str, Any] = {"id": case["id"], "op": case["op"], "family": case.get("family"),
                           "strategy_kind": dt.get("kind"), "strategies_identical": None,
                           "strategies_subset": None,
                           "choice_identical": None, "differences": []}
    diffs: list[dict] = rec["differences"]
    dt_err = dt.get("strategies_error") or dt.get("choice_error")
    if dt_err and ct is None and ct_error and "DTensor 2.13 raises" in ct_error:
        # the dtensor rule set ports DTensor's op-strategy functions, errors included: both refuse
        rec["both_refuse"] = True
        rec["strategies_identical"] = rec["strategies_subset"] = rec["choice_identical"] = True
        return rec
    if dt.get("strategies_error") and dt.get("choice_error"):
        diffs.append({"kind": "dtensor_error", "error": dt["choice_error"]})
    elif dt_err:
        diffs.append({"kind": "dtensor_error", "error": dt_err,
                      "part": "strategies" if dt.get("strategies_error") else "choice"})
    if ct is None:
        diffs.append({"kind": "ctshard_error", "error": ct_error})
        return rec
    from ctshard_side import chosen, strategies as ct_strategies
    ct_rows = ct_strategies(ct)
    dt_rows = dt.get("strategies")
    ct_choice = chosen(ct)
    # outputs DTensor's propagation leaves without a spec (non-tensor returns such as SDPA's
    # max_q, masked-off gradients of layer-norm backward): blank them on both sides
    dch = dt.get("choice")
    if dch is not None and isinstance(dch.get("out"), list):
        blank = [i for i, o in enumerate(dch["out"]) if o is None]
        if blank:
            def _blank(r):
                if isinstance(r.get("out"), list):
                    r = dict(r)
                    r["out"] = [None if i in blank else o for i, o in enumerate(r["out"])]
                return r
            ct_rows = [_blank(r) for r in ct_rows]
            dt_rows = [_blank(r) for r in dt_rows] if dt_rows is not None else None
            ct_choice = _blank(ct_choice) if ct_choice else ct_choice
            rec["blanked_outputs"] = blank
    if dt_rows is not None:
        sharded = any(re.search(r"(?<!_)S\(", t["spec"]) for t in case["tensors"])
        sd = compare_strategies(dt_rows, ct_rows, ndim, subset_mode=(dt.get("kind") == "op_strategy"),
                                inputs_sharded=sharded, case=case)
        diffs.extend(sd)
        rec["strategies_identical"] = not sd
        rec["strategies_subset"] = not any(
            d["kind"] in ("rows_missing_in_ctshard", "cost_mismatch") for d in sd)
        rec["dtensor_rows"] = len(dt_rows)
        rec["ctshard_rows"] = len(ct_rows)
    if dt.get("choice") is not None and ct_choice is not None:
        cd = compare_choice(dt["choice"], ct_choice, dt_rows, ct_rows, ndim, case)
        sharded_in = any(re.search(r"(?<!_)S\(", t["spec"]) for t in case["tensors"])
        for d in cd:
            if dt.get("kind") == "op_strategy":
                d["dtensor_kind"] = "op_strategy"
            if not sharded_in:
                d["no_sharded_input"] = True
            t = d["totals"]
            a, b = t["dtensor_choice_in_ctshard"], t["ctshard_choice_in_ctshard"]
            if a is not None and b is not None:
                a = math.inf if a == "inf" else a
                b = math.inf if b == "inf" else b
                if b < a - 1e-9 * max(1.0, abs(a) if a != math.inf else 1.0):
                    d["ctshard_cheaper"] = True
                elif (b == a) or (a != math.inf and abs(a - b) <= 1e-9 * max(1.0, abs(a))):
                    d["ctshard_same_cost"] = True
        diffs.extend(cd)
        rec["choice_identical"] = not cd
    elif dt.get("choice") is not None and ct_choice is None:
        diffs.append({"kind": "ctshard_error", "error": "ctshard table has no chosen row",
                      "part": "choice"})
    return rec


def summary_text(d: dict) -> str:
    """One line per difference, the text `known_differences.json` patterns are matched against."""
    k = d["kind"]
    if k in ("rows_missing_in_ctshard", "rows_extra_in_ctshard"):
        tag = " [no sharded input]" if d.get("no_sharded_input") else ""
        tag += "".join(f" [{t}]" for t in d.get("row_tags", []))
        if d.get("row_tags_all"):
            tag += f" [all rows: {','.join(d['row_tags_all'])}]"
        tag += " [dtensor op_strategy]" if d.get("dtensor_kind") == "op_strategy" else ""
        return f"{k}{tag}: " + " | ".join(d["rows"])
    if k == "cost_mismatch":
        tag = " [dtensor row without costs]" if d.get("dtensor_no_cost") else ""
        return f"{k}{tag}: " + " | ".join(f"{r['row']} dtensor={r['dtensor']} ctshard={r['ctshard']}" for r in d["rows"])
    if k in ("choice_out", "choice_in"):
        tag = " [no sharded input]" if d.get("no_sharded_input") else ""
        tag += " [dtensor op_strategy]" if d.get("dtensor_kind") == "op_strategy" else ""
        tag += " [ctshard cheaper by its costs]" if d.get("ctshard_cheaper") else ""
        tag += " [ctshard same cost]" if d.get("ctshard_same_cost") else ""
        if d.get("dtensor_choice_tags"):
            tag += f" [dtensor choice: {','.join(d['dtensor_choice_tags'])}]"
        if d.get("ctshard_choice_tags"):
            tag += f" [ctshard choice: {','.join(d['ctshard_choice_tags'])}]"
        if (d.get("totals") or {}).get("ctshard_choice_in_dtensor") == "inf":
            tag += " [dtensor prices ctshard's choice inf]"
        return f"{k}{tag}: dtensor {d['dtensor']} ctshard {d['ctshard']} {d.get('note', '')}"
    return f"{k}: {d.get('error')}"
