#pragma once
/// \file registry/dtensor_view_strategy.hpp
/// DTensor 2.13's view propagation (`torch/distributed/tensor/_ops/_view_ops.py`:
/// `propagate_shape_and_sharding`, `_ViewShardingPropagator`), ported for the `dtensor` rules
/// profile: given a view's dim map (DTensor `DimMap`), the global input shape and the input's
/// current spec, the input target spec (shards the view cannot keep replicated) and the output
/// spec, as DTensor's `reshape_strategy` lists them (one strategy per current input). The port is
/// line for line, including DTensor's errors (strict views refuse to redistribute; an expanded
/// sharded size-1 dim raises KeyError) and its answers that the simulated mesh finds wrong
/// (docs/conformance.md, `dtensor_unsound`): the profile is for plans DTensor executes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ctshard/core/placement.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/registry/dtensor_strategies.hpp"
#include "ctshard/rules/view_rules.hpp"

namespace ctshard::dtensor_ops {

/// One output dim of a DTensor `DimMap`: `InputDim(first)`, `Flatten(InputDim(first..last))`,
/// `Split(source, group_shape, split_id)` with source `InputDim(first)` (first == last) or
/// `Flatten(first..last)`, `Broadcast(InputDim(first))`, `NewDim` (broadcast with first -1) or
/// `Singleton`.
struct ViewRuleDim {
  enum class Kind : std::uint8_t { singleton, input, flatten, split, broadcast };
  Kind kind = Kind::singleton;
  int first = -1;                         ///< outermost input dim of the source (-1: none)
  int last = -1;                          ///< innermost input dim of the source
  std::vector<std::int64_t> group_shape;  ///< split: the sizes of the group's pieces of size > 1 (DTensor `Split.new`)
  int split_id = 0;                       ///< split: this piece's index in group_shape
  /// Split of a Flatten (several source dims) rather than of one InputDim.
  [[nodiscard]] bool flattened_source() const noexcept { return kind == Kind::split && first < last; }
};

/// A DTensor `DimMap`: one ViewRuleDim per output dim.
using ViewRule = std::vector<ViewRuleDim>;

/// ctshard's dim map as DTensor's DimMap (the same `view_groups`, `expand`, `dim_transpose`,
/// `dim_squeeze`, `dim_unsqueeze`, permutation): a split's group_shape is the sizes of the output
/// dims of its group that are not 1.
[[nodiscard]] inline ViewRule view_rule_of(const ViewDimMap& map) {
  ViewRule rule(map.rank());
  for (std::size_t o = 0; o < map.rank(); ++o) {
    const ViewDim& d = map[o];
    ViewRuleDim& r = rule[o];
    r.first = d.first;
    r.last = d.last;
    switch (d.kind) {
      case ViewDimKind::singleton: r.kind = ViewRuleDim::Kind::singleton; break;
      case ViewDimKind::broadcast: r.kind = ViewRuleDim::Kind::broadcast; break;
      case ViewDimKind::input: r.kind = ViewRuleDim::Kind::input; break;
      case ViewDimKind::flatten: r.kind = ViewRuleDim::Kind::flatten; break;
      case ViewDimKind::split: {
        r.kind = ViewRuleDim::Kind::split;
        r.split_id = d.split_id;
        for (std::size_t q = 0; q < map.rank(); ++q)
          if (map[q].kind == ViewDimKind::split && map[q].first == d.first && map[q].last == d.last) r.group_shape.push_back(map.output[q]);
        break;
      }
    }
  }
  return rule;
}

/// DTensor `dim_view_as_real(shape)`: the dims of the complex input kept, the last one split into
/// `(shape[-1], 2)` (DTensor builds these Splits directly, keeping a size-1 piece in the group).
[[nodiscard]] inline ViewRule view_as_real_rule(const TensorShape& complex_input) {
  ViewRule rule;
  const int n = static_cast<int>(complex_input.rank);
  for (int i = 0; i + 1 < n; ++i) rule.push_back({ViewRuleDim::Kind::input, i, i, {}, 0});
  if (n == 0) return rule;
  const std::vector<std::int64_t> group{complex_input[static_cast<std::size_t>(n - 1)], 2};
  rule.push_back({ViewRuleDim::Kind::split, n - 1, n - 1, group, 0});
  rule.push_back({ViewRuleDim::Kind::split, n - 1, n - 1, group, 1});
  return rule;
}

/// DTensor `_ViewShardingPropagator` (analyze, then rewrite_output_placements).
class ViewShardingPropagator {
 public:
  ViewShardingPropagator(const Spec& src, const TensorShape& shape, const ViewRule& rule, MeshSizes mesh, bool strict_view)
      : src_(src), shape_(shape), rule_(rule), mesh_(mesh), strict_(strict_view) {}

