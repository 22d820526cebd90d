#pragma once
/// \file select/dim_costs.hpp
/// What one mesh dim's placement change costs an input, known before pricing any row: which
/// target placements are free, and lower bounds of the collective a change needs.
///
/// Zero cost. With collectives of positive cost (`LinkModel::base_latency_us > 0`), a
/// redistribution current → target costs exactly 0 when:
///  - `CostModel::dtensor`: the current spec is all-Replicate; or no StridedShard is involved
///    (other than target == current) and on every mesh dim the target equals the current placement
///    or the current one is Replicate — except that, when the greedy planner's nested-shard pass
///    runs (N > 1 and more than one shard), a Replicate mesh dim may not take `Shard(t)` while a
///    later mesh dim keeps a current `Shard(t)` (the planner would send that later dim through
///    Replicate: `S(0)S(0)` from `RS(0)` all-gathers mesh dim 1);
///  - `CostModel::consistent`: on every mesh dim the target equals the current placement, or the
///    current one is Replicate, or the mesh dim has size 1.
/// Both are per mesh dim given the current spec, so the zero-cost rows are a product of per-dim
/// rule sets (`free_rule`; tests/unit/test_search.cpp checks the claim against redistribute_cost).
///
/// Lower bounds. A mesh dim whose placement changes away from a non-Replicate one needs at least
/// one collective on that dim (DTensor: Shard → Partial and Partial → other Partial are +inf),
/// and a collective moves at least the local bytes it sees: the tensor's bytes over the product
/// of the mesh sizes that shard it at that moment — at most all of them, and not the collective's
/// own dim unless that dim is sharded during it (an all-to-all).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ctshard/config.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/cost/redistribute_step.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// How an input's redistribute cost is bounded (fixed by its current spec and the cost model).
struct InputCostForm {
  double bytes = 0;                                        ///< global bytes / 1024³ (DTensor's GB units)
  bool all_replicate = false;                              ///< every target is free
  bool strict = false;                                     ///< DTensor, a current StridedShard: 0 for target == current, else +inf
  bool nested = false;                                     ///< DTensor with the nested-shard pass (N > 1, more than one shard)
  bool ordered = false;                                    ///< DTensor without it: mesh dims change in order 0..N-1
  std::array<double, max_mesh_dims> current_suffix{};      ///< product of mesh sizes of current shards on [d, N)
  std::array<std::uint8_t, max_mesh_dims> later_shards{};  ///< tensor dims with a current Shard after mesh dim d
  std::array<double, max_mesh_dims> forced{};              ///< nested: the all-gather of mesh dim d keeping its current Shard(t)
                                                           ///< that the nested pass must send through Replicate
  std::array<double, max_mesh_dims + 1> current_before{};  ///< product of mesh sizes of current shards on [0, d)
  std::array<double, max_mesh_dims> all_after{};           ///< product of mesh sizes on (d, N)
};

/// Per (input, mesh dim, target placement) costs of one query on one table; sized by `bind`,
/// filled by `begin` without allocating.
class DimCosts {
 public:
  void bind(const FilledTable& t) {
    const std::size_t nin = t.num_inputs(), n = t.mesh_ndim();
    max_col_ = 1;
    for (std::size_t i = 0; i < nin; ++i) max_col_ = std::max<std::size_t>(max_col_, t.distinct(t.num_outputs() + i));
    rep_.assign(nin * max_col_, 0);
    for (std::size_t i = 0; i < nin; ++i)
      for (std::size_t r = t.num_rules(); r-- > 0;) rep_[i * max_col_ + t.column_id(r, t.num_outputs() + i)] = static_cast<std::uint8_t>(r);
    const std::size_t cells = nin * n * max_col_;
    fixed_.resize(cells);
    per_byte_.resize(cells);
    alt_fixed_.resize(cells);
    alt_per_byte_.resize(cells);
    flat_.resize(cells);
    free_.resize(cells);
    forms_.resize(nin);
    free_rule_.resize(n * t.num_rules());
    flat_rule_.resize(n * t.num_rules());
    plain_rule_.resize(n * t.num_rules());
    keeps_.resize(nin * n * t.num_rules());
  }

