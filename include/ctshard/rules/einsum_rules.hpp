#pragma once
/// \file rules/einsum_rules.hpp
/// Single-dim strategies of the einsum family: any two-operand einsum, and mm / bmm / dot /
/// addmm / baddbmm through it (DTensor `gen_single_dim_einsum_strategies`, `_matrix_ops.py`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ctshard/core/fixed_string.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/einsum/equation.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// Which Partial rows an einsum rule lists besides its shard rows.
/// - `none`: shard rows only (DTensor's legacy `gen_einsum_strategies` without linearity: mm has
///   3 rows, bmm 4);
/// - `per_input`: for r in (sum, avg) `[P(r), P(r), R]`, `[P(r), R, P(r)]` — a bilinear op is
///   linear in each operand alone (sound);
/// - `dtensor`: `per_input`, plus `[P(r), P(r), P(r)]` for r in (sum, avg) when the equation has no
///   contracting and no free dim, exactly as newest DTensor writes it. Those two rows are unsound
///   (an elementwise product of two partial sums is not the partial sum of products:
///   (a0+a1)(b0+b1) != a0 b0 + a1 b1); ctshard keeps them only to reproduce DTensor's tables.
enum class EinsumLinearity : std::uint8_t { none, per_input, dtensor };

/// The single-dim rows of a two-operand einsum, in DTensor's order: batch dims
/// `[S?(out), S?(lhs), S?(rhs)]`; contracting dims `[P(sum), S?(lhs), S?(rhs)]`; lhs-only
/// `[S?(out), S?(lhs), R]`; rhs-only `[S?(out), R, S?(rhs)]` (each class in sorted label order);
/// then the Partial rows of `linearity`. One output, two inputs; operand ranks recorded.
/// Throws ctshard::error (compile error when constant-evaluated) for a one-operand equation.
[[nodiscard]] constexpr RuleSet einsum_single_dim_strategy(const EinsumEquation& eq, EinsumLinearity linearity = EinsumLinearity::dtensor) {
  if (eq.num_inputs != 2) throw error("ctshard::einsum_single_dim_strategy: needs exactly two input operands");
  RuleSet rules(1, 2);
  rules.set_rank(0, eq.output.rank);
  rules.set_rank(1, eq.inputs[0].rank);
  rules.set_rank(2, eq.inputs[1].rank);
  const auto& lhs = eq.inputs[0];
  const auto& rhs = eq.inputs[1];
  auto ph_or_r = [](int index) { return index < 0 ? Replicate() : ShardingPlaceholder(index); };
  for (char c : eq.batch.view())
    rules.add({ShardingPlaceholder(eq.output.index_of(c)), ShardingPlaceholder(lhs.index_of(c)), ShardingPlaceholder(rhs.index_of(c))});
  for (char c : eq.contracting.view())
    rules.add({Partial(ReduceOp::sum), ShardingPlaceholder(lhs.index_of(c)), ShardingPlaceholder(rhs.index_of(c))});
  for (char c : eq.lhs_only.view()) rules.add({ShardingPlaceholder(eq.output.index_of(c)), ph_or_r(lhs.index_of(c)), Replicate()});
  for (char c : eq.rhs_only.view()) rules.add({ShardingPlaceholder(eq.output.index_of(c)), Replicate(), ph_or_r(rhs.index_of(c))});
  if (linearity == EinsumLinearity::none) return rules;
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    rules.add({Partial(r), Partial(r), Replicate()});
    rules.add({Partial(r), Replicate(), Partial(r)});
  }
  const bool only_batch = eq.contracting.size == 0 && eq.lhs_only.size == 0 && eq.rhs_only.size == 0;
  if (linearity == EinsumLinearity::dtensor && only_batch)
    for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r), Partial(r)});
  return rules;
}

/// Output shape of a two-operand einsum from its input shapes (sizes taken by label).
/// Throws ctshard::error when an operand's rank differs from its labels or a label (output or
/// contracted) has different sizes in the two operands.
[[nodiscard]] constexpr TensorShape einsum_output_shape(const EinsumEquation& eq, const TensorShape& lhs, const TensorShape& rhs) {
  const TensorShape* shapes[2] = {&lhs, &rhs};
  for (std::size_t k = 0; k < eq.num_inputs; ++k)
    if (shapes[k]->rank != eq.inputs[k].rank)
      throw error("ctshard::einsum: operand " + std::to_string(k) + " has rank " + std::to_string(shapes[k]->rank) + " but the equation gives it " +
                  std::to_string(eq.inputs[k].rank) + " labels");
  if (eq.num_inputs == 2)
    for (std::size_t i = 0; i < eq.inputs[0].rank; ++i) {
      const char c = eq.inputs[0].labels[i];
      const int j = eq.inputs[1].index_of(c);
      if (j >= 0 && lhs[i] != rhs[static_cast<std::size_t>(j)])
        throw error(std::string("ctshard::einsum: label '") + c + "' has sizes " + std::to_string(lhs[i]) + " and " +
                    std::to_string(rhs[static_cast<std::size_t>(j)]));
    }
  TensorShape out;
  for (char c : eq.output.view()) {
    std::int64_t size = -1;
    for (std::size_t k = 0; k < eq.num_inputs; ++k) {
      const int i = eq.inputs[k].index_of(c);
      if (i < 0) continue;
      const std::int64_t s = (*shapes[k])[static_cast<std::size_t>(i)];
      if (size >= 0 && s != size)
        throw error(std::string("ctshard::einsum: label '") + c + "' has sizes " + std::to_string(size) + " and " + std::to_string(s));
      size = s;
    }
    out.push_back(size);
  }
  return out;
}

/// Inserts a bias operand right after the output (addmm / baddbmm `self`, broadcast to the
/// output): a placeholder output dim maps to the aligned bias dim, or to Replicate where the bias
/// is padded or has size 1 there (even when the output dim has size 1 too); Partial and Replicate
/// are copied. DTensor `gen_single_dim_einsum_strategies(..., bias_shape)`.
[[nodiscard]] constexpr RuleSet with_bias_operand(const RuleSet& rules, const TensorShape& out_shape, const TensorShape& bias_shape) {
  RuleSet out(rules.num_outputs(), rules.num_inputs() + 1);
  out.set_rank(0, rules.rank(0));
  out.set_rank(1, bias_shape.rank);
  for (std::size_t k = 1; k < rules.width(); ++k) out.set_rank(k + 1, rules.rank(k));
  auto map = infer_broadcast_dims_map(out_shape, bias_shape);
  for (std::size_t i = 0; i < out_shape.rank; ++i)
    if (map[i] >= 0 && bias_shape[static_cast<std::size_t>(map[i])] == 1) map[i] = -1;
  std::vector<Placement> row(out.width());
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const auto src = rules.row(r);
    const Placement o = src[0];
    row[0] = o;
    row[1] = !o.is_placeholder()
                 ? o
                 : (map[static_cast<std::size_t>(o.dim)] < 0 ? Replicate() : ShardingPlaceholder(map[static_cast<std::size_t>(o.dim)]));
    for (std::size_t k = 1; k < src.size(); ++k) row[k + 1] = src[k];
    out.add(row);
  }
  return out;
}

/// Equations of the einsum-family aten ops (DTensor `_matrix_ops.py`).
inline constexpr std::string_view mm_equation = "mk,kn->mn";
/// bmm / baddbmm.
inline constexpr std::string_view bmm_equation = "bmk,bkn->bmn";
/// dot.
inline constexpr std::string_view dot_equation = "i,i->";

}  // namespace ctshard
