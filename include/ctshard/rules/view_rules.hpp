#pragma once
/// \file rules/view_rules.hpp
/// View ops as dim maps (DTensor `_view_ops.py`: `DimSpec`, `view_groups`, `expand`,
/// `dim_transpose`, `dim_squeeze`, `dim_unsqueeze`) and the single-dim strategy a dim map implies
/// (DTensor `propagate_shape_and_sharding` on one mesh dim, `propagate_single_dim`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/config.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/regroup_on_mesh.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/shard_regroup.hpp"
#include "ctshard/rules/tensor_dims.hpp"

namespace ctshard {

/// How one output dim of a view comes from the input (the DimSpec kinds view ops produce).
enum class ViewDimKind : std::uint8_t {
  singleton,  ///< a new size-1 dim (DTensor `Singleton`)
  broadcast,  ///< a new or size-1 input dim expanded to a larger size (`Broadcast`, `NewDim`)
  input,      ///< input dim `first` unchanged (`InputDim`)
  flatten,    ///< input dims `first..last` merged, outermost first (`Flatten`)
  split,      ///< piece `split_id` of input dims `first..last` (one dim or a flattened run) (`Split`)
};

/// One output dim of a dim map. `first`/`last` are input dims (inclusive), -1 when unused;
/// `split_id` counts only the pieces of size > 1 (DTensor `Split.new` drops singleton pieces).
struct ViewDim {
  ViewDimKind kind = ViewDimKind::singleton;
  std::int8_t first = -1;    ///< outermost input dim of the source
  std::int8_t last = -1;     ///< innermost input dim of the source (== first unless flattened)
  std::int8_t split_id = 0;  ///< split only: index among the pieces of size > 1
  friend constexpr bool operator==(const ViewDim&, const ViewDim&) = default;
};

/// A view's dim map: one ViewDim per output dim, plus the input and output shapes.
struct ViewDimMap {
  TensorShape input;                            ///< the view's input shape
  TensorShape output;                           ///< the view's output shape (sizes resolved)
  std::array<ViewDim, max_tensor_dims> dims{};  ///< one entry per output dim; the rest singleton
  /// Output rank.
  [[nodiscard]] constexpr std::size_t rank() const noexcept { return output.rank; }
  /// How output dim `out_dim` (< rank()) comes from the input.
  [[nodiscard]] constexpr const ViewDim& operator[](std::size_t out_dim) const noexcept { return dims[out_dim]; }
};

namespace detail {
[[noreturn]] inline void view_error(std::string_view api, const std::string& what) { throw error(std::string(api) + ": " + what); }

constexpr ViewDim view_input_dim(std::size_t i) { return {ViewDimKind::input, static_cast<std::int8_t>(i), static_cast<std::int8_t>(i), 0}; }

/// DTensor `Split.new(Flatten.new(from_dims), to_group, idx)` for a group of consecutive input dims
/// `[from_first, from_last]` (from_first > from_last: no input dim) and output sizes `to_group`.
constexpr ViewDim view_group_dim(int from_first, int from_last, std::span<const std::int64_t> to_group, std::size_t idx) {
  ViewDim source{ViewDimKind::singleton, -1, -1, 0};
  if (from_first == from_last) source = view_input_dim(static_cast<std::size_t>(from_first));
  else if (from_first < from_last) source = {ViewDimKind::flatten, static_cast<std::int8_t>(from_first), static_cast<std::int8_t>(from_last), 0};
  if (to_group.size() == 1) return source;
  if (to_group[idx] == 1) return {};
  if (source.kind == ViewDimKind::singleton) return {};
  std::int8_t id = 0;
  for (std::size_t k = 0; k < idx; ++k) id = static_cast<std::int8_t>(id + (to_group[k] != 1 ? 1 : 0));
  return {ViewDimKind::split, source.first, source.last, id};
}
}  // namespace detail

/// The dim map of `view` / `reshape` from `input` to `target` sizes (one entry may be -1 and is
/// inferred), DTensor `view_groups` + `infer_size`: dims are grouped greedily into runs of equal
/// element count; a run of several input dims to one output dim is a Flatten, one input dim to
/// several output dims a Split, several to several a Split of a Flatten; size-1 dims stand alone.
/// A tensor with no elements maps every output dim to `singleton` (no shard survives).
/// Throws ctshard::error naming `api` when more than one size is -1, a size is < -1, the element
/// counts differ, or the target rank exceeds max_tensor_dims.
[[nodiscard]] constexpr ViewDimMap view_dim_map(const TensorShape& input, std::span<const std::int64_t> target,
                                                std::string_view api = "ctshard::view_dim_map") {
  if (target.size() > max_tensor_dims) detail::view_error(api, "target rank " + std::to_string(target.size()) + " exceeds max_tensor_dims");
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) detail::view_error(api, "only one size may be -1");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      detail::view_error(api, "invalid size " + std::to_string(target[i]));
    } else {
      known = checked_mul(known, target[i], "view: product of the target sizes");
    }
  }
  const std::int64_t numel = input.numel();
  ViewDimMap m;
  m.input = input;
  for (std::size_t i = 0; i < target.size(); ++i) {
    std::int64_t s = target[i];
    if (static_cast<int>(i) == infer) {
      if (known == 0 || numel % known != 0)
        detail::view_error(api, "cannot infer the -1 size: " + std::to_string(numel) + " elements over " + std::to_string(known));
      s = numel / known;
    }
    m.output.push_back(s);
  }
  if (m.output.numel() != numel)
    detail::view_error(api, "shape " + to_string(input) + " (" + std::to_string(numel) + " elements) cannot be viewed as " + to_string(m.output) +
                                " (" + std::to_string(m.output.numel()) + " elements)");
  if (numel == 0) return m;  // all singleton: no shard survives a view of an empty tensor

  const auto& from = input;
  const auto& to = m.output;
  std::size_t fi = 0, ti = 0;
  while (fi < from.rank || ti < to.rank) {
    int from_first = static_cast<int>(fi), from_last = static_cast<int>(fi) - 1;
    const std::size_t to_first = ti;
    std::int64_t f = 1, t = 1;
    if (fi < from.rank) {
      f = from[fi];
      from_last = static_cast<int>(fi++);
    }
    if (ti < to.rank) t = to[ti++];
    if (f == 1 && t != 1) {
      if (to_first < to.rank) --ti;  // a lone size-1 input dim: dropped
      continue;
    }
    if (f != 1 && t == 1) {
      --fi;  // a lone size-1 output dim: singleton
      from_last = from_first - 1;
    } else {
      while (f != t) {
        if (f < t) {
          if (fi >= from.rank) detail::view_error(api, "internal: input dims exhausted");
          f = checked_mul(f, from[fi], "view: product of input sizes");
          from_last = static_cast<int>(fi++);
        } else {
          if (ti >= to.rank) detail::view_error(api, "internal: output dims exhausted");
          t = checked_mul(t, to[ti++], "view: product of output sizes");
        }
      }
    }
    const std::span<const std::int64_t> group(to.dims.data() + to_first, ti - to_first);
    for (std::size_t k = 0; k < group.size(); ++k) m.dims[to_first + k] = detail::view_group_dim(from_first, from_last, group, k);
  }
  return m;
}

