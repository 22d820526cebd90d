#pragma once
/// \file runtime.hpp
/// Umbrella header of run-time selection: `ctshard/rules.hpp` plus full-mesh filters, the mesh
/// topology and DTensor's redistribute cost model, the shardability filters and tie rules, and
/// StrategyEnumerator (run-time expansion, pricing, DTensor's choice and the exact search).

#include "ctshard/rules.hpp"

#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/mesh_filters.hpp"

#include "ctshard/cost/collectives.hpp"
#include "ctshard/cost/consistent_cost.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/cost/redistribute_cost.hpp"
#include "ctshard/cost/redistribute_step.hpp"

#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/dim_costs.hpp"
#include "ctshard/select/enumerator.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/full_enumeration.hpp"
#include "ctshard/select/min_cost_search.hpp"
#include "ctshard/select/nested_gather_bound.hpp"
#include "ctshard/select/prefix_bounds.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/row_search.hpp"
#include "ctshard/select/search_choice.hpp"
#include "ctshard/select/search_query.hpp"
#include "ctshard/select/survivor_count.hpp"
