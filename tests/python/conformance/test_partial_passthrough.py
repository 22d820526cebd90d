"""``partial_passthrough="dtensor"``: the ops through which ctshard passes a pending reduction
(clone, convert_element_type, the activation backwards' gradient, native_layer_norm_backward) get
DTensor 2.13's rows, checked against DTensor's own tables.

For each op of ``partial_passthrough_ops`` (include/ctshard/registry/builtin_registry.hpp), over
the conformance generator's cases plus one case per op whose first tensor (the one ctshard passes
through) is ``P(sum)``:
- DTensor 2.13 lists no row with a Partial input (the premise of the option);
- ctshard's default rows have such rows (in the Partial cases), and the option removes exactly
  those rows, and (filling placeholders as DTensor does) the Shard rows that only a Partial input
  reaches in ctshard's default fill (`placeholder_fill`), nothing else;
- with the option, a case whose first tensor is Partial gets DTensor's choice (same output and
  input specs), where ctshard's default keeps the Partial (no redistribution).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

pytest.importorskip("torch")

import cases as case_gen  # noqa: E402
import ctshard_side  # noqa: E402
from dtensor_oracle import run_case  # noqa: E402

OPS = [
    "aten.clone.default", "prims.convert_element_type.default", "aten.native_dropout_backward.default",
    "aten.gelu_backward.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
    "aten.threshold_backward.default", "aten.silu_backward.default", "aten.native_layer_norm_backward.default",
]


def _has_partial_input(row: dict) -> bool:
    return any("P(" in spec for spec in row["in"])


def _keys(rows: list[dict]) -> set[tuple]:
    return {(str(r["out"]), tuple(r["in"])) for r in rows}


def _reached_from_partial(row: dict, case: dict, table: dict) -> bool:
    """A row that only ctshard's `shard_from_partial` fill lists: a Shard input in a case with no
    sharded input (DTensor's fill drops every placeholder row there)."""
    no_shard = not any("S(" in t["spec"] for t in case["tensors"])
    return table.get("placeholder_fill") == "shard_from_partial" and no_shard and any("S(" in spec for spec in row["in"])


def _same_choice(ours: dict, dtensor: dict) -> bool:
    """Same input specs and output specs; DTensor's None outputs (gradients the op's output mask
    leaves out) match anything."""
    outs = lambda r: r["out"] if isinstance(r["out"], list) else [r["out"]]  # noqa: E731
    return ours["in"] == dtensor["in"] and all(d is None or o == d for o, d in zip(outs(ours), outs(dtensor)))


def _partial_first(case: dict) -> dict:
    """The case with its first tensor P(sum) on mesh dim 0 (Replicate elsewhere), the others
    Replicate."""
    out = dict(case)
    n = len(case["mesh"])
    out["tensors"] = [dict(t, spec=("P(sum)" + "R" * (n - 1)) if i == 0 else "R" * n)
                      for i, t in enumerate(case["tensors"])]
    return out


@pytest.mark.parametrize("op", OPS)
def test_dtensor_rows_for_partial_passthrough_ops(op):
    generated = case_gen.generate(op, n=6)
    assert generated, f"{op}: the conformance generator has no cases"
    partial_cases = [_partial_first(c) for c in generated[:3]]
    removed_somewhere = False
    for case in generated + partial_cases:
        dt = run_case(case)
        if dt["strategies"] is None:
            continue
        dt_partial = [r for r in dt["strategies"] if _has_partial_input(r)]
        assert not dt_partial, f"{op}: DTensor 2.13 lists Partial-input rows {dt_partial[:3]} for {case['tensors']}"
        ours_table = ctshard_side.ctshard_table(case)
        ours = ctshard_side.strategies(ours_table)
        faithful_table = ctshard_side.ctshard_table(case, partial_passthrough="dtensor")
        faithful = ctshard_side.strategies(faithful_table)
        assert faithful_table["placeholder_fill"] == "dtensor", op
        assert _keys(faithful) == _keys([r for r in ours if not _has_partial_input(r) and not _reached_from_partial(r, case, ours_table)]), op
        removed_somewhere |= len(faithful) < len(ours)
        if case in partial_cases and dt["choice"] is not None:
            mine = ctshard_side.chosen(faithful_table)
            assert mine is not None
            assert _same_choice(mine, dt["choice"]), f"{op} {case['tensors']}: ctshard {mine}, DTensor {dt['choice']}"
            kept = ctshard_side.chosen(ctshard_side.ctshard_table(case))
            assert kept is not None and _has_partial_input(kept), f"{op}: ctshard's default should keep the Partial: {kept}"
    assert removed_somewhere, f"{op}: the option removed no row in any case"
