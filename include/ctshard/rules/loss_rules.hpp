#pragma once
/// \file rules/loss_rules.hpp
/// Single-dim strategies of the negative log-likelihood loss, forward and backward (DTensor
/// `_math_ops.py`: `nll_loss_forward_strategy`, `nll_loss_backward_strategy`).
///
/// `nll_loss_forward(self [N, C] or [C], target [N] or [], weight? [C], reduction, ignore_index)
/// -> (output, total_weight)`: with w_n = weight[target_n] (1 without weights, 0 where target_n ==
/// ignore_index), output = [-w_n self[n, target_n]] (none), their sum (sum), or their sum divided
/// by total_weight = sum_n w_n (mean). The batch dim splits exactly for none and sum (output and
/// total_weight are sums over samples: P(sum)), but not for mean: a rank's mean is its own sum over
/// its own total weight, and the ratio of sums is no Partial of the ranks' ratios whenever the
/// ranks' total weights differ — with class weights, and without them as soon as a target equals
/// ignore_index (DTensor gives `P(avg)` when the batch is evenly split: unsound; counterexample
/// targets [0, -100, 0, 0] on 2 ranks, ignore_index -100: ranks average 1 and 2 samples, the
/// average of their means weighs the lone sample twice).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// aten's `reduction` argument of the loss ops (`at::Reduction`).
enum class LossReduction : std::int64_t { none = 0, mean = 1, sum = 2 };

namespace detail {
[[noreturn]] inline void nll_loss_rank(const char* api, std::size_t rank) {
  throw error(std::string(api) + ": self must be [N, C] or [C], got rank " + std::to_string(rank));
}
}  // namespace detail

/// `nll_loss_forward` on a rank-`self_rank` self (1 or 2). Operands `[output, total_weight, self,
/// target, weight?]`; rows:
/// - batch (2-d self): `[S?(0), R, S?(0), S?(0), R?]` for none (total_weight is 0 there),
///   `[P(sum), P(sum), S?(0), S?(0), R?]` for sum, none for mean (see the file comment);
/// - `[P(r), R, P(r), R, R?]` for r in sum, avg: the loss is linear in self for fixed target and
///   weight, whatever the reduction (total_weight depends on target and weight only).
/// The class dim stays whole (target holds global class numbers). The Partial rows are ctshard's.
/// Throws ctshard::error for a self rank other than 1 or 2.
[[nodiscard]] constexpr RuleSet nll_loss_forward_single_dim_strategy(std::size_t self_rank, bool has_weight, LossReduction reduction) {
  if (self_rank != 1 && self_rank != 2) detail::nll_loss_rank("ctshard::nll_loss_forward_single_dim_strategy", self_rank);
  RuleSet rules(2, has_weight ? 3 : 2);
  const bool batched = self_rank == 2;
  rules.set_rank(0, reduction == LossReduction::none && batched ? 1 : 0);
  rules.set_rank(1, 0);
  rules.set_rank(2, static_cast<int>(self_rank));
  rules.set_rank(3, batched ? 1 : 0);
  if (has_weight) rules.set_rank(4, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  const Placement batch = ShardingPlaceholder(0);
  if (batched && reduction != LossReduction::mean) {
    row[0] = reduction == LossReduction::none ? batch : Partial(ReduceOp::sum);
    row[1] = reduction == LossReduction::none ? Replicate() : Partial(ReduceOp::sum);
    row[2] = row[3] = batch;
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row.assign(row.size(), Replicate());
    row[0] = row[2] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// `nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight) ->
/// grad_input` (self's shape) on a rank-`self_rank` self (1 or 2). Operands `[grad_input,
/// grad_output, self, target, weight?, total_weight]`; rows:
/// - batch (2-d self): `[S?(0), S?(0), S?(0), S?(0), R?, R]` for none; `[S?(0), R, S?(0), S?(0),
///   R?, R]` for mean (the kernel divides by the global total_weight, so per-sample gradients are
///   exact); `[S?(0), R, S?(0), S?(0), R?, P(sum)]` for sum (total_weight is unused there; P(sum) is
///   what the forward's batch row leaves);
/// - `[P(r), P(r), R, R, R?, R]` for r in sum, avg: linear in grad_output;
/// - for none and sum, each row also with total_weight `P(sum)`, `P(avg)`, `P(max)`, `P(min)` or
///   `R` (unused by the kernel: whatever it holds, the result is the same), and the all-Replicate
///   row with total_weight `P(r)` for each r.
/// DTensor follows the input's batch layout likewise (grad_output replicated unless none,
/// total_weight replicated for mean); the Partial rows are ctshard's. Throws ctshard::error for a
/// self rank other than 1 or 2.
[[nodiscard]] constexpr RuleSet nll_loss_backward_single_dim_strategy(std::size_t self_rank, bool has_weight, LossReduction reduction) {
  if (self_rank != 1 && self_rank != 2) detail::nll_loss_rank("ctshard::nll_loss_backward_single_dim_strategy", self_rank);
  const std::size_t num_inputs = has_weight ? 5 : 4;
  RuleSet rules(1, num_inputs);
  const bool batched = self_rank == 2;
  rules.set_rank(0, static_cast<int>(self_rank));
  rules.set_rank(1, reduction == LossReduction::none && batched ? 1 : 0);
  rules.set_rank(2, static_cast<int>(self_rank));
  rules.set_rank(3, batched ? 1 : 0);
  if (has_weight) rules.set_rank(4, 1);
  rules.set_rank(num_inputs, 0);
  std::vector<Placement> row(rules.width(), Replicate());
  const Placement batch = ShardingPlaceholder(0);
  // total_weight is read for mean only: for none and sum each row is listed once more per other
  // placement of it (any value is right, so it stays where it is; DTensor leaves it likewise)
  const auto add_with_unused_total_weight = [&] {
    rules.add(row);
    if (reduction == LossReduction::mean) return;
    const Placement given = row[num_inputs];
    for (const Placement p : {Replicate(), Partial(ReduceOp::sum), Partial(ReduceOp::avg), Partial(ReduceOp::max), Partial(ReduceOp::min)}) {
      if (p == given) continue;
      row[num_inputs] = p;
      rules.add(row);
    }
    row[num_inputs] = given;
  };
  if (batched) {
    row[0] = row[2] = row[3] = batch;
    row[1] = reduction == LossReduction::none ? batch : Replicate();
    row[num_inputs] = reduction == LossReduction::sum ? Partial(ReduceOp::sum) : Replicate();
    add_with_unused_total_weight();
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row.assign(row.size(), Replicate());
    row[0] = row[1] = Partial(r);
    add_with_unused_total_weight();
  }
  if (reduction != LossReduction::mean) {  // the all-Replicate row (the framework's) with total_weight kept
    for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
      row.assign(row.size(), Replicate());
      row[num_inputs] = Partial(r);
      rules.add(row);
    }
  }
  return rules;
}

}  // namespace ctshard
