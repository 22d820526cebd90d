"""ctshard.plan(algo="global", verbose=...): progress lines of a long solve on the process's
stderr only when asked, and the solver's peak memory in the statistics."""
from __future__ import annotations

import re

import ctshard
from conftest import shared_path

# before the first plan (a slow machine, a sanitizer build) the incumbent is "none", with no gap
LINE = re.compile(r"ctshard: [0-9]+\.[0-9] s  bound [0-9]+\.[0-9] µs  incumbent ([0-9]+\.[0-9] µs  gap [0-9]+\.[0-9]{2} %|none)")


def _budgeted_vit(**kwargs):
    # the budgeted ViT-B/16 forward: its search runs past the 2.5 s limit (docs/benchmarks.md)
    return ctshard.plan(str(shared_path("graphs", "vit_b16_fw.fx.txt")), mesh=(2, 4), algo="global", free_inputs=True,
                        memory_budget_gib=0.2, time_limit_ms=2500, **kwargs)


def test_progress_lines_only_with_verbose(capfd):
    quiet = _budgeted_vit()
    assert capfd.readouterr().err == ""
    assert quiet["solver"]["peak_memory_bytes"] > 0
    loud = _budgeted_vit(verbose=True)
    lines = capfd.readouterr().err.splitlines()
    if loud["status"] == "time_limit" and loud["solver"]["solve_ms"] > 1500:
        assert lines, "a solve over 1 s writes progress lines"
    assert all(LINE.fullmatch(line) for line in lines), lines
