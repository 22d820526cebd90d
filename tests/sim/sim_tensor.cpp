// tests/sim/sim_tensor.cpp — cutting and reassembling tensors on a simulated mesh (see sim_tensor.hpp).
#include "sim_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ctshard/error.hpp"

namespace ctshard::sim {

std::size_t Mesh::num_devices() const noexcept {
  std::size_t n = 1;
  for (auto s : sizes) n *= static_cast<std::size_t>(s);
  return n;
}

std::vector<std::size_t> Mesh::coords(std::size_t device) const {
  std::vector<std::size_t> c(ndim());
  for (std::size_t d = ndim(); d-- > 0;) {
    c[d] = device % size(d);
    device /= size(d);
  }
  return c;
}

std::string Mesh::name() const {
  std::string s;
  for (std::size_t d = 0; d < ndim(); ++d) {
    if (d) s += "x";
    s += std::to_string(sizes[d]);
  }
  return s;
}

MeshTopology Mesh::topology() const { return MeshTopology::build(sizes); }

Shape shape_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end()); }

std::string to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) s += "x";
    s += std::to_string(shape[d]);
  }
  return s;
}

TensorShape to_tensor_shape(const Shape& shape) {
  TensorShape s;
  for (auto v : shape) s.push_back(static_cast<std::int64_t>(v));
  return s;
}

Shape from_tensor_shape(const TensorShape& shape) {
  Shape s;
  for (std::size_t d = 0; d < shape.rank; ++d) s.push_back(static_cast<std::size_t>(shape[d]));
  return s;
}

std::pair<std::size_t, std::size_t> chunk_bounds(std::size_t size, std::size_t n, std::size_t i) {
  const std::size_t chunk = (size + n - 1) / n;
  return {std::min(i * chunk, size), std::min((i + 1) * chunk, size)};
}

std::vector<std::pair<std::size_t, std::size_t>> strided_bounds(std::size_t size, std::size_t split_factor, std::size_t n, std::size_t i) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t b = 0; b < split_factor; ++b) {
    const auto [block_begin, block_end] = chunk_bounds(size, split_factor, b);
    const auto [lo, hi] = chunk_bounds(block_end - block_begin, n, i);
    out.emplace_back(block_begin + lo, block_begin + hi);
  }
  return out;
}