  /// {input target spec, output spec}. Throws ctshard::error with DTensor's message where DTensor
  /// raises.
  [[nodiscard]] std::pair<Spec, Spec> run() {
    const Spec target = analyze();
    return {target, rewrite(target)};
  }

 private:
  using Claimed = std::set<std::pair<int, int>>;  // (input dim, output dim)

  [[nodiscard]] std::int64_t msize(std::size_t m) const { return mesh_[m]; }

  [[nodiscard]] bool in_rule(int d) const {
    for (const ViewRuleDim& r : rule_) {
      if (r.kind == ViewRuleDim::Kind::singleton || r.first < 0) continue;
      const int last = r.kind == ViewRuleDim::Kind::input || r.kind == ViewRuleDim::Kind::broadcast ? r.first : r.last;
      if (r.first <= d && d <= last) return true;
    }
    return false;
  }

  /// `_find_plain_shard`: the first mesh dim with a plain Shard of `dim`, or -1.
  [[nodiscard]] int find_plain_shard(int dim) const {
    for (std::size_t m = 0; m < src_.size(); ++m)
      if (src_[m].is_shard() && src_[m].dim == dim) return static_cast<int>(m);
    return -1;
  }

  /// `_expected_split_factor`: prod(group_shape[:split_id]) divided by the earlier mesh dims that
  /// shard `dim`; nullopt (-1) when one does not divide it.
  [[nodiscard]] std::int64_t expected_split_factor(const ViewRuleDim& cmd, int dim, std::size_t mesh_dim, const Spec& placements) const {
    std::int64_t sf = 1;
    for (int k = 0; k < cmd.split_id; ++k) sf *= cmd.group_shape[static_cast<std::size_t>(k)];
    for (std::size_t m = 0; m < mesh_dim; ++m) {
      const Placement& o = placements[m];
      if (o.is_any_shard() && o.dim == dim) {
        if (sf % msize(m) != 0) return -1;
        sf /= msize(m);
      }
    }
    return sf;
  }

  /// `_find_shard_for_split`: the mesh dim (or -1) whose shard of `dim` this split piece takes.
  [[nodiscard]] int find_shard_for_split(int dim, const ViewRuleDim& cmd) const {
    for (std::size_t m = 0; m < src_.size(); ++m) {
      const Placement& p = src_[m];
      if (!p.is_any_shard() || p.dim != dim || matched_strided_.count(m) != 0) continue;
      if (p.is_strided_shard()) {
        if (expected_split_factor(cmd, dim, m, src_) == p.split_factor) return static_cast<int>(m);
      } else {
        return static_cast<int>(m);
      }
    }
    return -1;
  }

  std::vector<int> analyze_flatten(int first, int last) {
    std::vector<int> sharded;
    for (int dim = first; dim <= last; ++dim) {
      const int m = find_plain_shard(dim);
      if (m < 0) continue;
      const std::int64_t size = shape_[static_cast<std::size_t>(dim)], n = msize(static_cast<std::size_t>(m));
      bool can_shard = true;
      if (strict_) {
        if (dim != last && size % n != 0)
          raise("Cannot flatten unevenly sharded tensor: dimension " + std::to_string(dim) + " (size " + std::to_string(size) +
                ") is not evenly divisible by mesh dimension " + std::to_string(m) + " (size " + std::to_string(n) +
                "). Please redistribute the tensor before this operation.");
        sharded.push_back(dim);
      } else if (dim == first) {
        sharded.push_back(dim);
        can_shard = size % n == 0;
      } else {
        can_shard = false;
      }
      allowed_[static_cast<std::size_t>(dim)].assign(src_.size(), can_shard);
    }
    if (!sharded.empty()) return sharded;
    return {first};
  }