/// Dim map of `expand(input, sizes)` (DTensor `expand`): `sizes` has at least input's rank; new
/// leading dims are singleton (size 1) or broadcast; an input dim is kept when the size is -1 or
/// equal, and broadcast when a size-1 input dim grows. Throws ctshard::error naming `api` when the
/// rank shrinks, a new dim is -1, or a non-singleton input dim would change size.
[[nodiscard]] constexpr ViewDimMap expand_dim_map(const TensorShape& input, std::span<const std::int64_t> sizes,
                                                  std::string_view api = "ctshard::expand_dim_map") {
  if (sizes.size() < input.rank || sizes.size() > max_tensor_dims)
    detail::view_error(api, "cannot expand a rank-" + std::to_string(input.rank) + " tensor to " + std::to_string(sizes.size()) + " sizes");
  ViewDimMap m;
  m.input = input;
  const std::size_t pad = sizes.size() - input.rank;
  for (std::size_t o = 0; o < sizes.size(); ++o) {
    const std::int64_t want = sizes[o];
    if (o < pad) {
      if (want < 0) detail::view_error(api, "size " + std::to_string(want) + " for new leading dim " + std::to_string(o));
      m.output.push_back(want);
      m.dims[o] = {want == 1 ? ViewDimKind::singleton : ViewDimKind::broadcast, -1, -1, 0};
      continue;
    }
    const std::size_t i = o - pad;
    const std::int64_t have = input[i];
    if (want == -1 || want == have) {
      m.output.push_back(have);
      m.dims[o] = detail::view_input_dim(i);
    } else if (have == 1 && want >= 0) {
      m.output.push_back(want);
      m.dims[o] = {ViewDimKind::broadcast, static_cast<std::int8_t>(i), static_cast<std::int8_t>(i), 0};
    } else {
      detail::view_error(api, "cannot expand dim " + std::to_string(i) + " of size " + std::to_string(have) + " to " + std::to_string(want));
    }
  }
  return m;
}

