"""``ctshard check-rule`` (and ``python -m ctshard check-rule``): ``ctshard.check_rule`` from the command line, for the rules of a
rules file (docs/custom_rules.md) or the built-in rules, with a reference torch has.

    python -m ctshard check-rule --rules rules.json --op mylib.rope.default \\
        --reference mymodule.rope_reference --shapes 4x6x2x8,6x4 --mesh 2

Prints the check's JSON document; exits 0 when every row is right, 1 when some row is wrong, 2 on
bad input (the message names it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys


def _reference(name: str):
    """A dotted path (``torch.nn.functional.gelu``, ``mymodule.fn``) or an op overload name torch
    has (``aten.gelu.default``)."""
    import torch

    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:]:
                obj = getattr(obj, p)
            return obj
        except AttributeError:
            break
    obj = torch.ops
    try:
        for p in parts:
            obj = getattr(obj, p)
    except (AttributeError, RuntimeError):
        raise ValueError(f"--reference '{name}': neither a dotted path nor an op torch has (torch.ops.{name})") from None
    return obj


def _shapes(text: str) -> list[list[int]]:
    try:
        return [[] if s == "scalar" else [int(d) for d in s.split("x")] for s in text.split(",")]
    except ValueError:
        raise ValueError(f"--shapes '{text}': expected shapes like 4x6,6 ('scalar' for 0-d)") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ctshard")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check-rule", help="check a sharding rule on a simulated mesh against a reference")
    c.add_argument("--op", required=True, help="the op whose rule is checked (its rules-file rule, else the built-in one)")
    c.add_argument("--reference", required=True, help="torch.nn.functional.gelu, aten.gelu.default, mymodule.fn")
    c.add_argument("--shapes", required=True, help="global shapes of the tensor inputs: 4x6,6")
    c.add_argument("--mesh", required=True, help="mesh sizes: 2 or 2x2")
    c.add_argument("--rules", help="rules file (JSON: {\"rules\": [...]})")
    c.add_argument("--args", default=None, help="non-tensor arguments as a JSON array (\"$i\" for tensor i)")
    c.add_argument("--kwargs", default=None, help="keyword arguments as a JSON object")
    ns = parser.parse_args(argv)

    import ctshard
    from . import _ext

    try:
        registered = []
        if ns.rules:
            with open(ns.rules, encoding="utf-8") as f:
                try:
                    doc = json.load(f)
                except json.JSONDecodeError as e:
                    raise ValueError(f"--rules {ns.rules}: not JSON: {e}") from None
            rules = doc.get("rules") if isinstance(doc, dict) else doc
            if not isinstance(rules, list):
                raise ValueError(f"--rules {ns.rules}: a rules file is {{\"rules\": [...]}}")
            for i, rule in enumerate(rules):
                op = rule.get("op") if isinstance(rule, dict) else None
                if not isinstance(op, str):
                    raise ValueError(f"{ns.rules}: rule {i}: \"op\" must name the op")
                _ext.register_rule(op, rule, None)  # the C++ rules-file parser: the same checks and messages
                registered.append(op)
        try:
            result = ctshard.check_rule(ns.op, _reference(ns.reference), _shapes(ns.shapes), [int(m) for m in ns.mesh.split("x")],
                                        args=json.loads(ns.args) if ns.args else None,
                                        kwargs=json.loads(ns.kwargs) if ns.kwargs else None)
        finally:
            for op in registered:
                ctshard.unregister_rule(op)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1