  std::vector<int> analyze_split(const ViewRuleDim& cmd) {
    const std::vector<int> in_dims = cmd.flattened_source() ? analyze_flatten(cmd.first, cmd.last) : std::vector<int>{cmd.first};
    const int in_dim = in_dims.front();
    if (cmd.flattened_source())
      for (int flat = cmd.first + 1; flat <= cmd.last; ++flat)
        for (std::size_t m = 0; m < src_.size(); ++m)
          if (src_[m].is_shard() && src_[m].dim == flat) {
            allowed_[static_cast<std::size_t>(flat)][m] = false;
            strict_fallback_.insert({flat, static_cast<int>(m)});
          }
    const std::int64_t out_size = cmd.group_shape[static_cast<std::size_t>(cmd.split_id)];
    const int shard_mesh_dim = find_shard_for_split(in_dim, cmd);
    if (cmd.split_id == 0) {
      auto& a = allowed_[static_cast<std::size_t>(in_dim)];
      for (std::size_t m = 0; m < src_.size(); ++m) a[m] = out_size % msize(m) == 0;
      const int plain = find_plain_shard(in_dim);
      if (strict_ && plain >= 0 && !a[static_cast<std::size_t>(plain)])
        raise("Cannot unflatten unevenly sharded tensor: output dimension " + std::to_string(cmd.split_id) + " (size " + std::to_string(out_size) +
              ") is not evenly divisible by mesh dimension " + std::to_string(plain) + " (size " +
              std::to_string(msize(static_cast<std::size_t>(plain))) + "). Please redistribute the tensor before this operation.");
    }
    if (shard_mesh_dim >= 0 && src_[static_cast<std::size_t>(shard_mesh_dim)].is_strided_shard()) {
      const auto m = static_cast<std::size_t>(shard_mesh_dim);
      const bool last_piece = cmd.split_id + 1 == static_cast<int>(cmd.group_shape.size());
      if (strict_ && !last_piece && out_size % msize(m) != 0)
        raise("Cannot unflatten unevenly sharded tensor: output dimension " + std::to_string(cmd.split_id) + " (size " + std::to_string(out_size) +
              ") is not evenly divisible by mesh dimension " + std::to_string(m) + " (size " + std::to_string(msize(m)) +
              "). Please redistribute the tensor before this operation.");
      matched_strided_.insert(m);
      allowed_[static_cast<std::size_t>(in_dim)][m] = out_size % msize(m) == 0 || last_piece;
    }
    if (cmd.split_id == 0) return {in_dim};
    return {};
  }

  std::vector<int> analyze_dim(const ViewRuleDim& cmd) {
    switch (cmd.kind) {
      case ViewRuleDim::Kind::input: return {cmd.first};
      case ViewRuleDim::Kind::flatten: return analyze_flatten(cmd.first, cmd.last);
      case ViewRuleDim::Kind::split: return analyze_split(cmd);
      default: return {};
    }
  }

  Spec analyze() {
    allowed_.assign(shape_.rank, {});
    for (std::size_t d = 0; d < shape_.rank; ++d) allowed_[d].assign(src_.size(), in_rule(static_cast<int>(d)));
    for (std::size_t o = 0; o < rule_.size(); ++o) {
      const ViewRuleDim& cmd = rule_[o];
      const std::vector<int> in_dims = analyze_dim(cmd);
      if (cmd.kind == ViewRuleDim::Kind::flatten) {
        for (int d : in_dims) {
          if (in2out_.count(d) != 0) raise("AssertionError: Input dim " + std::to_string(d) + " already mapped to output dims");
          in2out_[d] = {static_cast<int>(o)};
        }
      } else if (!in_dims.empty()) {
        in2out_[in_dims.front()].push_back(static_cast<int>(o));
      } else if (cmd.kind == ViewRuleDim::Kind::split) {
        if (const auto it = in2out_.find(cmd.first); it != in2out_.end()) it->second.push_back(static_cast<int>(o));
      }
    }
    Spec target;
    for (std::size_t m = 0; m < src_.size(); ++m) {
      const Placement& p = src_[m];
      if (p.is_any_shard() && p.dim >= 0 && static_cast<std::size_t>(p.dim) < allowed_.size() && !allowed_[static_cast<std::size_t>(p.dim)][m]) {
        if (strict_ && strict_fallback_.count({p.dim, static_cast<int>(m)}) == 0)
          raise("This operation would remove or reshape sharded dimension " + std::to_string(p.dim) +
                ", which requires redistribution. Please redistribute the input first.");
        target.push_back(Replicate());
      } else {
        target.push_back(p);
      }
    }
    return target;
  }