/// Dim map of `repeat(input, repeats)` (DTensor `dim_repeat`): `repeats` has at least input's rank;
/// output dim o has size `repeats[o]` for the new leading dims and `input[i] * repeats[o]` for input
/// dim i = o - pad. An input dim repeated once is kept (`input`); a new leading dim is singleton
/// (size 1) or broadcast; a repeated input dim is `broadcast` too — it has no row, so the input dim
/// must be whole, as DTensor's `Repeat` requires (the local repeat of shard k, `[x_k, x_k, ...]`,
/// is no Shard of `[x, x, ...]`). Throws ctshard::error naming `api` when `repeats` is shorter
/// than the rank, a repeat is negative, or an output size passes int64.
[[nodiscard]] constexpr ViewDimMap repeat_dim_map(const TensorShape& input, std::span<const std::int64_t> repeats,
                                                  std::string_view api = "ctshard::repeat_dim_map") {
  if (repeats.size() < input.rank || repeats.size() > max_tensor_dims)
    detail::view_error(api, std::to_string(repeats.size()) + " repeats for a rank-" + std::to_string(input.rank) + " tensor (need at least " +
                                std::to_string(input.rank) + ", at most max_tensor_dims)");
  ViewDimMap m;
  m.input = input;
  const std::size_t pad = repeats.size() - input.rank;
  for (std::size_t o = 0; o < repeats.size(); ++o) {
    const std::int64_t times = repeats[o];
    if (times < 0) detail::view_error(api, "repeat " + std::to_string(times) + " for dim " + std::to_string(o) + " is negative");
    if (o < pad) {
      m.output.push_back(times);
      m.dims[o] = {times == 1 ? ViewDimKind::singleton : ViewDimKind::broadcast, -1, -1, 0};
      continue;
    }
    const std::size_t i = o - pad;
    if (times > 0 && input[i] > std::numeric_limits<std::int64_t>::max() / times)
      detail::view_error(
          api, "dim " + std::to_string(i) + " of size " + std::to_string(input[i]) + " repeated " + std::to_string(times) + " times passes int64");
    m.output.push_back(input[i] * times);
    if (times == 1) m.dims[o] = detail::view_input_dim(i);
    else m.dims[o] = {ViewDimKind::broadcast, static_cast<std::int8_t>(i), static_cast<std::int8_t>(i), 0};
  }
  std::int64_t numel = 1;
  for (std::size_t o = 0; o < m.output.rank; ++o) {
    if (m.output[o] > 0 && numel > std::numeric_limits<std::int64_t>::max() / m.output[o])
      detail::view_error(api, "the output " + to_string(m.output) + " has more than int64 elements");
    numel *= m.output[o];
  }
  return m;
}

/// Dim map of `permute(input, dims)`: output dim o is input dim `dims[o]` (negative dims allowed).
/// Throws ctshard::error naming `api` when `dims` is not a permutation of the input's dims.
[[nodiscard]] constexpr ViewDimMap permute_dim_map(const TensorShape& input, std::span<const std::int64_t> dims,
                                                   std::string_view api = "ctshard::permute_dim_map") {
  if (dims.size() != input.rank)
    detail::view_error(api, "got " + std::to_string(dims.size()) + " dims for a tensor of rank " + std::to_string(input.rank));
  ViewDimMap m;
  m.input = input;
  std::array<bool, max_tensor_dims> used{};
  for (std::size_t o = 0; o < dims.size(); ++o) {
    const std::size_t i = normalize_dim(dims[o], input.rank, api);
    if (used[i]) detail::view_error(api, "dim " + std::to_string(i) + " repeats in the permutation");
    used[i] = true;
    m.output.push_back(input[i]);
    m.dims[o] = detail::view_input_dim(i);
  }
  return m;
}

