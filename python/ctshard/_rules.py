"""Rules for the user's own ops: ``register_rule`` / ``unregister_rule`` / ``registered_rules``
(``check_rule``, in ``_check.py``, checks one numerically on a simulated mesh).

A rule is a *single-dim strategy*: rows ``[out..., in...]`` of placements valid on one mesh dim
(``"R"``, ``"S(d)"``, ``"P(sum)"``, ``"S?(d)"``: a shard of tensor dim d of whatever kind the inputs
bring), which ctshard expands to the mesh and filters exactly like a built-in rule (DTensor:
``register_single_dim_strategy``; ``register_sharding`` for custom ops). Registered rules apply to
``table``, ``choose``, ``plan`` and ``ctshard.torch.auto_parallel`` in this process; a rule for an
op that has a built-in rule replaces it until ``unregister_rule``. See docs/custom_rules.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import _ext

__all__ = ["register_rule", "unregister_rule", "registered_rules"]

_KINDS = ("identity", "pointwise", "replicate")


def _spec(op: str, rows: Any, outputs: Any, kind: Any, uneven: Any, where: str) -> dict:
    if not isinstance(op, str) or not op:
        raise ValueError(f"{where}: op must be the op's overload name ('mylib.rope.default'), got {op!r}")
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"{where} ('{op}'): unknown kind {kind!r} (identity, pointwise or replicate)")
    if isinstance(outputs, bool) or not isinstance(outputs, int):
        raise ValueError(f"{where} ('{op}'): outputs must be an integer, got {outputs!r}")
    spec: dict[str, Any] = {"op": op, "outputs": outputs}
    if kind is not None:
        spec["kind"] = kind
    if rows is not None:
        if isinstance(rows, str) or not isinstance(rows, Sequence):
            raise ValueError(f"{where} ('{op}'): rows must be a list of rows (lists of placement strings), got {rows!r}")
        spec["rows"] = [list(r) if isinstance(r, Sequence) and not isinstance(r, str) else r for r in rows]
    if uneven is not None:
        spec["uneven"] = uneven
    return spec


def register_rule(
    op: str,
    rows: Sequence[Sequence[str]] | None = None,
    *,
    outputs: int = 1,
    kind: str | None = None,
    fn: Callable[[list, list, dict], Sequence[Sequence[str]]] | None = None,
    uneven: str | None = None,
) -> None:
    """Registers the sharding rule of ``op`` (``"mylib.rope.default"``) for this process.

    rows: single-dim rows ``[out..., in...]`` as placement strings, ``outputs`` outputs first, one
        entry per tensor input after them: ``[["S?(0)", "S?(0)", "R"], ["S?(1)", "S?(1)", "R"]]``.
        No all-Replicate row is needed (ctshard inserts it). With ``kind``, extra rows appended to
        the kind's (a pointwise op's sound Partial rows).
    kind: ``"identity"`` (output = its one tensor input: every dim and every Partial pass
        through), ``"pointwise"`` (elementwise over broadcast inputs; no Partial row unless given
        in ``rows``) or ``"replicate"`` (only the all-Replicate row).
    fn: ``fn(shapes, args, kwargs) -> rows`` for a rule that depends on the call: ``shapes`` the
        tensor inputs' global shapes, ``args`` / ``kwargs`` the arguments with tensor inputs as
        ``"$i"``. Called once per distinct call.
    uneven: which unevenly shardable inputs still pass (``"reject"``, the default, or
        ``"keep_current"``, ``"keep_existing_shards"``, ``"unchecked"``).

    Give exactly one of ``rows``, ``kind`` (optionally with ``rows``) and ``fn``. Raises ValueError
    naming the rule and the entry (an unknown kind, a row of the wrong length, a bad placement);
    a rule that does not fit a call (a tensor count other than its rows', a placeholder dim past
    its tensor's rank) raises ValueError from ``table`` / ``plan`` naming the node, the row and
    the entry.
    """
    where = "ctshard.register_rule"
    if fn is not None and (rows is not None or kind is not None):
        raise ValueError(f"{where} ('{op}'): give fn alone, or rows / kind")
    if fn is None and rows is None and kind is None:
        raise ValueError(f"{where} ('{op}'): give rows, a kind or fn")
    if fn is not None and not callable(fn):
        raise ValueError(f"{where} ('{op}'): fn must be callable, got {fn!r}")
    _ext.register_rule(op, _spec(op, rows, outputs, kind, uneven, where), fn)


def unregister_rule(op: str) -> None:
    """Removes the rule registered for ``op`` (a built-in rule it replaced applies again). Raises
    ValueError when ``op`` has no registered rule."""
    if not _ext.unregister_rule(op):
        raise ValueError(f"ctshard.unregister_rule: '{op}' has no registered rule")


def registered_rules() -> dict:
    """The registered rules: op -> ``{"op", "outputs", "rows" / "kind", ...}`` as registered."""
    return _ext.registered_rules()