  [[nodiscard]] std::vector<int> unclaimed(int dim, const Claimed& claimed) const {
    const auto it = in2out_.find(dim);
    if (it == in2out_.end()) raise("KeyError: " + std::to_string(dim));
    std::vector<int> out;
    for (int d : it->second)
      if (claimed.count({dim, d}) == 0) out.push_back(d);
    return out;
  }

  /// `_is_last_shard_in_flatten_range`.
  [[nodiscard]] static bool last_shard_in_flatten_range(std::size_t mesh_dim, const Spec& placements, int start, int end) {
    const int dim = placements[mesh_dim].dim;
    for (std::size_t m = mesh_dim + 1; m < placements.size(); ++m) {
      const Placement& o = placements[m];
      if (o.is_any_shard() && start <= o.dim && o.dim < end && o.dim >= dim) return false;
    }
    return true;
  }

  Placement rewrite_plain(const Placement& p, std::size_t m, const Spec& placements, const Claimed& claimed, std::vector<std::int64_t>& local) {
    const std::vector<int> dims = unclaimed(p.dim, claimed);
    if (dims.empty()) raise("AssertionError: No output dim available for Shard(dim=" + std::to_string(p.dim) + ")");
    int t = dims.front();
    if (dims.size() > 1) {
      t = -1;
      for (int d : dims)
        if (t < 0 && rule_[static_cast<std::size_t>(d)].kind == ViewRuleDim::Kind::split && rule_[static_cast<std::size_t>(d)].split_id == 0) t = d;
      if (t < 0) raise("AssertionError: No Split(split_id=0) found for Shard(dim=" + std::to_string(p.dim) + ")");
    }
    const ViewRuleDim& cmd = rule_[static_cast<std::size_t>(t)];
    if (cmd.flattened_source() && p.dim != cmd.first)
      raise("AssertionError: Shard(dim=" + std::to_string(p.dim) + ") should have been demoted before the Split(Flatten(...)) rewrite");
    const auto pd = static_cast<std::size_t>(p.dim);
    if (cmd.kind != ViewRuleDim::Kind::flatten) {
      local[pd] /= msize(m);
      return Shard(t);
    }
    Placement out = Shard(t);
    if (p.dim != cmd.first) {
      std::int64_t sf = 1;
      for (int k = cmd.first; k < p.dim; ++k) sf *= local[static_cast<std::size_t>(k)];
      if (sf < 1 || sf > 65535) raise("a _StridedShard split factor of " + std::to_string(sf) + " (ctshard holds 1 to 65535)");
      out = StridedShard(t, static_cast<int>(sf));
    }
    if (local[pd] % msize(m) != 0 && !last_shard_in_flatten_range(m, placements, cmd.first, cmd.last + 1))
      raise("Cannot shard unevenly distributed tensor: dimension " + std::to_string(p.dim) + " (size " + std::to_string(local[pd]) +
            ") is not evenly divisible by mesh dimension " + std::to_string(m) + " (size " + std::to_string(msize(m)) +
            "). Please redistribute the tensor before this operation.");
    local[pd] /= msize(m);
    return out;
  }

