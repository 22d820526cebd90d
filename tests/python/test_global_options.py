"""ctshard.GlobalOptions: the whole-graph plan's options as one value (plan(..., global_options=...)),
the same plan as the keywords they stand for, and the errors for mixing the two or misspelling a
field."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import ctshard
from ctshard import GlobalOptions

FIELDS = [f.name for f in dataclasses.fields(GlobalOptions)]

# Non-default values for every field that changes the default graph's global plan (and a few that
# only have to be passed through); the plan is proven optimal well within the time limit.
OPTIONS = {
    "time_limit_ms": 5000,
    "free_inputs": True,
    "device_tflops": 50,
    "device_gbps": 500,
    "memory_budget_gib": 0,
    "ties": [("primals_2", "primals_6")],
    "every_candidate": True,
    "max_memory_mib": 2048,
    "training": False,  # the default graph has no gradients: the same plan either way
    "optimizer": "sgd",
    "gradients": None,
    "hand_plans": False,
}
PLACE = {"primals_1": "S(0)R"}


def _stable(doc: dict) -> dict:
    """The plan without the solver's wall-clock and CPU timings and its peak memory (they differ
    from call to call: the process's peak RSS grows)."""
    doc = dict(doc)
    doc["solver"] = {k: v for k, v in doc["solver"].items()
                     if not (k.endswith("_ms") and k != "time_limit_ms") and k != "peak_memory_bytes"}
    return doc


def test_exported_with_todays_defaults():
    assert "GlobalOptions" in ctshard.__all__
    defaults = inspect.signature(ctshard.plan).parameters
    assert set(OPTIONS) == set(FIELDS)
    for name in FIELDS:
        assert getattr(GlobalOptions(), name) == defaults[name].default, name
    assert defaults["global_options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert defaults["global_options"].default is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        GlobalOptions().time_limit_ms = 1  # type: ignore[misc]


@pytest.mark.parametrize("options", [{}, OPTIONS], ids=["defaults", "every-field-set"])
def test_keywords_options_and_dict_give_the_same_plan(options):
    by_keyword = ctshard.plan(algo="global", place=PLACE, **options)
    by_options = ctshard.plan(algo="global", place=PLACE, global_options=GlobalOptions(**options))
    by_dict = ctshard.plan(algo="global", place=PLACE, global_options=dict(options))
    assert by_keyword["proven_optimal"]
    assert _stable(by_options) == _stable(by_keyword)
    assert _stable(by_dict) == _stable(by_keyword)
    if options:
        assert _stable(by_keyword) != _stable(ctshard.plan(algo="global", place=PLACE))  # the options took effect
        assert by_keyword["solver"]["time_limit_ms"] == OPTIONS["time_limit_ms"]


def test_dict_and_keywords_combine_when_disjoint():
    mixed = ctshard.plan(algo="global", free_inputs=True, global_options={"ties": OPTIONS["ties"], "time_limit_ms": 5000})
    keywords = ctshard.plan(algo="global", free_inputs=True, ties=OPTIONS["ties"], time_limit_ms=5000)
    assert _stable(mixed) == _stable(keywords)


@pytest.mark.parametrize("field", FIELDS)
def test_a_field_given_both_ways_is_an_error_naming_it(field):
    value = OPTIONS[field]
    with pytest.raises(ValueError, match=rf"\b{field} given both as an argument and in global_options"):
        ctshard.plan(algo="global", global_options={field: value}, **{field: value})
    # a GlobalOptions gives every field: no global-only keyword may come with it, even at its default
    with pytest.raises(ValueError, match=rf"\b{field} given both"):
        ctshard.plan(algo="global", global_options=GlobalOptions(), **{field: getattr(GlobalOptions(), field)})


def test_a_positional_argument_conflicts_too():
    with pytest.raises(ValueError, match="time_limit_ms given both"):
        ctshard.plan(None, (2, 4), None, 8, "sound", None, "dtensor", "global", "ctshard", "ctshard", 5000,
                     global_options={"time_limit_ms": 5000})


def test_bad_field_names_and_types():
    with pytest.raises(TypeError, match="time_limit"):
        GlobalOptions(time_limit=5000)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"global_options has no field 'time_limit'.*time_limit_ms"):
        ctshard.plan(algo="global", global_options={"time_limit": 5000})
    with pytest.raises(ValueError, match="'algo'"):  # a plan argument that is not a global option
        ctshard.plan(global_options={"algo": "global"})
    with pytest.raises(TypeError, match="global_options must be a ctshard.GlobalOptions or a dict.*list"):
        ctshard.plan(algo="global", global_options=[("time_limit_ms", 5000)])
    with pytest.raises(TypeError, match="unexpected keyword argument 'time_limit'"):
        ctshard.plan(algo="global", time_limit=5000, global_options={})


def test_bad_values_raise_the_keywords_errors():
    for field, bad in [("time_limit_ms", -1), ("device_tflops", 0), ("device_gbps", float("nan")),
                       ("memory_budget_gib", -1), ("max_memory_mib", -1)]:
        with pytest.raises(ValueError) as by_keyword:
            ctshard.plan(algo="global", free_inputs=True, **{field: bad})
        with pytest.raises(ValueError) as by_options:
            ctshard.plan(algo="global", global_options=GlobalOptions(free_inputs=True, **{field: bad}))
        assert str(by_options.value) == str(by_keyword.value)
        assert str(by_keyword.value).startswith(f"ctshard.plan: {field} must be")


def test_other_algos_ignore_them_as_they_ignore_the_keywords():
    greedy = ctshard.plan()
    assert ctshard.plan(time_limit_ms=-1, ties=[("nope", "nada")]) == greedy  # today's keywords: ignored
    assert ctshard.plan(global_options=GlobalOptions(time_limit_ms=-1, ties=[("nope", "nada")])) == greedy
    assert ctshard.plan(algo="enumerate", global_options={"free_inputs": True}) == ctshard.plan(algo="enumerate")
    with pytest.raises(ValueError, match="given both"):  # the checks of global_options itself still apply
        ctshard.plan(time_limit_ms=1, global_options={"time_limit_ms": 1})


def test_what_only_free_inputs_use_needs_them():
    """A memory budget or hand plans without free inputs would be dropped silently (the plan came
    back "optimal" with no budget in it): a ValueError naming the keyword, as from the CLI."""
    for field, value in [("memory_budget_gib", 0.1), ("hand_plans", True)]:
        with pytest.raises(ValueError, match=rf"ctshard.plan: {field} needs free_inputs=True"):
            ctshard.plan(algo="global", **{field: value})
        with pytest.raises(ValueError, match=rf"ctshard.plan: {field} needs free_inputs=True"):
            ctshard.plan(algo="global", global_options=GlobalOptions(**{field: value}))


def test_the_largest_budget_is_accepted_and_does_not_bind():
    """The documented range of memory_budget_gib ends at 2^30: such a budget cannot bind (it was
    refused by the solver's usage range, in a message naming no option)."""
    free = ctshard.plan(algo="global", free_inputs=True, time_limit_ms=5000)
    for budget in (2.0 ** 30, 2.0 ** 30 - 1):
        r = ctshard.plan(algo="global", free_inputs=True, memory_budget_gib=budget, time_limit_ms=5000)
        assert r["status"] == "optimal"
        assert r["objective_us"] == free["objective_us"]
