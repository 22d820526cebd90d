#pragma once
/// \file select/nested_gather_bound.hpp
/// A lower bound of the free mesh dims' cost that sees how they interact through DTensor's
/// nested-shard pass: once a mesh dim shards tensor dim t in the target but not in the current
/// spec (or the reverse), every later mesh dim keeping a current `Shard(t)` is all-gathered by the
/// greedy planner (`_gen_transform_infos`: Shard(t) whose earlier mesh dims shard t differently
/// goes through Replicate). So a free dim that looks free on its own (it keeps the current
/// placement) may cost an all-gather because of the rule another free dim takes. Dynamic
/// programming over the free dims, last first, with state = which such tensor dims (of the
/// inputs with the nested pass) are already sharded differently, and per dim the least summed
/// bound over rules (DimCosts::flat, that all-gather where forced), gives the least cost of
/// the free dims for every state: computed once per query, read in O(1) per prefix.

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
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// The dynamic program of the file comment (disabled when no input has the nested pass, or its
/// state would need more than max_bits bits).
class NestedGatherBound {
 public:
  /// States are bit sets of (input, tensor dim) pairs: at most 2^max_bits of them.
  static constexpr std::size_t max_bits = 4;

  void bind(const FilledTable& t) {
    const std::size_t n = t.mesh_ndim(), s = t.num_rules();
    value_.resize((n + 1) << max_bits);
    cost_.resize((n << max_bits) * s);
    created_.resize(n * s);
    keeps_.resize(n * s);
    bit_.resize(t.num_inputs());
    nested_.reserve(t.num_inputs());
  }

  /// Fills the table for `query` (`costs` begun for it).
  void begin(const FilledTable& t, const SearchQuery& query, const DimCosts& costs) noexcept {
    t_ = &t;
    const std::size_t n = t.mesh_ndim(), nin = t.num_inputs(), s = t.num_rules();
    std::size_t bits = 0;
    nested_.clear();
    for (std::size_t i = 0; i < nin; ++i) {
      bit_[i].fill(-1);
      if (!costs.form(i).nested) continue;
      nested_.push_back(i);
      for (std::size_t d = 1; d < n; ++d) {  // a current Shard(t) after mesh dim 0 can be forced
        const Placement& c = query.spec(i)[d];
        if (c.is_shard() && bit_[i][static_cast<std::size_t>(c.dim)] < 0) bit_[i][static_cast<std::size_t>(c.dim)] = static_cast<std::int8_t>(bits++);
      }
    }
    enabled_ = bits > 0 && bits <= max_bits;
    if (!enabled_) return;
    for (std::size_t d = 0; d < n; ++d) {
      forced_[d].fill(0);
      for (std::size_t r = 0; r < s; ++r) {
        unsigned created = 0, keeps = 0;
        for (std::size_t i : nested_) {
          const InputCostForm& f = costs.form(i);
          const Placement& c = query.spec(i)[d];
          const Placement& target = t.input_cell(r, i);
          if (c.is_shard() && !(target.is_shard() && target.dim == c.dim)) created |= bit_mask(i, c.dim);
          if (target.is_shard() && !(c.is_shard() && c.dim == target.dim)) created |= bit_mask(i, target.dim);
          if (c.is_shard() && target == c && bit_mask(i, c.dim) != 0) {  // kept: all-gathered once the bit is set
            keeps |= bit_mask(i, c.dim);
            forced_[d][static_cast<std::size_t>(bit_[i][static_cast<std::size_t>(c.dim)])] = f.forced[d];
          }
        }
        created_[d * s + r] = static_cast<std::uint8_t>(created);
        keeps_[d * s + r] = static_cast<std::uint8_t>(keeps);
      }
    }
    const std::size_t states = std::size_t{1} << bits;
    for (std::size_t m = 0; m < states; ++m) value_[(n << max_bits) + m] = 0;
    for (std::size_t d = n; d-- > 0;)
      for (std::size_t m = 0; m < states; ++m) {
        double best = infinite_cost;
        double* cost = &cost_[((d << max_bits) + m) * s];
        for (std::size_t r = 0; r < s; ++r) {
          double c = costs.flat_rule(d, r);
          for (unsigned forced = static_cast<unsigned>(m) & keeps_[d * s + r], b = 0; forced != 0; forced >>= 1, ++b)
            if ((forced & 1u) != 0) c += forced_[d][b];
          cost[r] = c + value_[((d + 1) << max_bits) + (m | created_[d * s + r])];
          best = std::min(best, cost[r]);
        }
        value_[(d << max_bits) + m] = best;
      }
  }

  /// False: the bound is 0 (nothing to add to the per-dim bounds).
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  /// The state bits rule `r` on mesh dim `d` adds.
  [[nodiscard]] unsigned created(std::size_t d, std::size_t r) const noexcept { return enabled_ ? created_[d * t_->num_rules() + r] : 0u; }
  /// Least cost (µs, without slack) of mesh dims [d, N) entered in `state`.
  [[nodiscard]] double value(std::size_t d, unsigned state) const noexcept { return enabled_ ? value_[(d << max_bits) + state] : 0.0; }
  /// Least cost of rule `r` on mesh dim `d` in `state` plus the dims after it.
  [[nodiscard]] double through(std::size_t d, std::size_t r, unsigned state) const noexcept {
    return enabled_ ? cost_[((d << max_bits) + state) * t_->num_rules() + r] : 0.0;
  }

 private:
  [[nodiscard]] unsigned bit_mask(std::size_t i, int dim) const noexcept {
    const std::int8_t b = bit_[i][static_cast<std::size_t>(dim)];
    return b < 0 ? 0u : 1u << static_cast<unsigned>(b);
  }

  const FilledTable* t_ = nullptr;
  bool enabled_ = false;
  std::vector<std::size_t> nested_;                                   // inputs with the nested pass
  std::vector<double> value_;                                         // [mesh dim << max_bits | state]
  std::vector<double> cost_;                                          // [(mesh dim << max_bits | state) * rules + rule]: through()
  std::vector<std::uint8_t> created_;                                 // [mesh dim * rules + rule]: bits the rule sets
  std::vector<std::uint8_t> keeps_;                                   // [mesh dim * rules + rule]: bits whose current Shard(t) the rule keeps
  std::array<std::array<double, max_bits>, max_mesh_dims> forced_{};  // [mesh dim][bit]: its all-gather bound
  std::vector<std::array<std::int8_t, max_tensor_dims>> bit_;         // [input][tensor dim]: state bit, or -1
};

}  // namespace ctshard
