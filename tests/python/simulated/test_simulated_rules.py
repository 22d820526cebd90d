"""Simulated mesh over every registered op (run_simulated.py; sample format in README.md).

    python3 -m pytest -q tests/python/simulated                    # everything, ~15 s
    python3 -m pytest -q tests/python/simulated -k aten.gather     # one op
    CTSHARD_SIM_REPORT=/tmp/sim.json python3 -m pytest -q tests/python/simulated

`test_rows_sound[<op>]`: every sample of the op, on meshes 2, 3 (every single-dim rule row as a
full-mesh row) and 2x2 (a sample of full-mesh strategies): no row may be unsound or raise on a
rank (the message lists each failing case and row).  Missing rows (valid on mesh 2, absent from the
rule) are reported in the end-of-run `sim(py): <family>: ...` lines and the JSON report, never
failed.  `test_every_registered_op_has_samples` fails on a registered op with neither samples nor
a NOT_SIMULATED reason.  The other tests check the machinery itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import ctshard  # noqa: E402
import run_simulated as rs  # noqa: E402
import torch  # noqa: E402

# torch executes every row on every simulated device; the C++ sim_tests check the same rules
# under the sanitizers, and test_api.py covers the extension's table() calls
pytestmark = pytest.mark.torch_bound

SUITE = rs.Suite()
KEYS = SUITE.keys()  # op names; a higher-order op per wrapped op: "higher_order.auto_functionalized[_C.rms_norm.default]"


@pytest.fixture(scope="session")
def sim_results(summary):
    """Results of the ops run in this session; at teardown the per-family summary lines (and the
    JSON report when CTSHARD_SIM_REPORT names a file)."""
    results: dict[str, rs.OpResult] = {}
    yield results
    if not results:
        return
    done = list(results.values())
    for line in rs.family_lines(done):
        summary(line)
    summary(rs.strided_line(done))
    summary(rs.partial_line(done))
    nops = len({r.op.split("[")[0] for r in done})
    summary(f"sim(py): {nops} ops ({len(done)} test groups), {sum(r.samples for r in done)} samples on meshes "
            f"{', '.join('x'.join(map(str, m)) for m in rs.MESHES)} (families "
            f"{', '.join(sorted(rs.FAMILY_MESHES))} also "
            f"{', '.join(sorted({'x'.join(map(str, m)) for ms in rs.FAMILY_MESHES.values() for m in ms} - {'x'.join(map(str, m)) for m in rs.MESHES}))}), "
            f"{sum(r.seconds for r in done):.1f} s")
    path = os.environ.get("CTSHARD_SIM_REPORT")
    if path:
        Path(path).write_text(json.dumps(rs.report(done, SUITE, sum(r.seconds for r in done)), indent=1))


@pytest.mark.parametrize("op", KEYS)
def test_rows_sound(op, sim_results):
    r = SUITE.result(op)
    sim_results[op] = r
    assert r.samples > 0 and r.checked > 0, f"{op}: no row was checked"
    shown = "\n".join(r.failures[:12]) + (f"\n... and {len(r.failures) - 12} more" if len(r.failures) > 12 else "")
    assert r.failed == 0, f"{op}: {r.failed} failing rows of {r.checked} checked:\n{shown}"


def test_every_registered_op_has_samples():
    uncovered, _ = rs.coverage(SUITE)
    assert uncovered == [], (
        "registered ops without a sample in tests/python/simulated/samples_*.py and not in "
        f"run_simulated.NOT_SIMULATED: {uncovered} (tests/python/simulated/README.md says how to add one)")


def test_sampled_ops_are_registered():
    _, unknown = rs.coverage(SUITE)
    assert unknown == [], f"samples for ops ctshard has no rule for (typo?): {unknown}"


def test_not_simulated_reasons_are_concrete():
    registered = set(ctshard.ops()["ops"])
    for op, why in rs.NOT_SIMULATED.items():
        assert op in registered, f"NOT_SIMULATED lists {op}, which ctshard does not register"
        assert op not in SUITE.by_op, f"{op} has samples and is listed in NOT_SIMULATED"
        assert isinstance(why, str) and len(why) >= 20, f"{op}: give a concrete reason, not {why!r}"


def test_sample_files_load_and_name_their_family():
    fams = [m.family for m in SUITE.modules]
    assert len(fams) == len(set(fams)) and fams
    for m in SUITE.modules:
        assert m.samples, f"{m.path.name}: SAMPLES is empty"
    with pytest.raises(rs.SampleError):
        rs.normalize({"op": "aten.mm.default", "tensors": [{"shape": [2, 2]}], "args": ["$0", "$1"]}, "x", 0)
    with pytest.raises(rs.SampleError):
        rs.normalize({"op": "aten.abs.default", "tensors": [{"shape": [2], "values": "odd"}], "args": ["$0"]}, "x", 0)


# ---------------------------------------------------------------------------------------
# the machinery

def _sim(op: str, tensors: list, args: list, kwargs: dict | None = None, **extra) -> rs.SampleSim:
    s = rs.normalize({"op": op, "tensors": tensors, "args": args, "kwargs": kwargs or {}, **extra}, "machinery", 0)
    s.id = f"{op}#machinery"
    return rs.SampleSim(s, SUITE.references)


def _f(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def test_simulator_accepts_sound_rows_and_rejects_unsound_ones():
    mm = _sim("aten.mm.default", [_f(5, 3), _f(3, 4)], ["$0", "$1"])
    assert mm.check([2], ["S(0)", "R"], ["S(0)"])[0] == "sound"
    assert mm.check([3], ["S(1)", "S(0)"], ["P(sum)"])[0] == "sound"
    assert mm.check([2, 2], ["S(0)S(1)", "RS(0)"], ["S(0)P(sum)"])[0] == "sound"
    assert mm.check([2], ["S(1)", "S(0)"], ["R"])[0] == "unsound"
    assert mm.check([2], ["S(1)", "R"], ["P(sum)"])[0] == "local_error"  # 3 columns against 4 rows
    assert mm.check([2], ["S(0)", "R"], ["S(1)"])[0] == "unsound"
    # DTensor's batch-only all-Partial einsum row: (1+2)(3+4) != 1*3 + 2*4
    ein = _sim("aten.einsum.default", [_f(4, 5), _f(4, 5)], ["ab,ab->ab", ["$0", "$1"]])
    assert ein.check([2], ["P(sum)", "P(sum)"], ["P(sum)"])[0] == "unsound"
    # a Python scalar operand is not an input: add(P(sum), 10) is not a partial sum
    add = _sim("aten.add.Tensor", [_f(4, 5)], ["$0", 10.0])
    assert add.check([2], ["P(sum)"], ["P(sum)"])[0] == "unsound"
    assert add.check([2], ["P(max)"], ["P(max)"])[0] == "sound"
    # view 5x4 -> 20 keeping S(0) on 2: local 12 + 8 elements, not torch.chunk's 10 + 10
    view = _sim("aten.view.default", [_f(5, 4)], ["$0", [20]])
    assert view.check([2], ["S(0)"], ["S(0)"])[0] in ("unsound", "local_error")
    assert _sim("aten.view.default", [_f(4, 5)], ["$0", [20]]).check([2], ["S(0)"], ["S(0)"])[0] == "sound"
    # squeeze of a sharded dim whose local size is 1 (3x1, S(0) on 2): only global 1s go
    sq = _sim("aten.squeeze.default", [_f(3, 1)], ["$0"])
    assert sq.check([2], ["S(0)"], ["S(0)"])[0] == "sound"
    # embedding with a row-sharded weight: masked lookups summed
    emb = _sim("aten.embedding.default", [_f(6, 3), {"shape": [5], "dtype": "int64", "range": [0, 6]}], ["$0", "$1"])
    assert emb.check([3], ["S(0)", "R"], ["P(sum)"])[0] == "sound"
    # a local kernel error is reported as such
    amax = _sim("aten.amax.default", [_f(4, 6)], ["$0", [0]])
    assert amax.check([3], ["S(0)"], ["P(max)"])[0] == "local_error"  # 4 rows on 3: chunks 2, 2, 0


def test_strided_shard_layouts_reassemble():
    add = _sim("aten.add.Tensor", [_f(8, 3), _f(8, 3)], ["$0", "$1"])
    assert add.check([2], ["_S(0, 2)", "_S(0, 2)"], ["_S(0, 2)"])[0] == "sound"
    assert add.check([2, 2], ["S(0)_S(0, 2)", "S(0)_S(0, 2)"], ["S(0)_S(0, 2)"])[0] == "sound"
    assert add.check([2], ["_S(0, 2)", "S(0)"], ["S(0)"])[0] == "unsound"
    assert add.check([2], ["_S(0, 2)", "_S(0, 2)"], ["S(0)"])[0] == "unsound"


def test_strided_shard_rows_are_checked_on_every_mesh():
    """Rows with a StridedShard (placeholders filled from a `_S(d, 2)` input) are simulated on the
    1-D and the 2-D meshes and counted apart."""
    r = SUITE.result("aten.add.Tensor", missing=False)
    assert r.strided_checked > 0 and r.strided_failed == 0, r.failures[:5]
    meshes = {m for m in r.per_mesh}
    assert len(meshes) >= 2
    sample = SUITE.by_op["aten.add.Tensor"][0]
    table = rs.table(sample, [2, 2], rs.current_inputs(sample, [2, 2], strided=True))
    rows_2d = [row for row in map(rs.strategy_row, table["strategies"]) if rs._has_strided(row)]
    assert rows_2d, "a StridedShard input on a 2x2 mesh gives StridedShard rows"
    assert rs.strided_line([r]).startswith(f"sim(py): StridedShard rows checked {r.strided_checked}, failed 0")


def test_equal_ands_the_ranks_answers():
    eq = _sim("aten.equal.default", [_f(4, 5), {"shape": [4, 5], "dtype": "float32", "same_as": 0}], ["$0", "$1"])
    assert eq.check([2], ["S(0)", "S(0)"], ["R"])[0] == "sound"
    assert eq.check([2], ["S(0)", "S(1)"], ["R"])[0] == "unsound"
    assert eq.check([2], ["P(sum)", "P(sum)"], ["R"])[0] == "unsound"


def test_missing_search_reports_a_valid_row_the_rule_lacks():
    mm = _sim("aten.mm.default", [_f(4, 5), _f(5, 3)], ["$0", "$1"])
    t = rs.table(mm.s, [2], ["S(0)", "R"])
    present = set(rs._filled_rows(t, 2))
    res = rs.OpResult(op="aten.mm.default", family="machinery")
    rs.find_missing(mm.s, mm, res, present=present)
    assert res.missing == 0, res.missing_rows
    present.discard((("S(0)",), ("S(0)", "R")))
    rs.find_missing(mm.s, mm, res, present=present)
    assert res.missing == 1 and res.missing_rows[0].endswith("(S(0), R) -> S(0)"), res.missing_rows


def test_known_unsound_dtensor_fidelity_rows_are_counted_apart():
    s = rs.normalize({"op": "aten.einsum.default", "tensors": [_f(4, 5), _f(4, 5)],
                      "args": ["ab,ab->ab", ["$0", "$1"]], "kwargs": {}}, "machinery", 0)
    s.id = "einsum#machinery"
    r = rs.run_op(s.op, [s], SUITE.references, "machinery", missing=False)
    assert r.failed == 0, r.failures
    assert r.known_unsound > 0 and any("(P(sum), P(sum)) -> P(sum)" in k for k in r.known_unsound_rows)


def test_rows_reached_from_partial_inputs_are_checked():
    """R15: a sort of a Partial-only input is offered the rows off its sorted dim (reduce-scatter);
    the runner simulates them and counts them apart."""
    r = SUITE.result("aten.sort.default", missing=False)
    assert r.partial_checked > 0 and r.partial_failed == 0, r.failures[:5]
    sample = next(x for x in SUITE.by_op["aten.sort.default"] if len(x.tensors[0]["shape"]) == 2)
    t = rs.table(sample, [2], rs.partial_inputs(sample, [2]))
    assert t["placeholder_fill"] == "shard_from_partial"
    assert any("S(" in row[1][0] for row in map(rs.strategy_row, t["strategies"]))
    assert rs.partial_line([r]).startswith(f"sim(py): rows reached from Partial-only inputs checked {r.partial_checked}, failed 0")
    # the pointwise family keeps DTensor's fill: no such rows
    p = SUITE.result("aten.sin.default", missing=False)
    assert p.partial_checked == 0


def test_histc_from_the_data_range_is_unsound_when_split():
    """R10: histc(x, 4, 3, 3) bins over the data's own range; S(0) -> P(sum) is wrong on 2 ranks
    (x = [0, 1, 2, 3, 10, 11, 12, 13]: [4, 0, 0, 4] globally, [2, 2, 2, 2] summed), right with a range."""
    data = _sim("aten.histc.default", [_f(8)], ["$0", 4, 3, 3])
    assert data.check([2], ["S(0)"], ["P(sum)"])[0] == "unsound"
    given = _sim("aten.histc.default", [_f(8)], ["$0", 4, -3.0, 3.0])
    assert given.check([2], ["S(0)"], ["P(sum)"])[0] == "sound"
    x = torch.tensor([0.0, 1, 2, 3, 10, 11, 12, 13])
    assert torch.histc(x, 4, 3, 3).tolist() == [4, 0, 0, 4]
    assert (torch.histc(x[:4], 4, 3, 3) + torch.histc(x[4:], 4, 3, 3)).tolist() == [2, 2, 2, 2]


def test_view_rows_of_local_sizes_are_checked_on_2_and_3_dim_meshes():
    """R11's kind: a view whose group is sharded by several mesh dims gets the rows the local sizes
    left by the earlier mesh dims call for; every such row is simulated (never sampled away) on the
    view family's meshes of 2 and 3 dims, and the simulator tells them from the global-size reading."""
    view = _sim("aten.view.default", [_f(2, 2, 3)], ["$0", [4, 3]])
    assert view.check([2, 2], ["S(0)S(1)"], ["S(0)S(0)"])[0] == "sound"
    assert view.check([2, 2], ["S(0)S(1)"], ["S(0)_S(0, 2)"])[0] != "sound"  # the global-size reading
    unflatten = _sim("aten.view.default", [_f(4, 3)], ["$0", [2, 2, 3]])
    assert unflatten.check([2, 2], ["S(0)S(0)"], ["S(0)S(1)"])[0] == "sound"
    assert unflatten.check([2, 2], ["S(0)S(0)"], ["S(0)S(0)"])[0] != "sound"  # DTensor 2.13's answer
    r = SUITE.result("aten.view.default", missing=False)
    assert r.local_checked > 0 and r.local_failed == 0 and r.failed == 0, r.failures[:5]
    assert {"2x2", "2x3", "2x2x2"} <= set(r.per_mesh)
    sample = next(s for s in SUITE.by_op["aten.view.default"] if s.tensors[0]["shape"] == [2, 2, 3])
    local = rs._local_size_rows(sample, [2, 2], rs.table(sample, [2, 2], ["S(0)R"]), ["S(0)R"], 1)
    assert (("S(0)S(0)",), ("S(0)S(1)",)) in local