/// Dim map of `transpose(input, dim0, dim1)` (DTensor `dim_transpose`; `t` is transpose(0, 1) of a
/// 2-D tensor). Throws ctshard::error naming `api` for an out-of-range dim.
[[nodiscard]] constexpr ViewDimMap transpose_dim_map(const TensorShape& input, std::int64_t dim0, std::int64_t dim1,
                                                     std::string_view api = "ctshard::transpose_dim_map") {
  std::array<std::int64_t, max_tensor_dims> order{};
  for (std::size_t i = 0; i < input.rank; ++i) order[i] = static_cast<std::int64_t>(i);
  if (input.rank == 0) {
    (void)normalize_dim(dim0, 0, api);
    (void)normalize_dim(dim1, 0, api);
    return permute_dim_map(input, {}, api);
  }
  const std::size_t a = normalize_dim(dim0, input.rank, api), b = normalize_dim(dim1, input.rank, api);
  order[a] = static_cast<std::int64_t>(b);
  order[b] = static_cast<std::int64_t>(a);
  return permute_dim_map(input, std::span<const std::int64_t>(order.data(), input.rank), api);
}

/// Dim map of `unsqueeze(input, dim)` (DTensor `dim_unsqueeze`): a singleton at `dim` in
/// `[-rank-1, rank]`. Throws ctshard::error naming `api` for an out-of-range dim or a full rank.
[[nodiscard]] constexpr ViewDimMap unsqueeze_dim_map(const TensorShape& input, std::int64_t dim,
                                                     std::string_view api = "ctshard::unsqueeze_dim_map") {
  if (input.rank >= max_tensor_dims) detail::view_error(api, "rank above max_tensor_dims");
  const std::size_t at = normalize_dim(dim, input.rank + 1u, api);
  ViewDimMap m;
  m.input = input;
  for (std::size_t o = 0, i = 0; o <= input.rank; ++o) {
    if (o == at) {
      m.output.push_back(1);
      continue;
    }
    m.output.push_back(input[i]);
    m.dims[o] = detail::view_input_dim(i++);
  }
  return m;
}

/// Which dims `squeeze_dim_map` may remove: the size-1 dims among the listed ones
/// (`squeeze.dim`, `squeeze.dims`), or every size-1 dim (`squeeze.default`).
enum class SqueezeDims : bool { listed, every_singleton };

/// Dim map of `squeeze` (DTensor `dim_squeeze`): removes the size-1 dims among `dims` (negative
/// allowed), or every size-1 dim with `SqueezeDims::every_singleton`; other dims are kept.
/// Throws ctshard::error naming `api` for an out-of-range dim.
[[nodiscard]] constexpr ViewDimMap squeeze_dim_map(const TensorShape& input, std::span<const std::int64_t> dims, SqueezeDims which,
                                                   std::string_view api = "ctshard::squeeze_dim_map") {
  const bool all = which == SqueezeDims::every_singleton;
  std::array<bool, max_tensor_dims> target{};
  for (auto d : dims) target[normalize_dim(d, input.rank, api)] = true;
  ViewDimMap m;
  m.input = input;
  for (std::size_t i = 0; i < input.rank; ++i) {
    if (input[i] == 1 && (all || target[i])) continue;
    m.dims[m.output.rank] = detail::view_input_dim(i);
    m.output.push_back(input[i]);
  }
  return m;
}

/// One regrouping of a view (a flatten, a split, or a split of a flatten): input dims
/// `[input_first, input_last]` hold the same elements as output dims `[output_first, output_last]`.
struct ViewGroup {
  int input_first = 0, input_last = 0;
  int output_first = 0, output_last = 0;
  friend constexpr bool operator==(const ViewGroup&, const ViewGroup&) = default;
};

