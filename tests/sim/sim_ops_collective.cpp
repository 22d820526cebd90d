// tests/sim/sim_ops_collective.cpp — reference collectives over the g ranks of a program-level
// process group (docs/semantics.md "Collectives in graphs"): each takes one ArgPack per program
// rank and returns every rank's outputs, exactly as the collective does to the tensors it is
// handed (a rank's global tensors, or the pieces one mesh device holds of them).
#include <algorithm>
#include <string>

#include <xtensor/xmath.hpp>

#include "ctshard/error.hpp"
#include "sim_ops.hpp"

namespace ctshard::sim {
namespace {

using Outs = std::vector<std::vector<Tensor>>;  // [rank][output]
using Packs = std::vector<ArgPack>;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

/// Elementwise `op` over the ranks' tensors ("sum", "avg" / "mean", "max", "min", "product").
Tensor reduce_ranks(const std::vector<Tensor>& xs, const std::string& op_name) {
  const std::string op = lower(op_name);
  for (const auto& x : xs) require_shape(x, shape_of(xs.at(0)), "collective: rank input");
  Tensor acc = xs.at(0);
  for (std::size_t r = 1; r < xs.size(); ++r) {
    if (op == "sum" || op == "avg" || op == "mean") acc = acc + xs[r];
    else if (op == "max") acc = xt::maximum(acc, xs[r]);
    else if (op == "min") acc = xt::minimum(acc, xs[r]);
    else if (op == "product") acc = acc * xs[r];
    else throw error("sim: collective: unknown reduce op '" + op_name + "'");
  }
  if (op == "avg" || op == "mean") acc = acc / static_cast<double>(xs.size());
  return acc;
}

/// Chunk r of g equal chunks of `t` on `dim` (the collective's own split: throws unless g divides it).
Tensor equal_chunk(const Tensor& t, std::size_t dim, std::size_t g, std::size_t r) {
  const Shape s = shape_of(t);
  if (dim >= s.size()) throw error("sim: collective: dim " + std::to_string(dim) + " of a " + std::to_string(s.size()) + "-d tensor");
  if (s[dim] % g != 0)
    throw error("sim: collective: size " + std::to_string(s[dim]) + " on dim " + std::to_string(dim) + " is not divisible by " + std::to_string(g));
  const std::size_t c = s[dim] / g;
  return slice_dim(t, dim, r * c, (r + 1) * c);
}

std::size_t dim_arg(const ArgPack& p, std::size_t pos, std::size_t rank) { return wrap_dim(p.integer(pos, 0), rank); }

/// The ranks' tensor `i` (a tensor argument, or item `item` of a tensor list at `i`).
std::vector<Tensor> per_rank(const Packs& packs, std::size_t i) {
  std::vector<Tensor> xs;
  for (const auto& p : packs) xs.push_back(p.tensor(i));
  return xs;
}

/// Checks that the group size argument at `pos` names the number of ranks simulated.
void check_group(const Packs& packs, std::size_t pos) {
  const auto g = packs.at(0).integer(pos, static_cast<std::int64_t>(packs.size()));
  if (g != static_cast<std::int64_t>(packs.size()))
    throw error("sim: collective: group size argument " + std::to_string(g) + " for " + std::to_string(packs.size()) + " simulated ranks");
}

Outs all_reduce(const Packs& packs, const std::string& op) {
  const Tensor v = reduce_ranks(per_rank(packs, 0), op);
  return Outs(packs.size(), std::vector<Tensor>{v});
}

Outs all_gather(const Packs& packs, std::size_t dim_pos, std::size_t group_pos, bool dim0) {
  const auto xs = per_rank(packs, 0);
  if (!dim0) check_group(packs, group_pos);
  const std::size_t dim = dim0 ? 0 : dim_arg(packs[0], dim_pos, xs[0].dimension());
  const Tensor v = concat(xs, dim);
  return Outs(packs.size(), std::vector<Tensor>{v});
}

Outs reduce_scatter(const Packs& packs, const std::string& op, std::size_t dim) {
  const Tensor v = reduce_ranks(per_rank(packs, 0), op);
  Outs out;
  for (std::size_t r = 0; r < packs.size(); ++r) out.push_back({equal_chunk(v, dim, packs.size(), r)});
  return out;
}

/// out_r = cat over r' of chunk_r(x_r', split) on `concat_dim`; `splits` the sizes each rank sends
/// (empty: equal chunks).
Outs all_to_all(const Packs& packs, std::size_t split, std::size_t concat_dim, const std::vector<std::int64_t>& splits) {
  const auto xs = per_rank(packs, 0);
  const std::size_t g = packs.size();
  Outs out(g);
  for (std::size_t r = 0; r < g; ++r) {
    std::vector<Tensor> parts;
    for (std::size_t q = 0; q < g; ++q) {
      if (splits.empty()) {
        parts.push_back(equal_chunk(xs[q], split, g, r));
      } else {
        std::size_t begin = 0;
        for (std::size_t k = 0; k < r; ++k) begin += static_cast<std::size_t>(splits[k]);
        parts.push_back(slice_dim(xs[q], split, begin, begin + static_cast<std::size_t>(splits[r])));
      }
    }
    out[r] = {concat(parts, concat_dim)};
  }
  return out;
}

/// Equal splits (None, empty or all-equal split sizes) chunk the rank's local tensor; unequal ones
/// are taken literally (only rows that keep dim 0 whole exist for them).
std::vector<std::int64_t> literal_splits(const ArgPack& p, std::size_t pos) {
  const std::vector<std::int64_t> s = p.ints(pos);
  if (std::all_of(s.begin(), s.end(), [&](std::int64_t v) { return v == s.front(); })) return {};
  return s;
}

/// A coalesced collective: `one` applied to each tensor of the list at argument 0.
template <class One>
Outs coalesced(const Packs& packs, One one) {
  const std::size_t n = packs.at(0).tensor_list(0).size();
  Outs out(packs.size());
  for (std::size_t i = 0; i < n; ++i) {
    Packs single;
    for (const auto& p : packs) {
      ArgPack q{{p.tensor_list(0).at(i)}, p.args, p.kwargs};
      q.args[0] = OpArg{OpArg::Kind::tensor, 0, 0, {}, {}, {}};
      single.push_back(std::move(q));
    }
    const Outs o = one(single);
    for (std::size_t r = 0; r < packs.size(); ++r) out[r].push_back(o[r].at(0));
  }
  return out;
}

}  // namespace

void detail::add_collective_ops(GroupRefTable& t) {
  for (const std::string ns : {"_c10d_functional.", "_c10d_functional_autograd.", "c10d_functional."}) {
    t[ns + "all_reduce.default"] = {[](const Packs& p) { return all_reduce(p, p.at(0).text(1, "sum")); }};
    t[ns + "wait_tensor.default"] = {[](const Packs& p) {
      Outs out;
      for (const auto& pack : p) out.push_back({pack.tensor(0)});
      return out;
    }};
    t[ns + "reduce_scatter_tensor.default"] = {[](const Packs& p) { return reduce_scatter(p, p.at(0).text(1, "sum"), 0); }};
    t[ns + "all_gather_into_tensor.default"] = {[](const Packs& p) { return all_gather(p, 0, 0, true); }};
    t[ns + "all_to_all_single.default"] = {[](const Packs& p) { return all_to_all(p, 0, 0, literal_splits(p.at(0), 2)); }};
  }
  for (const std::string cns : {"_c10d_functional.", "c10d_functional."}) {
    t[cns + "all_reduce_coalesced.default"] = {
        [](const Packs& p) { return coalesced(p, [](const Packs& q) { return all_reduce(q, q.at(0).text(1, "sum")); }); }};
    t[cns + "all_gather_into_tensor_coalesced.default"] = {
        [](const Packs& p) { return coalesced(p, [](const Packs& q) { return all_gather(q, 0, 0, true); }); }};
    t[cns + "reduce_scatter_tensor_coalesced.default"] = {
        [](const Packs& p) { return coalesced(p, [](const Packs& q) { return reduce_scatter(q, q.at(0).text(1, "sum"), 0); }); }};
  }
  const std::string ns = "_c10d_functional.";
  t[ns + "all_reduce_.default"] = t[ns + "all_reduce.default"];
  t[ns + "all_reduce_coalesced_.default"] = t[ns + "all_reduce_coalesced.default"];
  t["c10d_functional.all_reduce_coalesced_.default"] = t["c10d_functional.all_reduce_coalesced.default"];
  t[ns + "all_gather_into_tensor_out.default"] = t[ns + "all_gather_into_tensor.default"];
  t[ns + "reduce_scatter_tensor_out.default"] = t[ns + "reduce_scatter_tensor.default"];
  const auto broadcast = [](const Packs& p) {
    const auto src = static_cast<std::size_t>(p.at(0).integer(1, 0));
    if (src >= p.size()) throw error("sim: broadcast: source rank " + std::to_string(src) + " of " + std::to_string(p.size()));
    return Outs(p.size(), std::vector<Tensor>{p[src].tensor(0)});
  };
  t[ns + "broadcast.default"] = {broadcast};
  t[ns + "broadcast_.default"] = {broadcast};
  t["c10d_functional.broadcast.default"] = {broadcast};
  t["vllm.all_reduce.default"] = {[](const Packs& p) { return all_reduce(p, "sum"); }};
  t["vllm.all_gather.default"] = {[](const Packs& p) { return all_gather(p, 1, 2, false); }};
  t["vllm.reduce_scatter.default"] = {[](const Packs& p) {
    check_group(p, 2);
    return reduce_scatter(p, "sum", dim_arg(p.at(0), 1, p.at(0).tensor(0).dimension()));
  }};
  t["_dtensor.shard_dim_alltoall.default"] = {[](const Packs& p) {
    const std::size_t rank = p.at(0).tensor(0).dimension();
    return all_to_all(p, dim_arg(p[0], 2, rank), dim_arg(p[0], 1, rank), {});
  }};
}

}  // namespace ctshard::sim
