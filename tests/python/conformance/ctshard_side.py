"""ctshard's answer for a case (see dtensor_oracle.py for the case format).

Uses the Python package `ctshard` (`ctshard.table(...)`) when it imports, else the CLI
`ctshard table ... --json`.  The binary is looked up in $CTSHARD_BIN (or $CTSHARD_TOOL, as
tests/python/conftest.py names it), then
<repo>/build/examples/ctshard; it is copied once per process so that a rebuild in the
middle of a run does not mix versions.

Call forms:
* legacy: the tensors are the leading positional args (`args[:k] == ["$0", .., "$k-1"]`),
  no other "$i" anywhere, one dtype for all tensors -> `--args` holds `args[k:]`.
* refs: otherwise `args` / `kwargs` are passed whole with "$i" strings (tensor i), and
  `dtype` is a list when the tensors' dtypes differ.  These need the "tensor refs" /
  "dtype list" features; `features()` probes whether the current build has them, and
  `needs(case)` says which a case needs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]

DEVICES_PER_HOST = 1  # DTensor on CPU: torch.cpu.device_count() == 1


class CtshardError(Exception):
    pass


# ---------------------------------------------------------------------------------------
# call shape

def _refs_in(v: Any) -> list[int]:
    if isinstance(v, str) and v.startswith("$"):
        return [int(v[1:])]
    if isinstance(v, (list, tuple)):
        r: list[int] = []
        for x in v:
            r.extend(_refs_in(x))
        return r
    if isinstance(v, dict):
        r = []
        for x in v.values():
            r.extend(_refs_in(x))
        return r
    return []


def legacy_split(case: dict) -> list | None:
    """The non-tensor args after the tensors, or None when the call cannot be written that way."""
    args = case.get("args", [])
    k = len(case["tensors"])
    if [a for a in args[:k]] != [f"${i}" for i in range(k)]:
        return None
    rest = args[k:]
    if _refs_in(rest) or _refs_in(case.get("kwargs", {})):
        return None
    return list(rest)


def dtypes_of(case: dict) -> list[str]:
    """The tensors' dtypes under their torch names (ctshard takes uint16/uint32/uint64 as well as
    the FX short forms u16/u32/u64)."""
    return [t.get("dtype", "float32") for t in case["tensors"]]


def needs(case: dict) -> list[str]:
    """Features of ctshard this case's call needs beyond the legacy form."""
    r = []
    if legacy_split(case) is None:
        r.append("tensor_refs")
    if len(set(dtypes_of(case))) > 1:
        r.append("dtype_list")
    return r


def shape_text(shape: list[int]) -> str:
    return "scalar" if len(shape) == 0 else "x".join(str(s) for s in shape)


# ---------------------------------------------------------------------------------------
# backends

_bin_copy: str | None = None


def binary() -> str:
    global _bin_copy
    if _bin_copy is not None and os.path.exists(_bin_copy):
        return _bin_copy
    src = (os.environ.get("CTSHARD_BIN") or os.environ.get("CTSHARD_TOOL")
           or str(REPO / "build" / "examples" / "ctshard"))
    if not os.path.exists(src):
        raise CtshardError(f"ctshard binary not found at {src} (build: bash scripts/build.sh --target ctshard_tool)")
    d = tempfile.mkdtemp(prefix="ctshard_conf_")
    dst = os.path.join(d, "ctshard")
    shutil.copy2(src, dst)
    _bin_copy = dst
    return dst


_pkg = None
_pkg_checked = False


def package():
    """The `ctshard` Python module if it imports and has `table`, else None.
    CTSHARD_BACKEND=cli forces the CLI."""
    global _pkg, _pkg_checked
    if _pkg_checked:
        return _pkg
    _pkg_checked = True
    if os.environ.get("CTSHARD_BACKEND", "") == "cli":
        return None
    try:
        import ctshard  # type: ignore

        if hasattr(ctshard, "table"):
            _pkg = ctshard
    except Exception:  # noqa: BLE001
        _pkg = None
    return _pkg


def backend_name() -> str:
    return "python" if package() is not None else "cli"


