#pragma once
/// \file rules.hpp
/// Umbrella header of every single-dim rule generator: `ctshard/ctshard.hpp` plus the views,
/// reductions, norms, embedding / index, gather / scatter, losses, batch norm, grouped mm,
/// sort / scan, attention, nn, convolution / pooling, tensor ops, factories, layout, random and
/// passthrough families. All are constexpr, so `make_single_dim_strategy` can freeze any of them.

#include "ctshard/ctshard.hpp"

#include "ctshard/rules/attention_rules.hpp"
#include "ctshard/rules/batch_norm_rules.hpp"
#include "ctshard/rules/collective_rules.hpp"
#include "ctshard/rules/conv_pool_rules.hpp"
#include "ctshard/rules/embedding_rules.hpp"
#include "ctshard/rules/factory_rules.hpp"
#include "ctshard/rules/gather_scatter_rules.hpp"
#include "ctshard/rules/grouped_mm_rules.hpp"
#include "ctshard/rules/layout_rules.hpp"
#include "ctshard/rules/loss_rules.hpp"
#include "ctshard/rules/nn_rules.hpp"
#include "ctshard/rules/norm_rules.hpp"
#include "ctshard/rules/passthrough_rules.hpp"
#include "ctshard/rules/random_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"
#include "ctshard/rules/regroup_on_mesh.hpp"
#include "ctshard/rules/sort_scan_rules.hpp"
#include "ctshard/rules/tensor_dims.hpp"
#include "ctshard/rules/tensor_op_rules.hpp"
#include "ctshard/rules/view_rules.hpp"
