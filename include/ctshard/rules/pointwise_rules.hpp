#pragma once
/// \file rules/pointwise_rules.hpp
/// Single-dim strategies of pointwise ops with broadcasting and their Partial (linearity) rows
/// (DTensor `_pointwise_ops.py`, `_common_pointwise_single_dim_strategy`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// One Partial row of a pointwise op, `[out, in_0, ...]`, `width` cells used.
struct PartialRow {
  std::array<Placement, 4> cells{};
  std::uint8_t width = 0;
};

namespace detail {
constexpr Placement Psum = Partial(ReduceOp::sum), Pavg = Partial(ReduceOp::avg), Pmax = Partial(ReduceOp::max), Pmin = Partial(ReduceOp::min),
                    Rep = Replicate();
constexpr PartialRow row2(Placement a, Placement b) { return {{a, b, Rep, Rep}, 2}; }
constexpr PartialRow row3(Placement a, Placement b, Placement c) { return {{a, b, c, Rep}, 3}; }
}  // namespace detail

/// Partial row sets, named as in DTensor `_pointwise_ops.py`.
namespace pointwise_partial {
using namespace detail;
/// `_UNARY_LINEAR_RULES`: f(a·x) = a·f(x) — scalar mul/div, `to`.
inline constexpr std::array unary_linear{row2(Psum, Psum), row2(Pavg, Pavg)};
/// Non-decreasing unary ops (exp, relu, tanh, ...) preserve max/min.
inline constexpr std::array non_decreasing{row2(Pmax, Pmax), row2(Pmin, Pmin)};
/// Non-increasing unary ops (erfc) swap max and min.
inline constexpr std::array non_increasing{row2(Pmin, Pmax), row2(Pmax, Pmin)};
/// neg: linear and non-increasing.
inline constexpr std::array neg{row2(Psum, Psum), row2(Pavg, Pavg), row2(Pmin, Pmax), row2(Pmax, Pmin)};
/// positive / identity-like: every Partial passes through.
inline constexpr std::array all_partials{row2(Psum, Psum), row2(Pavg, Pavg), row2(Pmax, Pmax), row2(Pmin, Pmin)};
/// `_BINARY_ADDITIVE_RULES` (add, sub): adding a replicated value keeps avg/max/min.
inline constexpr std::array binary_additive{row3(Psum, Psum, Psum), row3(Pavg, Pavg, Pavg), row3(Pavg, Pavg, Rep),
                                            row3(Pmax, Pmax, Rep),  row3(Pmin, Pmin, Rep),  row3(Pavg, Rep, Pavg)};
/// mul.Tensor: `_MUL_RULES` (one Partial factor, the other replicated) + unary linear.
inline constexpr std::array mul{row3(Psum, Psum, Rep), row3(Pavg, Pavg, Rep), row3(Psum, Rep, Psum),
                                row3(Pavg, Rep, Pavg), row2(Psum, Psum),      row2(Pavg, Pavg)};
/// div.Tensor: `_DIV_RULES` (numerator only) + unary linear.
inline constexpr std::array div{row3(Psum, Psum, Rep), row3(Pavg, Pavg, Rep), row2(Psum, Psum), row2(Pavg, Pavg)};
/// maximum / fmax / clamp_min.Tensor.
inline constexpr std::array maximum{row3(Pmax, Pmax, Rep), row3(Pmax, Rep, Pmax), row3(Pmin, Pmin, Rep), row3(Pmin, Rep, Pmin),
                                    row3(Pmax, Pmax, Pmax)};
/// minimum / fmin / clamp_max.Tensor.
inline constexpr std::array minimum{row3(Pmax, Pmax, Rep), row3(Pmax, Rep, Pmax), row3(Pmin, Pmin, Rep), row3(Pmin, Rep, Pmin),
                                    row3(Pmin, Pmin, Pmin)};
/// Backward ops linear in their first operand, the incoming gradient, when the other operand is
/// replicated (gelu / sigmoid / tanh / threshold backward: grad times a function of the
/// activation): `[P(sum), P(sum), R]`, `[P(avg), P(avg), R]` (DTensor's `_XLOG1PY_RULES` shape).
inline constexpr std::array linear_in_first{row3(Psum, Psum, Rep), row3(Pavg, Pavg, Rep)};
/// `prims.fma(a, b, c)` = a * b + c: linear in (a, c) with b replicated and in (b, c) with a
/// replicated (sum, avg), the product term replicated while c is an avg / max / min partial, and
/// avg through one partial factor (`(1/n) Σ (a_i b + c) = a b + c`). Rows `[out, a, b, c]`.
inline constexpr std::array fma{
    PartialRow{{Psum, Psum, Rep, Psum}, 4}, PartialRow{{Psum, Rep, Psum, Psum}, 4}, PartialRow{{Pavg, Pavg, Rep, Pavg}, 4},
    PartialRow{{Pavg, Rep, Pavg, Pavg}, 4}, PartialRow{{Pavg, Pavg, Rep, Rep}, 4},  PartialRow{{Pavg, Rep, Pavg, Rep}, 4},
    PartialRow{{Pavg, Rep, Rep, Pavg}, 4},  PartialRow{{Pmax, Rep, Rep, Pmax}, 4},  PartialRow{{Pmin, Rep, Rep, Pmin}, 4}};
/// logaddexp: monotone in each operand.
inline constexpr std::array logaddexp{row3(Pmax, Pmax, Rep), row3(Pmax, Rep, Pmax), row3(Pmin, Pmin, Rep), row3(Pmin, Rep, Pmin)};
}  // namespace pointwise_partial

/// The single-dim strategy of a pointwise op over tensor inputs `shapes` (0-d allowed) with one
/// output: for every dim i of the broadcast shape, `[S?(i), per input S?(its aligned dim) or R
/// where it broadcasts]`; then the rows of `partial_rows` whose width equals 1 + inputs (so a
/// scalar-promoted binary op keeps only unary rows). DTensor `_common_pointwise_single_dim_strategy`.
/// Throws ctshard::error when the shapes do not broadcast.
[[nodiscard]] constexpr RuleSet pointwise_single_dim_strategy(std::span<const TensorShape> shapes, std::span<const PartialRow> partial_rows = {}) {
  const TensorShape common = broadcast_shapes(shapes);
  RuleSet rules(1, shapes.size());
  rules.set_rank(0, common.rank);
  for (std::size_t k = 0; k < shapes.size(); ++k) rules.set_rank(k + 1, shapes[k].rank);
  std::vector<Placement> row(1 + shapes.size());
  for (std::size_t i = 0; i < common.rank; ++i) {
    row[0] = ShardingPlaceholder(static_cast<int>(i));
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const int j = infer_broadcast_dims_map(common, shapes[k])[i];
      row[k + 1] = j < 0 ? Replicate() : ShardingPlaceholder(j);
    }
    rules.add(row);
  }
  for (const auto& p : partial_rows)
    if (p.width == rules.width()) rules.add(std::span<const Placement>(p.cells.data(), p.width));
  return rules;
}

}  // namespace ctshard