def _call_cli(op: str, shapes: list[list[int]], mesh: list[int], inputs: list[str], args: list,
              kwargs: dict, dtype: str | list[str], einsum_linearity: str, partial_passthrough: str = "ctshard",
              rule_set: str = "ctshard") -> dict:
    cmd = [binary(), "table", "--op", op,
           "--shapes", ",".join(shape_text(s) for s in shapes),
           "--mesh", "x".join(str(m) for m in mesh),
           "--inputs", ";".join(inputs),
           "--devices-per-host", str(DEVICES_PER_HOST),
           "--dtype", dtype if isinstance(dtype, str) else ",".join(dtype),
           "--einsum-linearity", einsum_linearity,
           "--partial-passthrough", partial_passthrough,
           "--json"]
    if rule_set != "ctshard":
        cmd += ["--rule-set", rule_set]
    if args:
        cmd += ["--args", json.dumps(args)]
    if kwargs:
        cmd += ["--kwargs", json.dumps(kwargs)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise CtshardError((p.stderr or p.stdout).strip()[:600])
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise CtshardError(f"bad JSON from ctshard: {e}: {p.stdout[:200]}") from e


def _call_pkg(op, shapes, mesh, inputs, args, kwargs, dtype, einsum_linearity, partial_passthrough="ctshard",
              rule_set="ctshard") -> dict:
    pkg = package()
    extra = {"rule_set": rule_set} if rule_set != "ctshard" else {}
    try:
        r = pkg.table(op, shapes, mesh, inputs, args=args, kwargs=kwargs, dtype=dtype,
                      devices_per_host=DEVICES_PER_HOST, einsum_linearity=einsum_linearity,
                      partial_passthrough=partial_passthrough, **extra)
    except ValueError as e:
        raise CtshardError(str(e)[:600]) from e
    if isinstance(r, str):
        r = json.loads(r)
    return r


def table_raw(op, shapes, mesh, inputs, args=None, kwargs=None, dtype="float32",
              einsum_linearity="dtensor", partial_passthrough="ctshard", rule_set="ctshard") -> dict:
    args = args or []
    kwargs = kwargs or {}
    if package() is not None:
        return _call_pkg(op, shapes, mesh, inputs, args, kwargs, dtype, einsum_linearity, partial_passthrough, rule_set)
    return _call_cli(op, shapes, mesh, inputs, args, kwargs, dtype, einsum_linearity, partial_passthrough, rule_set)


# ---------------------------------------------------------------------------------------
# features

_features: dict[str, bool] | None = None


def features() -> dict[str, bool]:
    """Which of the new call features the current ctshard accepts (probed once)."""
    global _features
    if _features is not None:
        return _features
    f = {}
    try:
        table_raw("aten.cat.default", [[2, 3], [2, 3]], [2], ["R", "R"], args=[["$0", "$1"], 0])
        f["tensor_refs"] = True
    except CtshardError:
        f["tensor_refs"] = False
    try:
        table_raw("aten.embedding.default", [[6, 4], [3]], [2], ["R", "R"],
                  dtype=["float32", "int64"])
        f["dtype_list"] = True
    except CtshardError:
        f["dtype_list"] = False
    _features = f
    return f


def missing_features(case: dict) -> list[str]:
    f = features()
    return [n for n in needs(case) if not f.get(n, False)]


# ---------------------------------------------------------------------------------------
# a case

def available() -> bool:
    """True when ctshard answers (the Python package or the tool), for the suites' skip marker."""
    try:
        ops()
        return True
    except Exception:  # noqa: BLE001
        return False


def ctshard_table(case: dict, einsum_linearity: str = "dtensor", partial_passthrough: str = "ctshard",
                  rule_set: str | None = None) -> dict:
    """ctshard's `table --json` dict for the case (``partial_passthrough``, ``rule_set`` as
    ``ctshard.table``; ``rule_set`` None: ``$CTSHARD_RULE_SET``, else "ctshard" — the suite's
    ``--rule-set`` mode sets it for its workers); raises CtshardError."""
    if rule_set is None:
        rule_set = os.environ.get("CTSHARD_RULE_SET", "ctshard")
    shapes = [t["shape"] for t in case["tensors"]]
    inputs = [t["spec"] for t in case["tensors"]]
    dts = dtypes_of(case)
    dtype: str | list[str] = dts[0] if len(set(dts)) == 1 else dts
    if not dts:
        dtype = "float32"
    rest = legacy_split(case)
    if rest is not None:
        args = rest
    else:
        args = case.get("args", [])
    return table_raw(case["op"], shapes, case["mesh"], inputs, args=args,
                     kwargs=case.get("kwargs", {}), dtype=dtype, einsum_linearity=einsum_linearity,
                     partial_passthrough=partial_passthrough, rule_set=rule_set)


def normalize_cost(c: Any) -> float:
    if isinstance(c, str):
        if c == "inf":
            return math.inf
        return float(c)
    return float(c)


def strategies(table: dict) -> list[dict]:
    """The table's rows as {out, in, cost} with float costs."""
    rows = []
    for s in table.get("strategies", []):
        rows.append({"out": s["out"], "in": list(s["in"]),
                     "cost": [normalize_cost(c) for c in s["cost"]]})
    return rows


def chosen(table: dict) -> dict | None:
    ch = table.get("choice")
    if not ch or ch.get("index") is None:
        return None
    i = ch["index"]
    rows = table.get("strategies", [])
    if not (0 <= i < len(rows)):
        return None
    r = rows[i]
    return {"out": r["out"], "in": list(r["in"]), "index": i, "rule": ch.get("rule")}


def ops() -> list[str]:
    pkg = package()
    if pkg is not None and hasattr(pkg, "ops"):
        r = pkg.ops()
        if isinstance(r, dict):
            r = r.get("ops", [])
        return list(r)
    p = subprocess.run([binary(), "ops", "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise CtshardError(p.stderr.strip())
    return json.loads(p.stdout)["ops"]


if __name__ == "__main__":
    print(backend_name(), features())
    print(json.dumps(ctshard_table({"op": "aten.mm.default", "mesh": [2],
                                    "tensors": [{"shape": [6, 5], "spec": "S(0)"},
                                                {"shape": [5, 4], "spec": "R"}],
                                    "args": ["$0", "$1"]}))[:500])
