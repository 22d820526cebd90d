#!/usr/bin/env python3
"""atheris fuzz target for the Python entry points of ctshard (table, choose, cost, plan,
format_spec): arbitrary text and nested Python values as arguments. Only ValueError / TypeError
(the documented errors) may come out; anything else, or a crash of the extension, is a finding.

    python3 tests/fuzz/python/fuzz_api.py -runs=100000 [corpus_dir]
(atheris is `pip install atheris==2.3.0`; scripts/setup-python.sh installs it with CTSHARD_FUZZ=1.)
"""
import sys

import atheris

with atheris.instrument_imports():
    import ctshard

OPS = ["mm", "einsum:ij,jk->ik", "aten.view.default", "aten.sum.dim_IntList", "aten.cat.default", "aten.split.Tensor",
       "aten.index.Tensor", "aten.native_layer_norm.default", "aten.add.Tensor", "pointwise:mul", "aten.permute.default"]


def value(fdp: atheris.FuzzedDataProvider, depth: int = 0):
    kind = fdp.ConsumeIntInRange(0, 8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.ConsumeIntInRange(-8, 64)
    if kind == 3:
        return fdp.ConsumeInt(9)  # up to 2^71: beyond int64 too
    if kind == 4:
        return fdp.ConsumeRegularFloat()
    if kind == 5:
        return fdp.ConsumeUnicodeNoSurrogates(8) if fdp.ConsumeBool() else f"${fdp.ConsumeIntInRange(0, 4)}"
    n = fdp.ConsumeIntInRange(0, 4)
    if kind == 8:
        return {fdp.ConsumeUnicodeNoSurrogates(6): value(fdp, depth + 1) for _ in range(n)}
    return [value(fdp, depth + 1) for _ in range(n)]


def shape(fdp: atheris.FuzzedDataProvider):
    return [fdp.ConsumeIntInRange(0, 16) if fdp.ConsumeProbability() < 0.9 else fdp.ConsumeInt(8)
            for _ in range(fdp.ConsumeIntInRange(0, 4))]


def test_one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    which = fdp.ConsumeIntInRange(0, 4)
    mesh = [fdp.ConsumeIntInRange(1, 4) for _ in range(fdp.ConsumeIntInRange(1, 3))]
    try:
        if which in (0, 1):
            n = fdp.ConsumeIntInRange(0, 3)
            op = OPS[fdp.ConsumeIntInRange(0, len(OPS) - 1)] if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(24)
            inputs = [fdp.ConsumeUnicodeNoSurrogates(12) if fdp.ConsumeBool() else "R" * len(mesh) for _ in range(n)]
            args = value(fdp) if fdp.ConsumeBool() else None
            args = args if isinstance(args, list) or args is None else [args]
            fn = ctshard.table if which == 0 else ctshard.choose
            fn(op, [shape(fdp) for _ in range(n)], mesh, inputs, args=args)
        elif which == 2:
            ctshard.cost(shape(fdp), mesh, fdp.ConsumeUnicodeNoSurrogates(16), fdp.ConsumeUnicodeNoSurrogates(16))
        elif which == 3:
            ctshard.plan(fdp.ConsumeUnicodeNoSurrogates(4096), mesh=tuple(mesh))
        else:
            ctshard.format_spec(fdp.ConsumeUnicodeNoSurrogates(32))
    except (ValueError, TypeError, OverflowError):
        pass


def main() -> None:
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
