#pragma once
/// \file select/prefix_bounds.hpp
/// Admissible lower bounds of a row's total redistribute cost from a prefix of its rules (mesh
/// dims [0, k) fixed), for the min-cost branch and bound. Per input, by its InputCostForm:
///  - ordered (DTensor, no nested-shard pass): mesh dims change in order 0..N-1, so the step of a
///    fixed dim is exact (its bytes depend only on the prefix), and a free dim's step sees at most
///    the free dims before it sharded;
///  - nested (DTensor's greedy planner with its nested-shard pass): the planner is replayed on the
///    fixed dims with the free dims counted as sharded (fewest bytes, their steps left to the free
///    dims' bound); a free dim's collective happens in the nested pass (dims before it still
///    current) or in the final pass (fixed dims before it at their target), so it sees at least
///    the bytes of the smaller of those two shardings; a current Shard(t) kept on a free dim is
///    all-gathered when a fixed dim already shards t differently in target and current;
///  - consistent: per-dim bounds (DimCosts::flat), additive;
///  - strict (a current StridedShard under DTensor): 0 while the prefix equals the current spec.
/// The free dims are bounded jointly: per mesh dim, the least over rules of the summed input
/// bounds. Every bound is scaled by `slack` so that floating-point rounding never lifts it above
/// a priced total.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ctshard/config.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/cost/redistribute_step.hpp"
#include "ctshard/select/dim_costs.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/nested_gather_bound.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// Prefix bounds of one query (see the file comment): a state per cursor level and input.
class PrefixBounds {
 public:
  /// Relative slack that keeps bounds below priced totals despite rounding.
  static constexpr double slack = 1.0 - 1e-9;

  void bind(const FilledTable& t) {
    const std::size_t n = t.mesh_ndim(), nin = t.num_inputs();
    level_.resize((n + 1) * nin);
    bytes_inputs_.reserve(nin);
    nested_.reserve(nin);
    active_.reserve(nin);
    x_.resize(nin);
    rest_dims_.resize(n * n);
    dp_.bind(t);
  }

  /// Level 0 for `query`; `costs` must have begun for the same query.
  void begin(const FilledTable& t, const SearchQuery& query, const DimCosts& costs) noexcept {
    t_ = &t;
    q_ = &query;
    c_ = &costs;
    const std::size_t n = t.mesh_ndim(), nin = t.num_inputs(), s = t.num_rules();
    bytes_inputs_.clear();
    nested_.clear();
    for (std::size_t i = 0; i < nin; ++i) {
      const InputCostForm& f = costs.form(i);
      if (f.ordered || f.nested) bytes_inputs_.push_back(i);
      if (f.nested) nested_.push_back(i);
      level_[i] = Level{};
    }
    rest_const_[n] = 0;
    for (std::size_t d = n; d-- > 0;) {
      double best = infinite_cost;
      for (std::size_t r = 0; r < s; ++r) best = std::min(best, costs.flat_rule(d, r));
      dim_const_[d] = best;
      rest_const_[d] = rest_const_[d + 1] + best;
    }
    dp_.begin(t, query, costs);
    dp_state_[0] = 0;
  }

  /// Bound (µs, without slack) of every row whose prefix is the level-k prefix plus rule `r` on
  /// mesh dim k, before extending the cursor: `level` = level_bound(k), `rest` = rest_bound(k).
  [[nodiscard]] double quick_bound(std::size_t k, std::size_t r, double level, double rest) const noexcept {
    return level + std::max(c_->flat_rule(k, r) + rest, dp_.through(k, r, dp_state_[k]));
  }

  /// Bound (µs, without slack) of every row below the cursor's level-k + 1 prefix (extended with
  /// rule digits[k]): prefix_bound plus the free dims' bound; `rest` = rest_bound(k).
  [[nodiscard]] double child_bound(std::size_t k, const RowCursor& cursor, double rest) noexcept {
    const double fixed = prefix_bound(k, cursor);
    if (k + 1 == t_->mesh_ndim()) return fixed;
    return fixed + std::max(child_rest(k, rest), dp_.value(k + 1, dp_state_[k + 1]));
  }

  /// The bound of the fixed dims of the level-k prefix (µs, without slack).
  [[nodiscard]] double level_bound(std::size_t k) const noexcept {
    double total = 0;
    for (std::size_t i = 0; i < t_->num_inputs(); ++i) total += level_[k * t_->num_inputs() + i].known;
    return total;
  }