  /// Fills the tables for `query` on `t` (bound by `bind(t)`). Throws ctshard::error when an
  /// input's element count overflows int64 (TensorMeta::bytes).
  void begin(const FilledTable& t, const SearchQuery& query) {
    t_ = &t;
    q_ = &query;
    const MeshTopology& mesh = t.mesh();
    const std::size_t n = mesh.size(), nin = t.num_inputs(), s = t.num_rules();
    consistent_ = mesh.cost_model == CostModel::consistent;
    strided_ = !consistent_ && t.has_strided_cells();
    double all = 1;
    for (std::size_t d = 0; d < n; ++d) {
      const double size = static_cast<double>(mesh.sizes[d]);
      all *= size;
      coef_[d] = (size - 1) / size / mesh.bandwidth_gbps[d] * 1e6;
    }
    for (std::size_t i = 0; i < nin; ++i) {
      const Spec& c = query.spec(i);
      InputCostForm& f = forms_[i];
      f.bytes = query.meta(i).bytes() / 1024.0 / 1024.0 / 1024.0;
      f.all_replicate = c.is_replicated();
      f.strict = false;
      for (const Placement& p : c) f.strict = f.strict || p.is_strided_shard();
      f.strict = f.strict && !consistent_ && !f.all_replicate;
      strided_ = strided_ || f.strict;
      f.nested = !consistent_ && !f.all_replicate && !f.strict && n > 1 && num_shards(c, mesh.sizes) > 1;
      f.ordered = !consistent_ && !f.all_replicate && !f.strict && !f.nested;
      double suffix = 1;
      for (std::size_t d = n; d-- > 0;) {
        if (c[d].is_any_shard()) suffix *= static_cast<double>(mesh.sizes[d]);
        f.current_suffix[d] = suffix;
        f.later_shards[d] = 0;
        for (std::size_t e = d + 1; e < n; ++e)
          if (c[e].is_shard()) f.later_shards[d] |= static_cast<std::uint8_t>(1u << c[e].dim);
      }
      double before = 1, after = all;
      for (std::size_t d = 0; d < n; ++d) {
        after /= static_cast<double>(mesh.sizes[d]);
        f.current_before[d] = before;
        f.all_after[d] = after;
        if (c[d].is_any_shard()) before *= static_cast<double>(mesh.sizes[d]);
        f.forced[d] = mesh.link.base_latency_us + static_cast<double>(mesh.sizes[d] - 1) * mesh.latency_us[d] +
                      f.bytes * coef_[d] / (f.current_before[d] * f.all_after[d]);  // in the nested pass
        for (std::uint32_t col = 0; col < t.distinct(t.num_outputs() + i); ++col)
          fill_cell(cell(i, d, col), f, c[d], t.input_cell(rep_[i * max_col_ + col], i), d, all);
      }
      f.current_before[n] = before;
    }
    for (std::size_t d = 0; d < n; ++d)
      for (std::size_t r = 0; r < s; ++r) {
        bool free = true;
        double flat = 0, plain = 0;
        for (std::size_t i = 0; i < nin; ++i) {
          const std::size_t k = cell(i, d, col(r, i));
          const InputCostForm& f = forms_[i];
          free = free && free_[k] != 0;
          flat += flat_[k];
          if (!f.ordered && !f.nested) plain += flat_[k];
          const Placement& c = query.spec(i)[d];
          keeps_[(i * n + d) * s + r] = f.nested && c.is_shard() && t.input_cell(r, i) == c ? 1 : 0;
        }
        free_rule_[d * s + r] = free ? 1 : 0;
        flat_rule_[d * s + r] = flat;
        plain_rule_[d * s + r] = plain;
      }
  }

  /// True when the zero-cost characterisation above is exact for this mesh (positive collectives).
  /// Not under the DTensor model with a StridedShard in play (a current spec or a filled cell): its
  /// greedy steps (e.g. Replicate -> StridedShard, a local chunk, free after a gather elsewhere)
  /// are not separable per mesh dim; those cells bound 0 and the branch and bound decides.
  [[nodiscard]] bool zero_cost_is_per_dim() const noexcept { return t_->mesh().link.base_latency_us > 0 && !strided_; }
  /// Rule `r` on mesh dim `d` costs nothing for every input (given the current specs).
  [[nodiscard]] bool free_rule(std::size_t d, std::size_t r) const noexcept { return free_rule_[d * t_->num_rules() + r] != 0; }
  /// Sum over inputs of the least cost of rule `r` on mesh dim `d` (DimCosts::flat); plain: over
  /// the inputs neither ordered nor nested only.
  [[nodiscard]] double flat_rule(std::size_t d, std::size_t r) const noexcept { return flat_rule_[d * t_->num_rules() + r]; }
  [[nodiscard]] double plain_rule(std::size_t d, std::size_t r) const noexcept { return plain_rule_[d * t_->num_rules() + r]; }
  /// Input `i` has the nested pass and rule `r` keeps its current Shard on mesh dim `d`.
  [[nodiscard]] bool keeps(std::size_t i, std::size_t d, std::size_t r) const noexcept {
    return keeps_[(i * t_->mesh_ndim() + d) * t_->num_rules() + r] != 0;
  }
  /// Input `i`'s bound form.
  [[nodiscard]] const InputCostForm& form(std::size_t i) const noexcept { return forms_[i]; }
  /// For input `i` taking rule `r`'s placement on mesh dim `d`: the least cost with no knowledge
  /// of the other dims (`flat`), and for DTensor inputs the bound of that dim's collective as
  /// min(fixed + per_byte · x, alt_fixed + alt_per_byte · x), where x is 1 / the product of the
  /// sizes of the other mesh dims that shard the input during it (the all-to-all's own dim is
  /// folded into per_byte; alt: through Replicate, nested pass only).
  [[nodiscard]] double flat(std::size_t i, std::size_t d, std::size_t r) const noexcept { return flat_[cell(i, d, col(r, i))]; }
  [[nodiscard]] double bound(std::size_t i, std::size_t d, std::size_t r, double x) const noexcept {
    const std::size_t k = cell(i, d, col(r, i));
    return std::min(fixed_[k] + per_byte_[k] * x, alt_fixed_[k] + alt_per_byte_[k] * x);
  }
  [[nodiscard]] double fixed(std::size_t i, std::size_t d, std::size_t r) const noexcept { return fixed_[cell(i, d, col(r, i))]; }
  [[nodiscard]] double per_byte(std::size_t i, std::size_t d, std::size_t r) const noexcept { return per_byte_[cell(i, d, col(r, i))]; }
  /// µs per GB moved by an all-gather's bytes term on mesh dim d ((n − 1) / n / bandwidth).
  [[nodiscard]] double coef(std::size_t d) const noexcept { return coef_[d]; }

