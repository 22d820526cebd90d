#!/usr/bin/env python3
"""Compile-time cost of mesh expansion: wall time and peak compiler memory of expanding a 5-row
single-dim rule to N = 1..5 mesh dims (5^N rows, laws static_asserted), minus a headers-only
baseline; median of 3 runs per point, g++ and clang++. Prints a Markdown table.

Usage: benchmarks/compile/compile_time.py [--compilers g++ clang++] [--max-n 5] [--runs 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "..", "..", "include")


def measure(compiler, n, src, out):
    """(wall seconds, peak RSS MiB) of one compile, via GNU time's %e and %M."""
    cmd = ["/usr/bin/time", "-f", "%e %M", compiler, "-std=c++20", "-O0", "-fsyntax-only",
           f"-DCTSHARD_BENCH_N={n}", "-I", INCLUDE, src]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"compile failed for N={n} with {compiler}:\n{res.stderr[-2000:]}")
    wall, rss_kb = res.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kb) / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compilers", nargs="+", default=["g++", "clang++"])
    ap.add_argument("--max-n", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not os.path.exists("/usr/bin/time"):
        sys.exit("needs GNU time (/usr/bin/time, Debian package 'time')")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "expand.cpp")
        with open(os.path.join(HERE, "expand_tu.cpp.in")) as f, open(src, "w") as g:
            g.write(f.read())
        print("| compiler | N | rows (5^N) | wall s (median) | wall − baseline s | peak MiB | peak − baseline MiB |")
        print("|---|---|---|---|---|---|---|")
        for cxx in args.compilers:
            base = [measure(cxx, 0, src, tmp) for _ in range(args.runs)]
            bw, bm = statistics.median(b[0] for b in base), statistics.median(b[1] for b in base)
            print(f"| {cxx} | 0 (baseline) | – | {bw:.2f} | – | {bm:.0f} | – |")
            for n in range(1, args.max_n + 1):
                runs = [measure(cxx, n, src, tmp) for _ in range(args.runs)]
                w, m = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
                print(f"| {cxx} | {n} | {5 ** n} | {w:.2f} | {w - bw:+.2f} | {m:.0f} | {m - bm:+.0f} |", flush=True)


if __name__ == "__main__":
    main()
