#pragma once
/// \file solve/candidates.hpp
/// The candidate strategies of one op independent of its producers' choices, for whole-graph
/// planning. DTensor's table depends on the current input specs in three places; here:
/// - placeholders are filled with a fixed set of shard kinds (plain Shard, plus any StridedShard
///   split factors the caller names), never dropped for replicated inputs;
/// - the filters that depend only on specs and metas (mixed Partial kinds, input shardability,
///   the op's full-mesh filter) apply as in StrategyEnumerator;
/// - the uneven-input bypass (an unshardable input target passes when the input already has it,
///   or keeps its existing empty shards) depends on the producer's spec: such rows are kept and
///   flagged per input, and the caller turns the bypass into a condition on the (producer spec,
///   target) pair — a forbidden pair when it fails.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/regroup_on_mesh.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/uneven_inputs.hpp"
#include "ctshard/select/enumerator.hpp"
#include "ctshard/select/filters.hpp"
#include "ctshard/solve/budget.hpp"

namespace ctshard::solve {

/// The candidate rows of one op: `specs[c * width + k]` is operand k's spec (outputs first) in
/// candidate c; `needs_bypass[c]` has bit i set when input i's target is not shardable on its own
/// (then it is valid only through the op's UnevenInputs bypass, which depends on the producer).
struct CandidateSet {
  std::size_t num_outputs = 0, num_inputs = 0;
  std::vector<Spec> specs;
  std::vector<std::uint64_t> needs_bypass;
  std::size_t rows_enumerated = 0;  ///< S^N rows walked before filtering
  /// Of those, the rows left out because some mesh dim takes a single-dim row `keep_single_dim`
  /// refuses (S^N - A^N for A kept of S; their other filters are not looked at).
  std::size_t rows_single_dim_refused = 0;
  std::size_t charged = 0;  ///< bytes charged to the enumeration's MemoryBudget

