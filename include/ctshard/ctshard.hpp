#pragma once
/// \file ctshard.hpp
/// Umbrella header of the compile-time tables and DTensor's selection rules: placements and specs
/// (`_spec`), einsum equations and their diagnostics, the rule machinery (RuleSet, placeholder
/// fill), the einsum and pointwise generators, frozen strategies and mesh expansion
/// (`einsum_strategy_v`, `mesh_expansion_v`, `table_laws_hold`), the shardability filters and
/// DTensor's tie rules. Kept within 2x `<boost/mp11.hpp>` + `<boost/hana.hpp>` in compile time
/// and memory (docs/benchmarks.md). The other umbrellas each include the one before:
/// - `ctshard/rules.hpp`: every single-dim rule generator (views, reductions, norms, nn, ...);
/// - `ctshard/runtime.hpp`: full-mesh filters, redistribute cost, StrategyEnumerator;
/// - `ctshard/registry.hpp`: the op registry (aten name → rule factory).
/// No ext/ type-level views.

#include "ctshard/config.hpp"
#include "ctshard/error.hpp"

#include "ctshard/core/checked.hpp"
#include "ctshard/core/fixed_string.hpp"
#include "ctshard/core/placement.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"

#include "ctshard/einsum/equation.hpp"

#include "ctshard/rules/einsum_rules.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/pointwise_rules.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/shard_regroup.hpp"
#include "ctshard/rules/uneven_inputs.hpp"

#include "ctshard/expand/mesh_expansion.hpp"
#include "ctshard/expand/single_dim_strategy.hpp"

#include "ctshard/select/filters.hpp"
#include "ctshard/select/selection.hpp"
