#!/usr/bin/env python3
"""Compile-time cost of mesh expansion: wall time and peak compiler memory of expanding a 5-row
single-dim rule to N = 1..5 mesh dims (5^N rows, laws static_asserted), minus a headers-only
baseline; median of 3 runs per point, g++ and clang++. Prints a Markdown table.

--umbrella instead measures the umbrella headers (<ctshard/ctshard.hpp>, rules.hpp, runtime.hpp,
registry.hpp) against <boost/mp11.hpp> + <boost/hana.hpp>, then DTensor's mm rule (8 rows)
expanded to N = 1..max-n over <ctshard/ctshard.hpp>. The points are measured in interleaved
rounds (one compile of each per round) and reported as medians of CPU time (user + system) and
peak memory, which a shared machine disturbs less than wall time; the ratio column is the median
of the per-round ratios to Mp11 + Hana. --include measures another tree's headers (a checkout
of an older commit) for before / after figures.

Usage: benchmarks/compile/compile_time.py [--compilers g++ clang++] [--max-n 5] [--runs 3]
                                          [--umbrella [--include DIR]]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "..", "..", "include")


def measure(compiler, n, src, out, defines=(), include=INCLUDE):
    """(wall seconds, peak RSS MiB) of one compile, via GNU time's %e and %M."""
    wall, rss, _ = measure_cpu(compiler, n, src, defines, include)
    return wall, rss


def measure_cpu(compiler, n, src, defines=(), include=INCLUDE):
    """(wall seconds, peak RSS MiB, CPU seconds user + system) of one compile, via GNU time."""
    cmd = ["/usr/bin/time", "-f", "%e %M %U %S", compiler, "-std=c++20", "-O0", "-fsyntax-only",
           f"-DCTSHARD_BENCH_N={n}", *defines, "-I", include, src]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"compile failed for N={n} {defines} with {compiler}:\n{res.stderr[-2000:]}")
    wall, rss_kb, user, system = res.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kb) / 1024.0, float(user) + float(system)


def interleaved(runs, compiler, points, src, include):
    """points: {name: (n, defines)}. Returns {name: [(wall, peak, cpu) per round]}, one compile of
    every point per round, so that load on a shared machine falls on all points alike."""
    out = {name: [] for name in points}
    for _ in range(runs):
        for name, (n, defines) in points.items():
            out[name].append(measure_cpu(compiler, n, src, defines, include))
    return out


def umbrella(args, tmp):
    """The umbrella headers against Mp11 + Hana, then the 8-row mm rule swept over N."""
    src = os.path.join(tmp, "umbrella.cpp")
    with open(os.path.join(HERE, "umbrella_tu.cpp.in")) as f, open(src, "w") as g:
        g.write(f.read())
    include = os.path.abspath(args.include)
    headers = [(3, "`<boost/mp11.hpp>` + `<boost/hana.hpp>`")]
    for code, name in ((1, "ctshard.hpp"), (4, "rules.hpp"), (5, "runtime.hpp"), (2, "registry.hpp")):
        if os.path.exists(os.path.join(include, "ctshard", name)):
            headers.append((code, f"`<ctshard/{name}>`"))
    med = statistics.median
    print(f"Headers from `{include}`; {args.runs} interleaved rounds, medians.\n")
    print("| compiler | translation unit | CPU s | peak MiB | CPU / Mp11+Hana | peak / Mp11+Hana |")
    print("|---|---|---|---|---|---|")
    for cxx in args.compilers:
        res = interleaved(args.runs, cxx, {name: (0, [f"-DCTSHARD_BENCH_HEADERS={code}"]) for code, name in headers}, src, include)
        base = res[headers[0][1]]
        for _, name in headers:
            r = res[name]
            ratio = med(a[2] / b[2] for a, b in zip(r, base))
            print(f"| {cxx} | {name} | {med(x[2] for x in r):.2f} | {med(x[1] for x in r):.0f} | "
                  f"{ratio:.2f}x | {med(x[1] for x in r) / med(x[1] for x in base):.2f}x |", flush=True)
    print()
    print("| compiler | N | rows (8^N) | CPU s | CPU − `ctshard.hpp` s | peak MiB | peak − `ctshard.hpp` MiB |")
    print("|---|---|---|---|---|---|---|")
    for cxx in args.compilers:
        points = {n: (n, ["-DCTSHARD_BENCH_HEADERS=1"]) for n in range(0, args.max_n + 1)}
        res = interleaved(args.runs, cxx, points, src, include)
        bc, bm = med(x[2] for x in res[0]), med(x[1] for x in res[0])
        print(f"| {cxx} | 0 (`ctshard.hpp` only) | – | {bc:.2f} | – | {bm:.0f} | – |")
        for n in range(1, args.max_n + 1):
            c, m = med(x[2] for x in res[n]), med(x[1] for x in res[n])
            print(f"| {cxx} | {n} | {8 ** n} | {c:.2f} | {c - bc:+.2f} | {m:.0f} | {m - bm:+.0f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compilers", nargs="+", default=["g++", "clang++"])
    ap.add_argument("--max-n", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--umbrella", action="store_true", help="umbrella headers vs Mp11 + Hana, and the 8-row mm rule over N")
    ap.add_argument("--include", default=INCLUDE, help="include directory to measure (--umbrella)")
    args = ap.parse_args()
    if not os.path.exists("/usr/bin/time"):
        sys.exit("needs GNU time (/usr/bin/time, Debian package 'time')")
    with tempfile.TemporaryDirectory() as tmp:
        if args.umbrella:
            umbrella(args, tmp)
            return
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