  /// `_find_keep_ss_dim`.
  [[nodiscard]] int find_keep_ss_dim(const std::vector<int>& dims, const Placement& p, std::size_t m) const {
    const std::int64_t total = msize(m) * p.split_factor, size = shape_[static_cast<std::size_t>(p.dim)];
    if (total == 0 || size % total != 0) return -1;
    const std::int64_t shard_size = size / total;
    for (int cand : dims) {
      const ViewRuleDim& cmd = rule_[static_cast<std::size_t>(cand)];
      if (cmd.kind != ViewRuleDim::Kind::split) continue;
      std::int64_t inner = 1;
      for (std::size_t k = static_cast<std::size_t>(cmd.split_id) + 1; k < cmd.group_shape.size(); ++k) inner *= cmd.group_shape[k];
      std::int64_t trailing = 1;
      if (cmd.flattened_source()) {
        bool found = false;
        for (int fd = cmd.first; fd <= cmd.last; ++fd) {
          if (fd == p.dim) found = true;
          else if (found) trailing *= shape_[static_cast<std::size_t>(fd)];
        }
      }
      const std::int64_t flattened = shard_size * trailing;
      if (inner != 0 && flattened >= inner && flattened % inner == 0) return cand;
    }
    return -1;
  }

  Placement rewrite_strided(const Placement& p, std::size_t m, const Spec& placements, Claimed& claimed, std::vector<std::int64_t>& local) {
    const std::vector<int> dims = unclaimed(p.dim, claimed);
    const auto pd = static_cast<std::size_t>(p.dim);
    for (int cand : dims) {
      const ViewRuleDim& cmd = rule_[static_cast<std::size_t>(cand)];
      if (cmd.kind != ViewRuleDim::Kind::split) continue;
      if (expected_split_factor(cmd, p.dim, m, placements) != p.split_factor) continue;
      claimed.insert({p.dim, cand});
      local[pd] /= msize(m);
      return Shard(cand);
    }
    int t = find_keep_ss_dim(dims, p, m);
    if (t < 0) {
      bool any_split = false;
      for (int d : dims) any_split = any_split || rule_[static_cast<std::size_t>(d)].kind == ViewRuleDim::Kind::split;
      if (strict_ && any_split)
        raise("Cannot unflatten tensor with _StridedShard placement: split_factor=" + std::to_string(p.split_factor) +
              " does not match any output dimension. Please redistribute the tensor before this operation.");
      if (dims.empty()) raise("AssertionError: No unclaimed output dims for _StridedShard(dim=" + std::to_string(p.dim) + ")");
      t = dims.front();
    }
    local[pd] /= msize(m);
    return StridedShard(t, p.split_factor);
  }

  Spec rewrite(const Spec& target) {
    Claimed claimed;
    std::vector<std::int64_t> local(shape_.dims.begin(), shape_.dims.begin() + static_cast<std::ptrdiff_t>(shape_.rank));
    Spec out;
    for (std::size_t m = 0; m < target.size(); ++m) {
      const Placement& p = target[m];
      if (p.is_shard()) out.push_back(rewrite_plain(p, m, target, claimed, local));
      else if (p.is_strided_shard()) out.push_back(rewrite_strided(p, m, target, claimed, local));
      else out.push_back(p);
    }
    return out;
  }

  const Spec& src_;
  const TensorShape& shape_;
  const ViewRule& rule_;
  MeshSizes mesh_;
  bool strict_;
  std::vector<std::vector<bool>> allowed_;  // [input dim][mesh dim]: may stay sharded (DTensor shard_allowed)
  std::set<std::size_t> matched_strided_;
  std::set<std::pair<int, int>> strict_fallback_;
  std::map<int, std::vector<int>> in2out_;  // input dim -> output dims (DTensor input_to_output_tensor_dims)
};

/// DTensor `reshape_strategy` for one current input (views, reshape, expand, permute, transpose,
/// squeeze, unsqueeze, view_as_real): `propagate_shape_and_sharding` on the view's DimMap — the
/// input target with the shards it cannot keep replicated, and the output spec. `strict_view`:
/// DTensor's flag (view, _unsafe_view, squeeze: true; reshape and the rest: false). {out, in}.
/// Throws ctshard::error with DTensor's message where DTensor raises.
[[nodiscard]] inline MeshStrategy reshape_strategy(const Spec& current, const TensorShape& input, const ViewRule& rule, MeshSizes mesh,
                                                   bool strict_view) {
  ViewShardingPropagator p(current, input, rule, mesh, strict_view);
  auto [target, output] = p.run();
  return {output, target};
}

}  // namespace ctshard::dtensor_ops