/// The regroupings of `map` in output order: one per flatten output dim and one per split (its
/// pieces from split_id 0 to the last piece, size-1 pieces between them included). Input dims kept
/// one-to-one belong to none.
[[nodiscard]] constexpr std::vector<ViewGroup> view_groups_of(const ViewDimMap& map) {
  std::vector<ViewGroup> groups;
  for (std::size_t o = 0; o < map.rank(); ++o) {
    const ViewDim& d = map[o];
    if (d.kind == ViewDimKind::flatten) groups.push_back({d.first, d.last, static_cast<int>(o), static_cast<int>(o)});
    if (d.kind != ViewDimKind::split || d.split_id != 0) continue;
    ViewGroup g{d.first, d.last, static_cast<int>(o), static_cast<int>(o)};
    for (std::size_t q = o + 1; q < map.rank(); ++q)
      if (map[q].kind == ViewDimKind::split && map[q].first == d.first && map[q].last == d.last) g.output_last = static_cast<int>(q);
    groups.push_back(g);
  }
  return groups;
}

/// The ShardRegroup of view group `g` (source column 1: the view's input).
[[nodiscard]] constexpr ShardRegroup view_regroup(const ViewDimMap& map, const ViewGroup& g, std::uint8_t source = 1) {
  ShardRegroup r;
  for (int k = g.input_first; k <= g.input_last; ++k) r.input.push_back(map.input[static_cast<std::size_t>(k)]);
  for (int k = g.output_first; k <= g.output_last; ++k) r.output.push_back(map.output[static_cast<std::size_t>(k)]);
  r.input_first = static_cast<std::int8_t>(g.input_first);
  r.output_first = static_cast<std::int8_t>(g.output_first);
  r.source = source;
  return r;
}

/// The single-dim strategy of a view with dim map `map`, one output and one input (DTensor's
/// one-mesh-dim view propagation, `propagate_shape_and_sharding` / `_ViewShardingPropagator`):
/// - per output dim o, in order: `[S?(o), S?(i)]` for an input dim i kept one-to-one (every shard
///   kind passes unchanged), and at the first output dim o of a flatten or split group the
///   regrouped row `[S?(o), S?(first)]` for the group's outermost input dim;
/// - then, group by group, the regrouped rows `[S?(o), S?(j)]` of the group's inner input dims j
///   of size > 1 (after the rows above, so that on equal cost DTensor's tie rules keep preferring
///   a plain Shard output);
/// - then `[P(r), P(r)]` for r = sum, avg, max, min (a view moves elements, so every pending
///   reduction commutes with it).
/// A regrouped row moves the shard to the dim it describes after the view (`regroup_shard`):
/// Shard on the outermost flattened dim stays Shard, Shard on an inner one becomes
/// `StridedShard(o, product of the outer flattened sizes)` (`[a, b]` S(1) flattened is `_S(0, a)`);
/// a split moves `_S(d, sf)` to the piece it describes (`[16, 4]` `_S(0, 2)` viewed as `[2, 8, 4]` is
/// `S(1)`, `_S(0, 4)` is `_S(1, 2)`); a kind no placement expresses emits no row. Singleton and
/// broadcast output dims have no row; a dropped input dim gets none (it must be Replicate).
/// Whether a regrouped shard gives an exact local view, and which placement describes it, depends
/// on the mesh sizes and on the mesh dims before it: given the mesh sizes, the placeholder fill
/// lists a regrouped row once per placement the local sizes can call for
/// (`regroup_shard_alternatives`), and the full-mesh check `view_output_spec` keeps the right one.
[[nodiscard]] constexpr RuleSet view_single_dim_strategy(const ViewDimMap& map) {
  RuleSet rules(1, 1);
  rules.set_rank(0, static_cast<int>(map.output.rank));
  rules.set_rank(1, static_cast<int>(map.input.rank));
  const std::vector<ViewGroup> groups = view_groups_of(map);
  for (std::size_t o = 0; o < map.rank(); ++o) {
    const ViewDim& d = map[o];
    if (d.kind == ViewDimKind::input) rules.add({ShardingPlaceholder(static_cast<int>(o)), ShardingPlaceholder(d.first)});
    for (const ViewGroup& g : groups)
      if (g.output_first == static_cast<int>(o))
        rules.add({ShardingPlaceholder(static_cast<int>(o)), ShardingPlaceholder(g.input_first)}, view_regroup(map, g));
  }
  for (const ViewGroup& g : groups)
    for (int j = g.input_first + 1; j <= g.input_last; ++j)
      if (map.input[static_cast<std::size_t>(j)] > 1) rules.add({ShardingPlaceholder(g.output_first), ShardingPlaceholder(j)}, view_regroup(map, g));
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) rules.add({Partial(r), Partial(r)});
  return rules;
}

