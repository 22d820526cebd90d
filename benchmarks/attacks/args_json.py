#!/usr/bin/env python3
"""`table --args` documents that cost the reader the most memory per input byte
(docs/robustness.md, "table --args memory").

    python3 benchmarks/attacks/args_json.py OUT.json [--mb 24] [--kind empty-lists|mixed|ints]

empty-lists: [[],[],...] (3 bytes a value, the costliest); mixed: [1,"a",1,"a",...] (a mixed
list: every item a full argument record); ints: [1,1,...] (a flat int list, the cheapest).
Run with /usr/bin/time -v build/examples/ctshard table --op aten.view.default --shapes 32
--mesh 2 --inputs R --args @OUT.json and read "Maximum resident set size".
"""

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=24)
    ap.add_argument("--kind", choices=["empty-lists", "mixed", "ints"], default="empty-lists")
    a = ap.parse_args()
    item = {"empty-lists": "[]", "mixed": '1,"a"', "ints": "1"}[a.kind]
    n = max(1, int(a.mb * 1e6) // (len(item) + 1))
    with open(a.out, "w") as f:
        f.write("[" + ",".join([item] * n) + "]")


if __name__ == "__main__":
    main()