  /// Bound (µs, without slack) of the cost of the fixed mesh dims [0, k + 1) of the row in
  /// `cursor` (extended to level k + 1). Records level k + 1's state.
  [[nodiscard]] double prefix_bound(std::size_t k, const RowCursor& cursor) noexcept {
    const std::size_t nin = t_->num_inputs();
    const std::uint8_t r = cursor.digits()[k];
    const double size = static_cast<double>(t_->mesh().sizes[k]);
    double total = 0;
    dp_state_[k + 1] = dp_state_[k] | dp_.created(k, r);
    for (std::size_t i = 0; i < nin; ++i) {
      const InputCostForm& f = c_->form(i);
      const Level& from = level_[k * nin + i];
      Level& to = level_[(k + 1) * nin + i];
      to = from;
      if (f.all_replicate) continue;
      const Placement& target = t_->input_cell(r, i);
      if (target.is_any_shard()) to.target_shards = from.target_shards * size;
      if (f.strict) {
        to.known = cursor.input(k + 1, i).match ? 0.0 : infinite_cost;
      } else if (f.ordered) {  // mesh dim k's step: dims before at target, after at current
        const double x = 1.0 / (from.target_shards * (k + 1 < t_->mesh_ndim() ? f.current_suffix[k + 1] : 1.0));
        to.known = from.known + c_->fixed(i, k, r) + c_->per_byte(i, k, r) * x;
      } else if (f.nested) {
        const Placement& c = q_->spec(i)[k];
        if (c.is_shard() && !(target.is_shard() && target.dim == c.dim)) to.mismatch |= static_cast<std::uint8_t>(1u << c.dim);
        if (target.is_shard() && !(c.is_shard() && c.dim == target.dim)) to.mismatch |= static_cast<std::uint8_t>(1u << target.dim);
        to.known = cursor.input(k + 1, i).match ? 0.0 : replay(i, k + 1, cursor.digits().data());  // unchanged so far: no step
      } else {                                                                                     // consistent: additive over mesh dims
        to.known = from.known + c_->flat(i, k, r);
      }
      total += to.known;
    }
    return total;
  }

  /// Bound (µs, without slack) of the free mesh dims (k, N) over every completion of the level-k
  /// prefix, whatever rule mesh dim k takes.
  [[nodiscard]] double rest_bound(std::size_t k) noexcept {
    informed_[k] = !bytes_inputs_.empty();
    return informed_[k] ? rest_with(k, k, nullptr) : rest_const_[k + 1];
  }

  /// The rest bound of the child at level k + 1 (after its prefix_bound): `node_rest`
  /// (rest_bound(k)) unless the child's own mismatches force all-gathers on free dims, then the
  /// bound with them (only those dims recomputed).
  [[nodiscard]] double child_rest(std::size_t k, double node_rest) noexcept {
    const std::size_t n = t_->mesh_ndim(), nin = t_->num_inputs();
    std::array<bool, max_mesh_dims> dims{};
    bool more = false;
    for (std::size_t i : nested_) {
      const auto added = static_cast<std::uint8_t>(level_[(k + 1) * nin + i].mismatch & ~level_[k * nin + i].mismatch);
      for (std::size_t d = k + 1; d < n && added != 0; ++d) {
        const Placement& c = q_->spec(i)[d];
        if (c.is_shard() && (added >> c.dim & 1u) != 0) dims[d] = more = true;
      }
    }
    return more ? std::max(node_rest, rest_with(k, k + 1, dims.data())) : node_rest;
  }

 private:
  struct Level {
    double known = 0;           // the fixed mesh dims
    double target_shards = 1;   // product of mesh sizes of target shards on the fixed dims
    std::uint8_t mismatch = 0;  // nested inputs: tensor dims a fixed dim shards in target or current only
  };

  /// Sum over free mesh dims (k, N) of the least over rules of the summed input bounds, the
  /// nested inputs' gathers forced by level `level`'s mismatches; `dims` (null: all): recompute
  /// only the flagged dims, the others as rest_with(k, k) found them.
  [[nodiscard]] double rest_with(std::size_t k, std::size_t level, const bool* dims) noexcept {
    const std::size_t n = t_->mesh_ndim(), nin = t_->num_inputs(), s = t_->num_rules();
    double rest = 0, free_before = 1;  // product of mesh sizes of the free dims in [k, d)
    for (std::size_t d = k + 1; d < n; ++d) {
      free_before *= static_cast<double>(t_->mesh().sizes[d - 1]);
      if (dims != nullptr && !dims[d]) {
        rest += informed_[k] ? rest_dims_[k * n + d] : dim_const_[d];
        continue;
      }
      active_.clear();
      for (std::size_t i : nested_) {
        const Placement& c = q_->spec(i)[d];
        if (c.is_shard() && (level_[level * nin + i].mismatch >> c.dim & 1u) != 0) active_.push_back(i);
      }
      for (std::size_t i : bytes_inputs_) {  // 1 / the most mesh sizes that may shard it during d's collective (nested: in the nested pass)
        const InputCostForm& f = c_->form(i);
        const double fixed_then = level_[k * nin + i].target_shards * free_before;
        x_[i] = 1.0 / (f.nested ? f.all_after[d] * f.current_before[d] : (d + 1 < n ? f.current_suffix[d + 1] : 1.0) * fixed_then);
      }
      double best = infinite_cost;
      for (std::size_t r = 0; r < s; ++r) {
        double sum = c_->plain_rule(d, r);
        for (std::size_t i : bytes_inputs_) sum += c_->bound(i, d, r, x_[i]);
        for (std::size_t i : active_)
          if (c_->keeps(i, d, r)) sum += c_->form(i).forced[d];
        best = std::min(best, sum);
      }
      if (dims == nullptr) rest_dims_[k * n + d] = best;
      rest += best;
    }
    return rest;
  }