  [[nodiscard]] std::size_t width() const noexcept { return num_outputs + num_inputs; }
  [[nodiscard]] std::size_t size() const noexcept { return needs_bypass.size(); }
  [[nodiscard]] const Spec& spec(std::size_t c, std::size_t operand) const noexcept { return specs[c * width() + operand]; }
  [[nodiscard]] std::span<const Spec> row(std::size_t c) const noexcept { return {specs.data() + c * width(), width()}; }
};

/// Enumerates every row of `raw_rules` (the op's single-dim strategy, placeholders allowed) on
/// `mesh`, with the all-Replicate row inserted and placeholders filled by `kinds`, in DTensor's
/// order (mesh dim 0 slowest), keeping rows that pass the mixed-Partial filter, the op filter, and
/// input shardability — or, when `uneven` is not `reject`, rows whose unshardable inputs are
/// flagged in `needs_bypass`. Throws ctshard::error when the table exceeds `max_rows` rows, has
/// more than 255 filled rules, or the input count differs from the rules'; memory_limit_reached
/// when the rows kept need more than `budget` allows (each row is charged to it: the caller
/// releases CandidateSet::bytes() when it drops the set); time_limit_reached once `deadline`
/// passes (polled every 4096 rows walked). `keep_single_dim` (when set) is asked once per filled
/// single-dim rule (its placements, one per operand, outputs first): a rule it refuses is used on
/// no mesh dim, so the rows holding it are never walked (the row limit still counts them).
using SingleDimFilter = std::function<bool(std::span<const Placement> cells)>;
[[nodiscard]] inline CandidateSet enumerate_candidates(const RuleSet& raw_rules, const MeshTopology& mesh, std::span<const TensorMeta> inputs,
                                                       const ShardKinds& kinds, UnevenInputs uneven, const FullMeshFilter& filter = {},
                                                       std::size_t max_rows = std::size_t{1} << 20, MemoryBudget* budget = nullptr,
                                                       const Deadline& deadline = {}, const SingleDimFilter& keep_single_dim = {}) {
  if (inputs.size() != raw_rules.num_inputs())
    throw error("ctshard::solve::enumerate_candidates: the op takes " + std::to_string(raw_rules.num_inputs()) + " tensor inputs, got " +
                std::to_string(inputs.size()));
  const RuleSet rules = fill_placeholders(with_replicate_row(raw_rules), kinds, mesh.dim_sizes());
  const std::size_t n = mesh.size(), s = rules.size(), width = rules.width(), nout = rules.num_outputs(), nin = rules.num_inputs();
  if (nin > 64) throw error("ctshard::solve::enumerate_candidates: more than 64 tensor inputs");
  if (s > 255) throw error("ctshard::solve::enumerate_candidates: more than 255 single-dim rules after placeholder filling");
  std::size_t rows = 1;
  for (std::size_t d = 0; d < n && rows <= max_rows; ++d) rows *= s;
  if (rows > max_rows)
    throw error("ctshard::solve::enumerate_candidates: " + std::to_string(s) + "^" + std::to_string(n) + " candidate rows, above the limit of " +
                std::to_string(max_rows));
  CandidateSet out;
  out.num_outputs = nout;
  out.num_inputs = nin;
  out.rows_enumerated = rows;
  std::vector<char> rule_kept(s, 1);
  if (keep_single_dim) {
    std::vector<Placement> cells(width);
    std::size_t kept = 0;
    for (std::size_t r = 0; r < s; ++r) {
      for (std::size_t k = 0; k < width; ++k) cells[k] = rules.cell(r, k);
      rule_kept[r] = keep_single_dim(cells) ? 1 : 0;
      kept += rule_kept[r] != 0 ? 1 : 0;
    }
    std::size_t walked = 1;
    for (std::size_t d = 0; d < n; ++d) walked *= kept;
    out.rows_single_dim_refused = rows - walked;
  }
  // per rule and operand: bit of the Partial reduce op (prefix-or'ed over mesh dims)
  std::vector<unsigned> partial_bits(s * width);
  for (std::size_t r = 0; r < s; ++r)
    for (std::size_t k = 0; k < width; ++k) partial_bits[r * width + k] = partial_bit(rules.cell(r, k));
  std::array<std::size_t, max_mesh_dims> digits{};
  std::vector<unsigned> masks((n + 1) * width, 0);
  std::vector<Spec> row(width, Spec(n));
  std::size_t depth = 0;
  DeadlinePoll poll(deadline, 4096);
  const std::size_t row_bytes = width * sizeof(Spec) + sizeof(std::uint64_t);
  // depth-first over mesh dims; a prefix with mixed Partial kinds prunes its subtree
  while (true) {
    if (depth == n) {
      poll.check("ctshard::solve::enumerate_candidates");
      std::uint64_t bypass = 0;
      bool ok = true;
      for (std::size_t i = 0; i < nin && ok; ++i) {
        if (is_tensor_shardable(inputs[i].shape, row[nout + i], mesh)) continue;
        if (uneven == UnevenInputs::unchecked) continue;
        if (uneven == UnevenInputs::reject) ok = false;
        else bypass |= std::uint64_t{1} << i;
      }
      if (ok && filter) ok = filter(row, inputs, mesh.dim_sizes());
      if (ok) {
        if (budget != nullptr) {
          budget->charge(row_bytes, "the candidate rows of one op");
          out.charged += row_bytes;
        }
        out.specs.insert(out.specs.end(), row.begin(), row.end());
        out.needs_bypass.push_back(bypass);
      }
      if (n == 0) break;
      --depth;
      ++digits[depth];
      continue;
    }
    if (digits[depth] >= s) {
      if (depth == 0) break;
      digits[depth] = 0;
      --depth;
      ++digits[depth];
      continue;
    }
    const std::size_t r = digits[depth];
    if (!rule_kept[r]) {
      ++digits[depth];
      continue;
    }
    bool ok = true;
    for (std::size_t k = 0; k < width; ++k) {
      const unsigned m = masks[depth * width + k] | partial_bits[r * width + k];
      masks[(depth + 1) * width + k] = m;
      ok = ok && (uneven == UnevenInputs::unchecked || partial_kinds_compatible(m));
      row[k][depth] = rules.cell(r, k);
    }
    if (!ok) {
      ++digits[depth];
      continue;
    }
    ++depth;
    if (depth < n) digits[depth] = 0;
  }
  return out;
}

}  // namespace ctshard::solve
