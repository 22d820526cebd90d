#!/usr/bin/env python3
"""Writes a synthetic aten FX graph of N nodes (default 10^6) for `ctshard plan` scale runs.

The body repeats an MLP-like step over a [B, D] activation: mm with a weight, add a bias,
relu, a view to [B, H, D/H] and back, and a sum over a dim every 8th step (so reductions and
views are planned too); every node is annotated as print_readable() prints it.
    python3 benchmarks/large/make_large_graph.py --nodes 1000000 > /tmp/large.fx.txt
"""
import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=1_000_000, help="total nodes, placeholders and output included")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    a = ap.parse_args()
    b, d, h = a.batch, a.dim, a.heads
    out = sys.stdout
    out.write("class GraphModule(torch.nn.Module):\n")
    out.write(f'    def forward(self, x: "f32[{b}, {d}]", w: "f32[{d}, {d}]", bias: "f32[{d}]"):\n')
    count = 4  # three placeholders and the output
    cur = "x"
    i = 0
    lines = []
    while count < a.nodes:
        step = [
            (f"mm_{i}", f'"f32[{b}, {d}]"', f"torch.ops.aten.mm.default({cur}, w)"),
            (f"add_{i}", f'"f32[{b}, {d}]"', f"torch.ops.aten.add.Tensor(mm_{i}, bias)"),
            (f"relu_{i}", f'"f32[{b}, {d}]"', f"torch.ops.aten.relu.default(add_{i})"),
            (f"view_{i}", f'"f32[{b}, {h}, {d // h}]"', f"torch.ops.aten.view.default(relu_{i}, [{b}, {h}, {d // h}])"),
            (f"flat_{i}", f'"f32[{b}, {d}]"', f"torch.ops.aten.view.default(view_{i}, [{b}, {d}])"),
        ]
        if i % 8 == 7:
            step.append((f"sum_{i}", f'"f32[{b}, 1]"', f"torch.ops.aten.sum.dim_IntList(flat_{i}, [1], True)"))
            step.append((f"scaled_{i}", f'"f32[{b}, {d}]"', f"torch.ops.aten.mul.Tensor(flat_{i}, sum_{i})"))
        for name, ty, rhs in step:
            if count >= a.nodes:
                break
            out.write(f"        {name}: {ty} = {rhs}\n")
            cur = name if ty == f'"f32[{b}, {d}]"' else cur
            count += 1
        i += 1
    out.write(f"        return ({cur},)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