  /// Nested input `i` with fixed dims [0, fixed): DTensor's greedy planner replayed on them, the
  /// free dims counted as sharded and their steps left out. Level d's mismatch bits tell whether
  /// the nested pass sends a target Shard(t) on fixed dim d through Replicate.
  [[nodiscard]] double replay(std::size_t i, std::size_t fixed, const std::uint8_t* digits) const noexcept {
    const std::size_t nin = t_->num_inputs();
    const Spec& current = q_->spec(i);
    const InputCostForm& f = c_->form(i);
    std::array<Placement, max_mesh_dims> state{};
    double divisor = f.current_before[fixed] * f.all_after[fixed - 1], cost = 0;  // free dims count as sharded
    for (std::size_t d = fixed; d-- > 0;) {                                       // the nested pass, last fixed dim first (the free dims came before)
      state[d] = current[d];
      const Placement& target = t_->input_cell(digits[d], i);
      const bool through = target.is_shard() && (level_[d * nin + i].mismatch >> target.dim & 1u) != 0;
      const Placement to = through ? Replicate() : target;
      if (state[d] != to) cost += step(i, d, state[d], to, divisor);
    }
    for (std::size_t d = 0; d < fixed; ++d) {
      const Placement& target = t_->input_cell(digits[d], i);
      if (state[d] != target) cost += step(i, d, state[d], target, divisor);
    }
    return cost;
  }

  /// One greedy step on mesh dim d with at least bytes / `divisor` local GB; updates the state.
  double step(std::size_t i, std::size_t d, Placement& from, const Placement& to, double& divisor) const noexcept {
    const MeshTopology& mesh = t_->mesh();
    const double size = static_cast<double>(mesh.sizes[d]), gather = mesh.link.base_latency_us + (size - 1) * mesh.latency_us[d];
    const double bytes = c_->form(i).bytes, coef = c_->coef(d);
    double cost = infinite_cost;
    if (from.is_any_shard() && to.is_replicate()) {
      divisor /= size;
      cost = gather + bytes / divisor * coef;
    } else if (from.is_any_shard() && to.is_any_shard()) {
      cost = gather + mesh.link.shard_to_shard_penalty_us + bytes / divisor * coef;
    } else if (from.is_partial() && to.is_replicate()) {
      cost = mesh.link.base_latency_us + 2 * (size - 1) * mesh.latency_us[d] + 2 * bytes / divisor * coef;
    } else if (from.is_partial() && to.is_any_shard()) {
      cost = gather + bytes / divisor * coef;
      divisor *= size;
    } else if (from.is_replicate()) {
      cost = 0;
      if (to.is_any_shard()) divisor *= size;
    }
    from = to;
    return cost;
  }

  const FilledTable* t_ = nullptr;
  const SearchQuery* q_ = nullptr;
  const DimCosts* c_ = nullptr;
  std::vector<std::size_t> bytes_inputs_, nested_, active_;  // ordered and nested inputs; nested; scratch
  std::vector<double> x_;                                    // per input: scratch of rest_with
  std::vector<Level> level_;                                 // [level * inputs + input]
  std::vector<double> rest_dims_;                            // [level * N + mesh dim]: that dim's bound in rest_with(level, level)
  std::array<double, max_mesh_dims> dim_const_{};            // [d]: mesh dim d's bound without prefix information
  std::array<double, max_mesh_dims + 1> rest_const_{};       // [d]: bound of mesh dims [d, N) without prefix information
  std::array<bool, max_mesh_dims> informed_{};               // per level: rest_bound used rest_with
  std::array<unsigned, max_mesh_dims + 1> dp_state_{};       // per level: NestedGatherBound state
  NestedGatherBound dp_;
};

}  // namespace ctshard