/// The output spec a view computes locally from an input placed as `input_spec` (one placement per
/// mesh dim, `mesh_sizes` one size per mesh dim), or nullopt when some mesh dim's shard cannot stay
/// exact through the view. Mesh dims are taken in order on the local sizes left by the earlier
/// ones (DTensor `rewrite_output_placements` with `local_tensor_shapes`): a shard of an input dim
/// kept one-to-one moves to its output dim unchanged; a shard inside a flatten / split group is
/// re-expressed on the group's local sizes (`regroup_mesh_dim`: the same output placement for every
/// rank's local sizes, each an exact local view under torch.chunk's uneven pieces, split factors
/// counted), so `[2, 2, 3]` `S(0)S(1)` viewed as `[4, 3]` on 2x2 is `S(0)S(0)` and `[4, 3]`
/// `S(0)S(0)` viewed as `[2, 2, 3]` is `S(0)S(1)`. Replicate and Partial pass unchanged. nullopt
/// too for a shard of an input dim the view drops, and for a split factor above 65535.
template <class PlacementRange, class Sizes>
[[nodiscard]] constexpr std::optional<Spec> view_output_spec(const ViewDimMap& map, const PlacementRange& input_spec, const Sizes& mesh_sizes) {
  const std::vector<ViewGroup> groups = view_groups_of(map);
  std::vector<std::vector<RegroupLocal>> ranks;  // per group: the distinct local sizes of its runs over the ranks
  ranks.reserve(groups.size());
  for (const ViewGroup& g : groups) {
    const ShardRegroup r = view_regroup(map, g);
    ranks.push_back({RegroupLocal{r.input, r.output}});
  }
  Spec out;
  for (std::size_t m = 0; m < input_spec.size(); ++m) {
    const Placement& p = input_spec[m];
    if (!p.is_any_shard()) {
      out.push_back(p);
      continue;
    }
    int one_to_one = -1;
    for (std::size_t o = 0; o < map.rank(); ++o)
      if (map[o].kind == ViewDimKind::input && map[o].first == p.dim) one_to_one = static_cast<int>(o);
    if (one_to_one >= 0) {
      out.push_back(p.is_strided_shard() ? StridedShard(one_to_one, p.split_factor) : Shard(one_to_one));
      continue;
    }
    std::size_t k = 0;
    while (k < groups.size() && !(groups[k].input_first <= p.dim && p.dim <= groups[k].input_last)) ++k;
    if (k == groups.size()) return std::nullopt;
    const RunShard from{static_cast<std::size_t>(p.dim - groups[k].input_first), p.is_strided_shard() ? p.split_factor : 1};
    const std::optional<RunShard> to = regroup_mesh_dim(ranks[k], from, static_cast<std::int64_t>(mesh_sizes[m]));
    if (!to || to->split_factor > 65535) return std::nullopt;
    const int dim = groups[k].output_first + static_cast<int>(to->dim);
    out.push_back(to->split_factor == 1 ? Shard(dim) : StridedShard(dim, static_cast<int>(to->split_factor)));
  }
  return out;
}

/// True when the local view of an input placed as `input_spec` is exact on a mesh of `mesh_sizes`
/// (`view_output_spec` has a value): every shard kept through a flatten or split cuts both sides of
/// the view into the same torch.chunk pieces on the local sizes the mesh dims before it leave —
/// evenly where it must, counting a StridedShard's split factor, or on the innermost non-trivial
/// dim of both sides (DTensor `propagate_shape_and_sharding` with the real mesh,
/// `reject_redistribution`; `regroup_mesh_dim`). Kept and unsharded dims always pass.
/// `PlacementRange`: anything with `size()` and `operator[]` giving Placement (a Spec).
template <class PlacementRange, class Sizes>
[[nodiscard]] constexpr bool view_shard_is_even(const ViewDimMap& map, const PlacementRange& input_spec, const Sizes& mesh_sizes) {
  return view_output_spec(map, input_spec, mesh_sizes).has_value();
}

}  // namespace ctshard