def test_collectives_run_on_program_ranks_and_reject_the_rows_their_tables_leave_out():
    """A collective runs per mesh device over the g program ranks' pieces: the listed rows are
    right, the excluded ones (docs/semantics.md "Collectives in graphs") are wrong."""
    def group(op, tensors, args, g=2):
        s = rs.normalize({"op": op, "tensors": tensors, "args": args, "kwargs": {}, "program_ranks": g}, "machinery", 0)
        s.id = f"{op}#machinery"
        return rs.GroupSampleSim(s, SUITE.group_references)

    ar = group("_c10d_functional.all_reduce.default", [_f(4, 5)], ["$0", "sum", "0"])
    for spec in ("R", "S(0)", "S(1)", "P(sum)", "P(avg)"):
        assert ar.check([2], [spec], [spec])[0] == "sound", spec
    assert ar.check([2], ["P(max)"], ["P(max)"])[0] == "unsound"
    mx = group("_c10d_functional.all_reduce.default", [_f(4, 5)], ["$0", "max", "0"], g=3)
    assert mx.check([2], ["P(sum)"], ["P(sum)"])[0] == "unsound"
    assert mx.check([3], ["P(max)"], ["P(max)"])[0] == "sound"
    rsc = group("_c10d_functional.reduce_scatter_tensor.default", [_f(8, 3)], ["$0", "sum", 2, "0"])
    assert rsc.check([2], ["_S(0, 2)"], ["S(0)"])[0] == "sound"
    assert rsc.check([2], ["S(0)"], ["S(0)"])[0] == "unsound"
    ag = group("_c10d_functional.all_gather_into_tensor.default", [_f(4, 3)], ["$0", 2, "0"])
    assert ag.check([2], ["S(0)"], ["_S(0, 2)"])[0] == "sound"
    assert ag.check([2], ["S(0)"], ["S(0)"])[0] == "unsound"
    assert ag.check([2, 2], ["S(0)S(0)"], ["_S(0, 2)_S(0, 2)"])[0] == "sound"