Tensor slice_dim(const Tensor& t, std::size_t dim, std::size_t begin, std::size_t end) {
  Shape shape = shape_of(t);
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (std::size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::size_t full = shape[dim] * inner, block = (end - begin) * inner;
  shape[dim] = end - begin;
  Tensor out = Tensor::from_shape(shape);
  for (std::size_t o = 0; o < outer; ++o) std::copy_n(t.data() + o * full + begin * inner, block, out.data() + o * block);
  return out;
}

Tensor concat(const std::vector<Tensor>& parts, std::size_t dim) {
  // Row-major blocks: for every index before `dim`, each part contributes size[dim] * inner values.
  Shape shape = shape_of(parts.at(0));
  if (dim >= shape.size()) throw error("sim: concat: dim " + std::to_string(dim) + " of a " + std::to_string(shape.size()) + "-d tensor");
  shape[dim] = 0;
  for (const auto& p : parts) {
    // every part must match the first one outside `dim` (a mismatched local shard would be read past its end)
    bool fits = p.dimension() == shape.size();
    for (std::size_t d = 0; fits && d < shape.size(); ++d) fits = d == dim || p.shape()[d] == shape[d];
    if (!fits) throw error("sim: concat: parts differ outside dim " + std::to_string(dim));
    shape[dim] += p.shape()[dim];
  }
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (std::size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  Tensor out = Tensor::from_shape(shape);
  double* dst = out.data();
  for (std::size_t o = 0; o < outer; ++o)
    for (const auto& p : parts) {
      const std::size_t block = p.shape()[dim] * inner;
      std::copy_n(p.data() + o * block, block, dst);
      dst += block;
    }
  return out;
}

namespace {

/// Splits one piece over one mesh dim of size n.
std::vector<Tensor> split_one(const Tensor& piece, const Placement& p, std::size_t n, Rng& rng, Domain domain) {
  std::vector<Tensor> parts;
  parts.reserve(n);
  if (p.is_replicate()) {
    for (std::size_t i = 0; i < n; ++i) parts.push_back(piece);
    return parts;
  }
  if (p.is_shard()) {
    const auto dim = static_cast<std::size_t>(p.dim);
    if (dim >= piece.dimension()) throw error("sim::cut: " + to_string(p) + " on a " + std::to_string(piece.dimension()) + "-d tensor");
    for (std::size_t i = 0; i < n; ++i) {
      const auto [b, e] = chunk_bounds(piece.shape()[dim], n, i);
      parts.push_back(slice_dim(piece, dim, b, e));
    }
    return parts;
  }
  if (p.is_strided_shard()) {
    const auto dim = static_cast<std::size_t>(p.dim);
    if (dim >= piece.dimension()) throw error("sim::cut: " + to_string(p) + " on a " + std::to_string(piece.dimension()) + "-d tensor");
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<Tensor> blocks;
      for (const auto& [b, e] : strided_bounds(piece.shape()[dim], p.split_factor, n, i)) blocks.push_back(slice_dim(piece, dim, b, e));
      parts.push_back(concat(blocks, dim));
    }
    return parts;
  }
  if (!p.is_partial()) throw error("sim::cut: placement " + to_string(p) + " is not simulated");
  for (std::size_t i = 0; i < n; ++i) parts.push_back(Tensor::from_shape(piece.shape()));
  // Integer-valued inputs get integer parts (bool max/min parts stay in {0, 1}); real max/min parts
  // spread from just past the value to well past zero, on either side: a P(max) of a positive value
  // may hold negative parts on the ranks that do not hold the maximum (an op defined only for
  // positive values, like log, must not keep P(max)).
  const bool integral = domain == Domain::boolean || domain == Domain::small_int || domain == Domain::index;
  std::uniform_real_distribution<double> u(-2.0, 2.0), spread(0.02, 1.0);
  std::uniform_int_distribution<int> iu(-3, 3), istep(0, domain == Domain::boolean ? 1 : 3);
  std::uniform_int_distribution<std::size_t> who(0, n - 1);
  for (std::size_t e = 0; e < piece.size(); ++e) {
    const double v = piece.data()[e];
    switch (p.reduce_op) {
      case ReduceOp::sum:
      case ReduceOp::avg: {
        double rest = p.reduce_op == ReduceOp::sum ? v : v * static_cast<double>(n);
        for (std::size_t i = 0; i + 1 < n; ++i) {
          const double r = integral ? static_cast<double>(iu(rng)) : u(rng);
          parts[i].data()[e] = r;
          rest -= r;
        }
        parts[n - 1].data()[e] = rest;
        break;
      }
      case ReduceOp::max:
      case ReduceOp::min: {
        const std::size_t holder = who(rng);
        const bool is_max = p.reduce_op == ReduceOp::max;
        for (std::size_t i = 0; i < n; ++i) {
          const double s = spread(rng) * spread(rng);
          double part = is_max ? v - s * 3.0 * (std::abs(v) + 1.0) : v + s * 3.0 * (std::abs(v) + 1.0);
          if (integral) part = is_max ? v - istep(rng) : v + istep(rng);
          if (domain == Domain::boolean) part = std::clamp(part, 0.0, 1.0);
          parts[i].data()[e] = i == holder ? v : part;
        }
        break;
      }
    }
  }
  return parts;
}

}  // namespace

std::vector<Tensor> cut(const Tensor& global, const Spec& spec, const Mesh& mesh, Rng& rng, Domain domain) {
  if (spec.size() != mesh.ndim()) throw error("sim::cut: spec " + to_string(spec) + " does not fit mesh " + mesh.name());
  std::vector<Tensor> pieces{global};
  for (std::size_t d = 0; d < mesh.ndim(); ++d) {
    std::vector<Tensor> next;
    next.reserve(pieces.size() * mesh.size(d));
    for (const auto& piece : pieces)
      for (auto& part : split_one(piece, spec[d], mesh.size(d), rng, domain)) next.push_back(std::move(part));
    pieces = std::move(next);
  }
  return pieces;
}

Shape local_shape(const Shape& global, const Spec& spec, const Mesh& mesh, std::span<const std::size_t> coords) {
  Shape s = global;
  for (std::size_t d = 0; d < mesh.ndim(); ++d) {
    if (!spec[d].is_any_shard()) continue;
    const auto dim = static_cast<std::size_t>(spec[d].dim);
    if (dim >= s.size()) throw error("sim::local_shape: " + to_string(spec) + " shards a dim of a " + std::to_string(s.size()) + "-d tensor");
    if (spec[d].is_strided_shard()) {
      std::size_t local = 0;
      for (const auto& [b, e] : strided_bounds(s[dim], spec[d].split_factor, mesh.size(d), coords[d])) local += e - b;
      s[dim] = local;
      continue;
    }
    const auto [b, e] = chunk_bounds(s[dim], mesh.size(d), coords[d]);
    s[dim] = e - b;
  }
  return s;
}

namespace {

Reassembled fail(std::string why) { return {std::nullopt, std::move(why)}; }

/// The summed size of the local pieces along `dim` into `total`, or why they cannot be
/// concatenated there (": ..." to append to the mesh dim's description).
std::string concat_size(const std::vector<Tensor>& group, std::size_t dim, std::size_t& total) {
  total = 0;
  for (const auto& t : group) {
    if (t.dimension() != group[0].dimension() || dim >= t.dimension()) return ": local outputs have ranks that cannot be concatenated";
    total += t.shape()[dim];
    for (std::size_t k = 0; k < t.dimension(); ++k)
      if (k != dim && t.shape()[k] != group[0].shape()[k]) return ": local outputs differ off the shard dim";
  }
  return {};
}

/// Combines the n local tensors of one group over one mesh dim.
Reassembled combine(const std::vector<Tensor>& group, const Placement& p, std::size_t mesh_dim, double rtol) {
  const std::string where = "mesh dim " + std::to_string(mesh_dim) + " (" + to_string(p) + ")";
  if (p.is_strided_shard()) {
    // Every local piece is the concatenation over the split_factor blocks of its chunk of each block.
    const auto dim = static_cast<std::size_t>(p.dim);
    std::size_t total = 0;
    if (std::string why = concat_size(group, dim, total); !why.empty()) return fail(where + why);
    std::vector<std::vector<Tensor>> blocks(p.split_factor);  // [block][rank]
    for (std::size_t i = 0; i < group.size(); ++i) {
      std::size_t at = 0;
      const auto bounds = strided_bounds(total, p.split_factor, group.size(), i);
      std::size_t expected = 0;
      for (const auto& [b, e] : bounds) expected += e - b;
      if (group[i].shape()[dim] != expected)
        return fail(where + ": local size " + std::to_string(group[i].shape()[dim]) + " on rank " + std::to_string(i) +
                    " is not the strided chunk size " + std::to_string(expected) + " of " + std::to_string(total));
      for (std::size_t b = 0; b < bounds.size(); ++b) {
        const std::size_t len = bounds[b].second - bounds[b].first;
        blocks[b].push_back(slice_dim(group[i], dim, at, at + len));
        at += len;
      }
    }
    std::vector<Tensor> ordered;
    for (auto& per_rank : blocks)
      for (auto& t : per_rank) ordered.push_back(std::move(t));
    return {concat(ordered, dim), {}};
  }
  if (p.is_shard()) {
    const auto dim = static_cast<std::size_t>(p.dim);
    std::size_t total = 0;
    if (std::string why = concat_size(group, dim, total); !why.empty()) return fail(where + why);
    for (std::size_t i = 0; i < group.size(); ++i) {
      const auto [b, e] = chunk_bounds(total, group.size(), i);
      if (group[i].shape()[dim] != e - b)
        return fail(where + ": local size " + std::to_string(group[i].shape()[dim]) + " on rank " + std::to_string(i) +
                    " is not the torch.chunk size " + std::to_string(e - b) + " of " + std::to_string(total));
    }
    return {concat(group, dim), {}};
  }
  for (const auto& t : group)
    if (t.shape() != group[0].shape())
      return fail(where + ": local outputs have different shapes " + to_string(shape_of(group[0])) + " and " + to_string(shape_of(t)));
  if (p.is_replicate()) {
    for (std::size_t i = 1; i < group.size(); ++i) {
      std::string why;
      if (!allclose(group[0], group[i], rtol, &why)) return fail(where + ": replicas 0 and " + std::to_string(i) + " differ: " + why);
    }
    return {group[0], {}};
  }
  if (!p.is_partial()) return fail(where + ": placement not simulated");
  Tensor acc = group[0];
  for (std::size_t i = 1; i < group.size(); ++i) {
    switch (p.reduce_op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc = acc + group[i]; break;
      case ReduceOp::max: acc = xt::maximum(acc, group[i]); break;
      case ReduceOp::min: acc = xt::minimum(acc, group[i]); break;
    }
  }
  if (p.reduce_op == ReduceOp::avg) acc = acc / static_cast<double>(group.size());
  return {std::move(acc), {}};
}

}  // namespace

Reassembled reassemble(std::vector<Tensor> locals, const Spec& spec, const Mesh& mesh, double rtol) {
  if (spec.size() != mesh.ndim() || locals.size() != mesh.num_devices()) return fail("spec/mesh/local count mismatch");
  for (std::size_t d = mesh.ndim(); d-- > 0;) {
    const std::size_t n = mesh.size(d);
    std::vector<Tensor> next;
    next.reserve(locals.size() / n);
    for (std::size_t g = 0; g < locals.size(); g += n) {
      std::vector<Tensor> group(std::make_move_iterator(locals.begin() + static_cast<std::ptrdiff_t>(g)),
                                std::make_move_iterator(locals.begin() + static_cast<std::ptrdiff_t>(g + n)));
      Reassembled r = combine(group, spec[d], d, rtol);
      if (!r.value) return r;
      next.push_back(std::move(*r.value));
    }
    locals = std::move(next);
  }
  return {std::move(locals[0]), {}};
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, std::string* why) {
  if (a.shape() != b.shape()) {
    if (why) *why = "shapes " + to_string(shape_of(a)) + " and " + to_string(shape_of(b));
    return false;
  }
  for (std::size_t e = 0; e < a.size(); ++e) {
    const double x = a.data()[e], y = b.data()[e];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + 1e-12) continue;
    if (why) {
      std::ostringstream os;
      os.precision(10);
      os << "element " << e << " (flat): " << x << " vs " << y;
      *why = os.str();
    }
    return false;
  }
  return true;
}

std::string format_values(const Tensor& t, std::size_t max_elems) {
  std::ostringstream os;
  os.precision(6);
  if (t.dimension() == 0) {
    os << t.data()[0];
    return os.str();
  }
  // Row-major walk printing brackets at dim boundaries.
  const Shape shape = shape_of(t);
  std::vector<std::size_t> idx(shape.size(), 0);
  if (t.size() == 0) return std::string(shape.size(), '[') + std::string(shape.size(), ']');
  std::size_t printed = 0;
  for (std::size_t e = 0; e < t.size(); ++e) {
    std::size_t opened = 0;
    for (std::size_t d = shape.size(); d-- > 0 && idx[d] == 0;) ++opened;
    if (e) os << ", ";
    os << std::string(opened, '[');
    if (printed++ >= max_elems) {
      os << "...";
      return os.str();
    }
    os << t.data()[e];
    std::size_t closed = 0;
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      ++closed;
    }
    os << std::string(closed, ']');
  }
  return os.str();
}

}  // namespace ctshard::sim