 private:
  [[nodiscard]] std::size_t col(std::size_t r, std::size_t i) const noexcept { return t_->column_id(r, t_->num_outputs() + i); }
  [[nodiscard]] std::size_t cell(std::size_t i, std::size_t d, std::size_t c) const noexcept { return (i * t_->mesh_ndim() + d) * max_col_ + c; }

  void fill_cell(std::size_t k, const InputCostForm& f, const Placement& from, const Placement& to, std::size_t d, double all) noexcept {
    const MeshTopology& mesh = t_->mesh();
    const double size = static_cast<double>(mesh.sizes[d]), hops = size - 1, base = mesh.link.base_latency_us;
    const double gather = base + hops * mesh.latency_us[d], reduce = base + 2 * hops * mesh.latency_us[d];
    const double b = f.bytes * coef_[d];
    fixed_[k] = per_byte_[k] = flat_[k] = alt_per_byte_[k] = 0;
    alt_fixed_[k] = infinite_cost;
    free_[k] = 1;
    if (f.all_replicate || from == to) return;
    if (consistent_) {
      if (mesh.sizes[d] == 1 || from.is_replicate()) return;
      free_[k] = 0;
      flat_[k] = gather + (from.is_any_shard() && to.is_any_shard() ? b / all : b * size / all);
      return;
    }
    if (f.strict || to.is_strided_shard()) {  // DTensor: a StridedShard involved and the specs differ:
      free_[k] = 0;                           // not separable per mesh dim, so the bound is 0
      return;
    }
    if (from.is_replicate()) {
      if (f.nested && to.is_shard() && (f.later_shards[d] >> to.dim & 1u) != 0) free_[k] = 0;  // the nested pass gathers later
      return;
    }
    free_[k] = 0;
    if (to.is_partial()) {  // Shard -> Partial, Partial -> other Partial
      fixed_[k] = flat_[k] = infinite_cost;
      // NOLINTNEXTLINE(bugprone-branch-clone): DTensor prices this all-gather as the reduce-scatter of the last branch
    } else if (from.is_any_shard() && to.is_replicate()) {  // all-gather of the grown bytes
      fixed_[k] = gather;
      per_byte_[k] = b;
    } else if (from.is_any_shard()) {  // all-to-all (+ penalty) while d is sharded, or through Replicate in the nested pass
      fixed_[k] = gather + mesh.link.shard_to_shard_penalty_us;
      per_byte_[k] = b / size;
      if (f.nested) {
        alt_fixed_[k] = gather;
        alt_per_byte_[k] = b;
      }
    } else if (to.is_replicate()) {  // Partial -> Replicate: all-reduce
      fixed_[k] = reduce;
      per_byte_[k] = 2 * b;
    } else {  // Partial -> Shard: reduce-scatter (an all-reduce in the nested pass)
      fixed_[k] = gather;
      per_byte_[k] = b;
    }
    if (std::isfinite(fixed_[k])) {
      // nested: the collective happens in the nested pass, mesh dims before d still current;
      // otherwise the weakest, every other mesh dim sharding the input
      const double x = f.nested ? 1.0 / (f.current_before[d] * f.all_after[d]) : size / all;
      flat_[k] = std::min(fixed_[k] + per_byte_[k] * x, alt_fixed_[k] + alt_per_byte_[k] * x);
    }
  }

  const FilledTable* t_ = nullptr;
  const SearchQuery* q_ = nullptr;
  bool consistent_ = false;
  bool strided_ = false;  // DTensor model with a StridedShard in the query or the table
  std::size_t max_col_ = 1;
  std::array<double, max_mesh_dims> coef_{};
  std::vector<std::uint8_t> rep_;                                           // [input * max_col + column id]: a rule with that placement
  std::vector<double> fixed_, per_byte_, alt_fixed_, alt_per_byte_, flat_;  // [(input * N + mesh dim) * max_col + column id]
  std::vector<std::uint8_t> free_;
  std::vector<InputCostForm> forms_;
  std::vector<std::uint8_t> free_rule_;         // [mesh dim * rules + rule]
  std::vector<double> flat_rule_, plain_rule_;  // [mesh dim * rules + rule]
  std::vector<std::uint8_t> keeps_;             // [(input * N + mesh dim) * rules + rule]
};

}  // namespace ctshard
